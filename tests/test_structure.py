"""The shape the code keeps (docs/architecture.md): small modules, short command bodies, each
flag declared in one place, families' options and seats in their records, and the team layer
where every family reaches it."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from coordbench.runner.family import families

PKG = Path(__file__).resolve().parents[1] / "src" / "coordbench"
COMMANDS = sorted((PKG / "commands").glob("*.py")) + [PKG / "cli.py"]
MAX_MODULE_LINES = 800
MAX_COMMAND_FUNCTION_LINES = 80


def _flag_declarations(paths: list[Path] | None = None) -> Counter:
    """Return how many `typer.Option(...)` calls in commands/ and cli.py declare each flag
    (a flag named after its parameter counts under `--param-name`; one taken from a
    family's Option record is that record's)."""
    count: Counter = Counter()
    for path in paths or COMMANDS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named: dict[int, str] = {}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
                for a, d in zip(args, fn.args.defaults, strict=True):
                    named[id(d)] = "--" + a.arg.replace("_", "-")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Option":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant)
                         and isinstance(a.value, str) and a.value.startswith("-")]
                if not flags and len(node.args) > 1:
                    continue  # the flag is an Option record's (`OPTION.cli`): declared there
                flag = flags[0].split("/")[0] if flags else named.get(id(node))
                if flag is not None:
                    count[flag] += 1
    return count


def test_no_module_is_longer_than_800_lines():
    long = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_command_function_is_longer_than_80_lines():
    long = []
    for path in COMMANDS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if node.end_lineno - start + 1 > MAX_COMMAND_FUNCTION_LINES:
                    long.append(f"{path.name}:{node.name}")
    assert not long, long


def test_each_flag_is_declared_in_one_place():
    count = _flag_declarations()
    for flag in ("--partner", "--seat", "--port", "--page-timeout", "--decision-timeout"):
        assert count[flag] == 1, (flag, count[flag])
    assert not {f: n for f, n in count.items() if n > 1}
    # what a family plays is declared in its record, never again in its commands (its other
    # commands and `coordbench run` take such a flag from the record)
    for f in families():
        played = f.get("options")
        if played is None or f.command is None:
            continue
        names = [o.cli for o in played.options]
        assert len(names) == len(set(names)), f.name
        own = _flag_declarations([PKG / "commands" / f"{f.command}.py", PKG / "cli.py"])
        for flag in names:
            if flag == "--seed":
                continue  # a training command's seed is not what a family plays
            assert own[flag] == 0, (f.name, flag)


def test_every_family_with_a_suite_has_options_seats_and_a_summary():
    for f in families():
        if f.suite is None:
            continue
        played, seats = f.get("options"), f.get("seats")
        assert played is not None and seats is not None and f.get("summary") is not None
        assert seats.kinds and set(seats.partner_kinds) <= set(seats.kinds)
        assert played.options and played.run_name in ("run", "eval")


def test_protocols_live_in_the_team_layer():
    offenders = []
    for path in PKG.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "agents.household.protocols" in text or "household.protocols import" in text:
            offenders.append(str(path.relative_to(PKG)))
    assert not offenders, offenders
    assert (PKG / "agents" / "team" / "protocols.py").is_file()


def test_the_api_checks_options_through_the_familys_record(tmp_path):
    import pytest

    import coordbench
    from coordbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--episodes must be >= 1"):
        coordbench.evaluate("stat", config="3A-6T-5x3", policy="greedy", episodes=0,
                            out=tmp_path / "a")
    with pytest.raises(ConfigError, match="--construct must be one of D1, D2, D3, D4"):
        coordbench.evaluate("constructs", construct="D9", out=tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
