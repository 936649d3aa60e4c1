"""The `coordbench` command line: options -> specs -> the one runner -> the one report.

Each family's commands live in `coordbench.commands.<family>`; this module holds the app, the
default benchmark (`run`), `report`, `schema` and `version`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer
from rich.markup import escape

from coordbench.commands import attribute, crossplay, models, reproduce, tables, view
from coordbench.commands import play as play_commands
from coordbench.commands.common import (
    err,
    executor_option,
    out,
    out_option,
    play_plan,
    seed_option,
    workers_option,
)
from coordbench.core.provenance import VERSION as __version__
from coordbench.errors import ConfigError, CoordbenchError
from coordbench.suites.stat.options import EPISODES, LAYOUTS


def _version(value: bool) -> None:
    if value:
        out.print(__version__)
        raise typer.Exit()


def _after_command(*_: object, **__: object) -> None:
    """Once a command has written what it finished: if provider failures errored episodes,
    say so in one line and exit non-zero (those episodes are not results)."""
    from coordbench.commands.common import PENDING_FAILURES

    if PENDING_FAILURES:
        lines = list(PENDING_FAILURES)
        PENDING_FAILURES.clear()
        for line in lines:
            err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
        raise typer.Exit(3)


app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  result_callback=_after_command,
                  help="coordbench: measure how teams of agents coordinate.")


@app.callback()
def _root(version_flag: bool = typer.Option(False, "--version", callback=_version,
                                            is_eager=True, help="Print the version and exit.")
          ) -> None:
    """coordbench: measure how teams of agents coordinate."""
    from coordbench.commands.common import PENDING_FAILURES

    PENDING_FAILURES.clear()  # a command of an earlier invocation in this process


_GROUPS: set[str] = set()


def add_family_commands() -> None:
    """Serve each registered family's command group as `coordbench <command>`, and its run,
    crossplay and play commands made from its options (once each)."""
    from coordbench.commands.family_commands import add_family_commands as add_generated
    from coordbench.runner.family import families

    for f in families():
        if f.commands is not None and f.command and f.command not in _GROUPS:
            _GROUPS.add(f.command)
            app.add_typer(f.get("commands"), name=f.command)
        if f.options is not None and f"options:{f.name}" not in _GROUPS:
            _GROUPS.add(f"options:{f.name}")
            add_generated(f, crossplay.app, play_commands.app)


try:
    add_family_commands()
except CoordbenchError:
    pass  # a broken plugin: main() adds the groups again and prints its one line
app.add_typer(models.app, name="models")
app.add_typer(crossplay.app, name="crossplay")
app.add_typer(play_commands.app, name="play")
app.command("view")(view.view)
app.command("export")(tables.export)
app.command("table")(tables.table)
app.command("profile")(tables.profile)
app.command("attribute")(attribute.attribute)
app.command("reproduce")(reproduce.reproduce)


@app.command()
def run(
    out_dir: Path | None = out_option(None, "Run directory (default: runs/default, or "
                            "runs/default-<options> "
                            "when the options change what is played, so other plans never "
                            "share a folder)."),
    configs: str | None = typer.Option(None, help="STAT: comma-separated configurations "
                                       "(default: 3A-6T-5x3,5A-25T-50x30,9A-25T-50x30)."),
    policies: str | None = typer.Option(None, help="STAT: comma-separated scripted policies "
                                        "(default: random,greedy,matching,hungarian)."),
    episodes: int | None = typer.Option(None, EPISODES.cli, help="STAT: episodes per condition "
                                        "(default 100 = the paper layouts)."),
    layouts: str | None = typer.Option(None, LAYOUTS.cli, help="STAT: paper | uniform "
                                       "(default paper)."),
    seed: int | None = seed_option("STAT: policy seed (and layout seed for uniform layouts; "
                                   "default 0).", None),
    household: bool = typer.Option(True, help="Also run rule-based household teams (v1) and "
                                              "construct planners (rep240)."),
    physical: int | None = typer.Option(None, help="Physical suite: expert and noisy-expert "
                                                   "rollouts per task (default 10; 0 skips)."),
    cases: int | None = typer.Option(None, min=1, help="Household and construct cases per "
                                                       "condition, a stratified sample as "
                                                       "--limit draws (default: all; a "
                                                       "quick look)."),
    only: str | None = typer.Option(None, "--families", help="Comma-separated families of "
                                    "the default benchmark to run (default: all of them)."),
    executor: str = executor_option(),
    workers: int = workers_option(),
) -> None:
    """Run the default benchmark and save its report (results.json, report.md, report.html).

    STAT: the scripted allocators on three configurations over the paper's layouts.
    MECoBench household teams (v1, 192 cases): rule-based teams without communication and
    with broadcast, parallel (team of 3) and sequential (team of 2). Coordination constructs
    (rep240): rule-based central, decentralized and communicating planners. Physical
    collaboration: the scripted experts, nominal and noisy, on all ten tasks. The plan is
    each family's `default_plan` in coordbench/runner/family.py; the options override it.
    """
    from coordbench.core.files import check_out_dir, check_range
    from coordbench.core.limits import MAX_SEED, MAX_WORKERS
    from coordbench.suites.plan import expand, load_plan

    EPISODES.check(episodes)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--physical", physical, 0, 1_000_000)
    check_range("--workers", workers, 1, MAX_WORKERS)
    if out_dir is None:
        out_dir = default_run_dir(configs=configs, policies=policies, episodes=episodes,
                                  layouts=layouts, seed=seed, household=household,
                                  physical=physical, cases=cases, families=only)
    check_out_dir(out_dir)
    plan = _overridden(load_plan(), {"configs": configs, "policies": policies,
                                     "episodes": episodes, "layouts": layouts, "seed": seed},
                       household, physical, cases, only)
    items, labels = expand(plan)
    if not items:
        raise ConfigError("these options leave nothing to run (e.g. --families mecobench "
                          "with --no-household)")
    existed = (out_dir / "manifest.json").is_file()
    started = time.time()
    run_obj = play_plan(out_dir, items, labels=labels, executor=executor, workers=workers,
                   report=False)
    if existed and not _written_since(out_dir, started):
        err.print(f"note: every episode of this plan was already in {out_dir}: nothing new "
                  "was played (the tables are the saved ones; --out DIR for a fresh run)",
                  highlight=False, soft_wrap=True)
    _report(run_obj)


def _overridden(plan: dict, stat: dict, household: bool, physical: int | None,
                cases: int | None, only: str | None) -> dict:
    """Return the default benchmark's plan with `coordbench run`'s options applied."""
    st = plan["stat"]
    for key in ("configs", "policies"):
        if stat[key] is not None:
            st[key] = [v.strip() for v in stat[key].split(",") if v.strip()]
            if not st[key]:
                raise ConfigError(f"--{key} names nothing: give a comma-separated list")
    for key in ("episodes", "layouts", "seed"):
        if stat[key] is not None:
            st[key] = stat[key]
    if not household:
        plan["mecobench"] = plan["constructs"] = None
    if physical is not None:
        plan["physical"]["rollouts"] = physical
    if cases is not None:
        for family in ("mecobench", "constructs"):
            if plan.get(family):
                plan[family]["limit"] = cases
    if only is not None:
        chosen = [v.strip() for v in only.split(",") if v.strip()]
        unknown = [v for v in chosen if v not in plan]
        if not chosen or unknown:
            raise ConfigError(f"--families: unknown family {', '.join(unknown) or repr(only)}; "
                              f"choose from {', '.join(plan)}")
        plan = {name: section for name, section in plan.items() if name in chosen}
    return plan


def default_run_dir(**options: object) -> Path:
    """Return `coordbench run`'s folder for these options: runs/default for the default
    plan, else runs/default-<the options that change it> (a quick look never lands in, or
    reports, the full run's folder)."""
    import hashlib
    import re

    parts, exact = [], True
    for name, value in options.items():
        if value is None or (name == "household" and value is True):
            continue
        raw = str(value)
        text = re.sub(r"[^A-Za-z0-9.\-]+", "+", raw).strip("+")
        exact = exact and text == raw.replace(",", "+")
        parts.append(f"{name}{text}" if value is not False else f"no-{name}")
    name = "default" + "".join(f"-{p}" for p in parts)
    if not exact or len(name) > 100:  # two plans must never share a folder
        digest = hashlib.sha256(repr(sorted(options.items())).encode()).hexdigest()[:8]
        name = f"{name[:100]}-{digest}"
    return Path("runs") / name


def _written_since(path: Path, since: float) -> bool:
    """Return whether any episode file of the run at `path` (a result, or an errored
    attempt) was written at or after `since` (a time.time())."""
    for folder in ("episodes", "errors"):
        root = Path(path) / folder
        if root.is_dir() and any(f.stat().st_mtime >= since for f in root.rglob("*.jsonl")):
            return True
    return False


def _report(run_obj, html: bool = True) -> None:
    """Compose the run's report, write it, print its tables."""
    from coordbench.report.compose import compose, write

    rep = compose(run_obj)
    write(run_obj, rep, html=html)
    for table in rep.tables:
        out.print(table)
    name = "report.html" if html else "report.md"
    out.print(f"run directory: {run_obj.path}  (report: {run_obj.path / name})")


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A run or training directory."),
           html: bool = typer.Option(False, "--html", help="Also write report.html: every "
                                     "table plus plots, one self-contained file.")) -> None:
    """Recompute every table of a run from its saved trajectories (or training results);
    rewrite its results.json and report.md, and report.html with --html or when the run has
    one (a report.html older than its report.md would disagree with it)."""
    from coordbench.report.compose import open_for_report

    run_obj = open_for_report(run_dir)
    _report(run_obj, html=html or (run_obj.path / "report.html").is_file())


@app.command()
def schema(out_file: Path | None = out_option(None, "Write to this file.")
           ) -> None:
    """Print (or write) the JSON Schema of trajectory files."""
    from coordbench.core.atomic import write_atomic
    from coordbench.core.trajectory import json_schema_text

    text = json_schema_text()
    if out_file is None:
        sys.stdout.write(text + "\n")
    else:
        write_atomic(out_file, text + "\n")


@app.command()
def version() -> None:
    """Print the coordbench version."""
    out.print(__version__)


def main() -> None:
    """Entry point of the `coordbench` script: user errors become one line and exit code 2."""
    try:
        add_family_commands()  # families an entry point or a plugin registered since import
        app()
    except CoordbenchError as e:
        # the message is text, not markup: `pip install 'coordbench[learn]'` keeps its extra
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except OSError as e:  # a path that cannot be read or written: name it, no traceback
        where = f" {e.filename}" if e.filename else ""
        err.print(f"[bold red]error:[/] {escape(f'cannot use{where}: {e.strerror or e}')}",
                  highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted; finished episodes are saved, rerun the command to resume")
        sys.exit(130)


if __name__ == "__main__":
    main()
