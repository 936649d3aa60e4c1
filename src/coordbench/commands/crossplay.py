"""`coordbench crossplay FAMILY --partner NAME=SPEC ...`: partners that have never met.

Each family's subcommand takes its run command's options (what is played) and the partners
(who plays); every ordered pair of partners is one condition of an ordinary run directory
(`crossplay/matrix.py`). A cell whose seats all hold the same partner is that partner's
self-play: the very condition the family's run command plays for it, so its trajectories are
the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from coordbench.errors import ConfigError

from .common import emit_json, out
from .limits import MAX_EPISODES, MAX_SEED, MAX_STEPS
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="Cross-play: every ordered pair of partners "
                                             "over a team's seats.")

PARTNER_HELP = ("NAME=SPEC, repeated: a seat spec as in --team (scripted:greedy, rule, "
                "rule:reverse, llm:ALIAS, learned:CHECKPOINT, expert).")
MAX_PARTNERS = 12


def parse_partners(items: list[str] | None, allowed: tuple[str, ...], family: str
                   ) -> list[tuple[str, Any]]:
    """Return [(name, Seat)] of `--partner NAME=SPEC` items; ConfigError (one line) names a
    malformed item, a repeated name, or a spec this family's seats do not take."""
    from coordbench.agents.seats import parse_seat

    if not items:
        raise ConfigError("give at least one --partner NAME=SPEC")
    if len(items) > MAX_PARTNERS:
        raise ConfigError(f"--partner: at most {MAX_PARTNERS} partners ({len(items)} given)")
    partners: list[tuple[str, Any]] = []
    for item in items:
        name, sep, spec = str(item).partition("=")
        name = name.strip()
        if not sep or not name or not spec.strip():
            raise ConfigError(f"--partner {item!r}: write NAME=SPEC, e.g. greedy=scripted:greedy")
        if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ConfigError(f"--partner {item!r}: a name is letters, digits, - _ and .")
        if any(name == n for n, _ in partners):
            raise ConfigError(f"--partner names {name!r} twice")
        seat = parse_seat(spec, allowed, family, f"--partner {name}={spec.strip()}")
        if seat.kind == "human":
            raise ConfigError(f"--partner {name}: a person plays through `coordbench play`, "
                              "not in a crossplay matrix")
        same = next((n for n, s in partners if s == seat), None)
        if same is not None:
            raise ConfigError(f"--partner {name} is {seat.driver}, as {same} is: the same "
                              "partner twice would count self-play as cross-play")
        partners.append((name, seat))
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
    run = opts.play(out_dir, list(plan.values()), settings=settings, resources=resources,
                    labels=list(labels.values()))
    m = matrix(run, design)
    from coordbench.report.crossplay_report import console_tables, matrix_json

    if opts.as_json:  # the contract's {"mean", "ci95", "n"} estimates (emit_json)
        emit_json({**matrix_json(m), "run": str(run.path)})
        return

    for table in console_tables(m):
        out.print(table)
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


@app.command("stat")
@run_options()
def crossplay_stat(
    partner: list[str] = typer.Option(None, "--partner", help=PARTNER_HELP),
    config: str = typer.Option(..., help="STAT config name, e.g. 3A-6T-10x6."),
    episodes: int = typer.Option(100, help="Episodes per cell (layouts 0..N-1)."),
    layouts: str = typer.Option("paper", help="paper (seeds s*1000+i) | uniform"),
    seed: int = typer.Option(0, help="Policy seed (and layout seed for uniform layouts)."),
    episode_limit: int = typer.Option(700, help="Truncate episodes at this many steps."),
    protocol: str = typer.Option("none", help="How seats played by minds talk (none | "
                                              "broadcast | leader | shared_memory); "
                                              "allocators and learned policies do not."),
    metric: str = typer.Option("return", help="The matrix's metric (any STAT metric, e.g. "
                                              "conflict_rate)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Cross-play on STAT: allocators, rule minds, models and learned policies from
    separate runs, paired seat by seat."""
    from coordbench.core.files import check_range
    from coordbench.crossplay.cells import stat_cell
    from coordbench.envs.stat.config import get_config
    from coordbench.runner import ModelResources
    from coordbench.suites.stat.suite import SEAT_KINDS, SUITE

    check_range("--episodes", episodes, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--episode-limit", episode_limit, 1, MAX_STEPS)
    opts.check(out_dir)
    partners = parse_partners(partner, SEAT_KINDS, "STAT")
    n = get_config(config).agents
    _check_metric("stat", metric, "STAT")

    def cell(seats: tuple[Any, ...]) -> tuple[Any, Any]:
        return SUITE, stat_cell(config, seats, layouts, seed, episode_limit, protocol)

    aliases = {s.arg for _, s in partners if s.kind == "llm"}
    settings = opts.harness(aliases, seed) if aliases else None
    play_matrix("stat", partners, n, metric, cell,
                out_dir or Path("runs") / "crossplay" / f"stat-{config}", opts, settings,
                ModelResources(settings, opts.max_reply_tokens) if aliases else None,
                limit=episodes)


@app.command("constructs")
@run_options(without=("max_reply_tokens",))
def crossplay_constructs(
    partner: list[str] = typer.Option(None, "--partner", help=PARTNER_HELP),
    subset: str = typer.Option("rep240", help="all (900 instances) | rep240"),
    construct: str | None = typer.Option(None, help="D1 | D2 | D3 | D4 (default: all)."),
    team: int = typer.Option(2, help="Team size: 2 | 3 | 4 (the instances played)."),
    protocol: str = typer.Option("broadcast", help="none | broadcast | discuss | leader | "
                                                   "shared_memory"),
    limit: int | None = typer.Option(None, help="Play only the first K instances."),
    seed: int = typer.Option(0, help="Episode seed."),
    metric: str = typer.Option("SR", help="The matrix's metric (SR, CS, ...)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Cross-play on the coordination constructs: rule minds (and their variants) and
    models, one mind per seat under a protocol."""
    from coordbench.core.files import check_range
    from coordbench.crossplay.cells import construct_cell
    from coordbench.suites.constructs.suite import SUITE

    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    if team not in (2, 3, 4):
        raise ConfigError(f"--team must be 2, 3 or 4, got {team}")
    if subset not in ("all", "rep240"):
        raise ConfigError(f"--subset must be all or rep240, not {subset!r}")
    if construct is not None and construct not in ("D1", "D2", "D3", "D4"):
        raise ConfigError(f"--construct must be one of D1, D2, D3, D4, not {construct!r}")
    opts.check(out_dir)
    partners = parse_partners(partner, ("llm", "rule"), "construct")
    _check_metric("constructs", metric, "construct")

    def cell(seats: tuple[Any, ...]) -> tuple[Any, Any]:
        return SUITE, construct_cell(seats, protocol, seed, subset, construct, team, limit)

    aliases = {s.arg for _, s in partners if s.kind == "llm"}
    settings = opts.harness(aliases, seed) if aliases else None
    play_matrix("constructs", partners, team, metric, cell,
                out_dir or Path("runs") / "crossplay" / f"constructs-{subset}-team{team}",
                opts, settings, settings)


@app.command("mecobench")
@run_options()
def crossplay_mecobench(
    partner: list[str] = typer.Option(None, "--partner", help=PARTNER_HELP),
    tasks: Path | None = typer.Option(None, help="A MECoBench task file (JSON)."),
    suite: str | None = typer.Option(None, help="A built-in instance set, e.g. v1."),
    structure: str = typer.Option("parallel", help="parallel | sequential"),
    team: int = typer.Option(2, help="Team size (sequential: 2)."),
    protocol: str = typer.Option("broadcast", help="none|broadcast|discuss|leader|"
                                                   "shared_memory"),
    prior: str = typer.Option("full", help="full|no_appearance|no_location|none|noisy"),
    limit: int | None = typer.Option(None, help="Play only the first K cases."),
    seed: int = typer.Option(0, help="Base seed; case k uses seed + k."),
    max_steps: int | None = typer.Option(None, help="Cap team steps (short smoke runs)."),
    metric: str = typer.Option("SR", help="The matrix's metric (SR, CR, AUC, ...)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Cross-play on household teams: rule minds and models, one per seat."""
    from coordbench.core.files import check_range
    from coordbench.crossplay.cells import household_cell
    from coordbench.suites.mecobench.instances import check_playable
    from coordbench.suites.mecobench.suite import SUITE, MecobenchResources

    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--max-steps", max_steps, 1, MAX_STEPS)
    check_range("--team", team, 1, 5)
    opts.check(out_dir)
    partners = parse_partners(partner, ("llm", "rule"), "MECoBench")
    _check_metric("mecobench", metric, "MECoBench")

    def cell(seats: tuple[Any, ...]) -> tuple[Any, Any]:
        return SUITE, household_cell(seats, structure, protocol, prior, seed,
                                     str(tasks) if tasks else None, suite)

    cases = SUITE.cases(cell((partners[0][1],) * team)[1], limit)
    check_playable([c.data[1] for c in cases], team, prior)
    aliases = {s.arg for _, s in partners if s.kind == "llm"}
    settings = opts.harness(aliases, seed) if aliases else None
    play_matrix("mecobench", partners, team, metric, cell,
                out_dir or Path("runs") / "crossplay" / f"mecobench-{structure}-team{team}",
                opts, settings, MecobenchResources(settings, opts.max_reply_tokens,
                                                   max_steps=max_steps), limit=limit)


@app.command("physical")
@run_options()
def crossplay_physical(
    partner: list[str] = typer.Option(None, "--partner", help=PARTNER_HELP + " Physical: "
                                      "expert, scripted:expert_noisy, learned:CHECKPOINT "
                                      "(per-robot policies from separate runs), llm:ALIAS."),
    task: str = typer.Option(..., help="A physical task with 2+ robots, e.g. Handover."),
    rollouts: int = typer.Option(100, help="Rollouts per cell (seeds 1..N)."),
    metric: str = typer.Option("success", help="The matrix's metric (success, p1, p2, p3, "
                                               "...)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Cross-play on the physical suite: experts, learned robots from separate runs and
    models, robot by robot."""
    from coordbench.core.files import check_range
    from coordbench.crossplay.cells import physical_cell
    from coordbench.envs.physical.tasks import get_task
    from coordbench.runner import ModelResources
    from coordbench.suites.physical.suite import SUITE

    check_range("--rollouts", rollouts, 1, MAX_EPISODES)
    opts.check(out_dir)
    partners = parse_partners(partner, ("llm", "scripted", "learned"), "physical")
    kinds = {s.kind == "llm" for _, s in partners}
    if len(kinds) > 1:
        raise ConfigError("crossplay physical pairs models with models, or experts and "
                          "checkpoints with each other: a model makes the team "
                          "skill-controlled, where an expert is another agent (the skill "
                          "controller's suggestion) and a learned robot cannot sit")
    n = get_task(task).n_robots
    _check_metric("physical", metric, "physical")

    def cell(seats: tuple[Any, ...]) -> tuple[Any, Any]:
        return SUITE, physical_cell(seats, task)

    aliases = {s.arg for _, s in partners if s.kind == "llm"}
    settings = opts.harness(aliases) if aliases else None
    play_matrix("physical", partners, n, metric, cell,
                out_dir or Path("runs") / "crossplay" / f"physical-{task}", opts, settings,
                ModelResources(settings, opts.max_reply_tokens) if aliases else None,
                limit=rollouts)


# episode metrics a family's summary neither leads with nor gives an interval kind
_MORE = {"stat": ("return", "length"), "mecobench": ("steps",),
         "physical": ("drops", "robot_collisions", "partner_lag_s")}


def _check_metric(name: str, metric: str, label: str) -> None:
    """Raise ConfigError unless `metric` is one of family `name`'s episode metrics."""
    from coordbench.runner.family import family

    f = family(name)
    assert f is not None
    known = {*(f.get("kinds") or {}), *f.headline_metrics(), *_MORE.get(name, ())}
    if metric not in known:
        raise ConfigError(f"--metric {metric!r}: not a metric of {label} episodes; choose "
                          f"from {', '.join(sorted(known))}")
