"""`coordbench crossplay FAMILY --partner NAME=SPEC ...`: partners that have never met.

Each family's subcommand takes its run command's options (what is played) and the partners
(who plays); every ordered pair of partners is one condition of an ordinary run directory
(`crossplay/matrix.py`). A cell whose seats all hold the same partner is that partner's
self-play: the very condition the family's run command plays for it, so its trajectories are
the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from coordbench.agents.team.seats import model_aliases
from coordbench.errors import ConfigError
from coordbench.runner.options import for_command

from .common import emit_json, errored_json, metric_option, out
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="Cross-play: every ordered pair of partners "
                                             "over a team's seats.")

PARTNER_HELP = ("NAME=SPEC, repeated: a seat spec as in --team (scripted:greedy, rule, "
                "rule:reverse, llm:ALIAS, learned:CHECKPOINT, expert; physical: expert, "
                "scripted:expert_noisy, learned:CHECKPOINT, llm:ALIAS).")
MAX_PARTNERS = 12


MAX_PARTNER_NAME = 32
PARTNER_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_PARTNER_NAME - 1}}}")


def parse_partners(items: list[str] | None, allowed: tuple[str, ...], family: str
                   ) -> list[tuple[str, Any]]:
    """Return [(name, Seat)] of `--partner NAME=SPEC` items (two to MAX_PARTNERS; a name is
    1-32 letters, digits, _ . -, starting with a letter or digit, unique whatever its case);
    ConfigError (one line) names a malformed item, a repeated name, a spec this family's
    seats do not take, or a matrix of one partner."""
    from coordbench.agents.team.seats import parse_seat

    if not items:
        raise ConfigError("give at least two --partner NAME=SPEC")
    if len(items) > MAX_PARTNERS:
        raise ConfigError(f"--partner: at most {MAX_PARTNERS} partners ({len(items)} given)")
    partners: list[tuple[str, Any]] = []
    for item in items:
        name, sep, spec = str(item).partition("=")
        name = name.strip()
        if not sep or not name or not spec.strip():
            raise ConfigError(f"--partner {str(item)[:80]!r}: write NAME=SPEC, e.g. "
                              "greedy=scripted:greedy")
        if not PARTNER_NAME.fullmatch(name):
            raise ConfigError(f"--partner {name[:40]!r}: a name is 1 to {MAX_PARTNER_NAME} "
                              "letters, digits, _ . and -, starting with a letter or digit")
        if any(name.casefold() == n.casefold() for n, _ in partners):
            raise ConfigError(f"--partner names {name!r} twice (names differ by more than "
                              "their case)")
        seat = parse_seat(spec, allowed, family, f"--partner {name}={spec.strip()[:80]}")
        if seat.kind == "human":
            raise ConfigError(f"--partner {name}: a person plays through `coordbench play`, "
                              "not in a crossplay matrix")
        same = next((n for n, s in partners if s == seat), None)
        if same is not None:
            raise ConfigError(f"--partner {name} is {seat.driver}, as {same} is: the same "
                              "partner twice would count self-play as cross-play")
        partners.append((name, seat))
    if len(partners) < 2:
        raise ConfigError("a cross-play matrix needs two partners at least: give --partner "
                          "twice (one partner's team is its own run command's condition)")
    return partners


def play_matrix(family: str, partners: list[tuple[str, Any]], seats: int, metric: str,
                cell: Callable[[tuple[Any, ...]], tuple[Any, Any]], out_dir: Path,
                opts: RunOptions, settings: Any = None, resources: Any = None,
                limit: int | None = None) -> None:
    """Play every cell (`cell(seats) -> (suite, spec)`, the first `limit` cases each) into
    the run at `out_dir`, write its design, and print the matrix (or --json). Every cell is
    built before anything is written: a bad partner, or a team no family plays, is one line
    before any work."""
    from coordbench.crossplay.matrix import Crossplay, matrix, save

    from .common import run_dir

    grid = [[cell((a,) + (b,) * (seats - 1)) for _, b in partners] for _, a in partners]
    first_suite, first_spec = grid[0][0]
    keys = [c.key for c in first_suite.cases(first_spec, limit)]
    design = Crossplay(family, [(n, s.driver) for n, s in partners], metric, seats,
                       [[suite.condition(spec) for suite, spec in row] for row in grid],
                       len(keys), keys)
    names = [n for n, _ in partners]
    plan: dict[str, tuple[Any, Any, int | None]] = {}
    labels: dict[str, str] = {}
    for a, row in zip(names, grid, strict=True):
        for b, (suite, spec) in zip(names, row, strict=True):
            name = suite.condition(spec)
            plan.setdefault(name, (suite, spec, limit))
            labels.setdefault(name, f"{a} + {b}")
    save(run_dir(out_dir), design)
    run = opts.play_plan(out_dir, list(plan.values()), settings=settings, resources=resources,
                    labels=list(labels.values()))
    m = matrix(run, design)
    from coordbench.report.crossplay_report import console_tables, matrix_json

    if opts.as_json:  # the contract's {"mean", "ci95", "n"} estimates (emit_json)
        emit_json({**matrix_json(m), "run": str(run.path), **errored_json(run, list(plan))})
        return

    for table in console_tables(m):
        out.print(table)
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


def crossplay_command(family: Any) -> Callable[..., Any]:
    """Return `coordbench crossplay <family>`: the family's options for what is played, the
    partners and the matrix's metric."""
    from .option_params import opts_param, out_param, param, with_options, without

    played = family.get("options")
    seats = family.get("seats")

    def body(values: dict[str, Any], partner: list[str] | None, metric: str | None,
             out_dir: Path | None, opts: RunOptions) -> None:
        from .option_params import check_metric

        opts.check(out_dir)
        partners = parse_partners(partner, seats.kinds, seats.label)
        played.check_partners([s for _, s in partners])
        n = played.team_size(values, "crossplay")
        metric = metric or played.metric
        check_metric(family, metric)

        def cell(team: tuple[Any, ...]) -> tuple[Any, Any]:
            return played.cell(values, team)

        played.check_team(values, *cell((partners[0][1],) * n), n)
        aliases = model_aliases([s for _, s in partners])
        settings = opts.harness(aliases, played.seed(values)) if aliases else None
        play_matrix(family.name, partners, n, metric, cell,
                    out_dir or played.out(values, "crossplay"), opts, settings,
                    played.resources(values, settings, opts.max_reply_tokens, None),
                    limit=played.episodes(values))

    own = [param("partner", list[str] | None,
                  typer.Option(None, "--partner", help=PARTNER_HELP)),
           param("metric", str | None,
                  metric_option(f"The matrix's metric (default {played.metric}; any "
                                "episode metric of the family).")),
           out_param(), opts_param()]
    command = with_options(for_command(played.options, "crossplay"), "crossplay", own, body,
                           f"crossplay_{family.name}",
                           f"Cross-play on {family.title or family.name}: every ordered pair "
                           "of partners over the team's seats.")
    return run_options(without=without(played))(command)
