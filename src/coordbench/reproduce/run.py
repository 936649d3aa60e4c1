"""Run a paper's study: `run_study(paper, options, models)` plays the plan of every model
(the model x plan crossing: the rows no model plays once, each model's own rows timed), runs
a pilot episode and estimates the cost first where models play, asks before a study over
`--cost-limit`, writes the run's report once, and returns the combined study.

The command (`commands/reproduce.py`) only parses: it hands this module its options and the
way it plays and talks (`StudyIO`: progress bars, a terminal that may confirm).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.errors import ConfigError, CoordbenchError
from coordbench.runner import Limits

from .models import combined_study, per_model, plan_all
from .paper import Paper
from .study import Options, Study

QUICK_CAVEAT = ("**Quick mode.** These runs are a minutes-long subset: small samples, short "
                "training budgets and few seeds. A verdict here says what these runs show; "
                "it is not the paper's test of its claim (run without --quick for that).")


@dataclass(frozen=True)
class StudyIO:
    """How a study plays and talks: `play_plan(path, items, quiet=, report=, labels=, **options)`
    plays items into a run and returns it; `open_run(path)` opens (or creates) the run;
    `say(line)` prints a line on stderr; `confirm(question)` asks the person (None: there
    is no terminal to ask); `write_report(run)` recomputes the run's report."""

    play_plan: Callable[..., RunDir]
    open_run: Callable[[Path], RunDir]
    say: Callable[[str], None]
    confirm: Callable[[str], bool] | None
    write_report: Callable[[RunDir], Any]


@dataclass(frozen=True)
class Budget:
    """What the study may spend and how: `cost_limit` ($, None: no cap), `yes` (start a
    study estimated over the cap without asking), `fail_fast`, the executor and workers."""

    cost_limit: float | None = None
    yes: bool = False
    fail_fast: bool = False
    executor: str = "local"
    workers: int = 1


def run_study(paper: Paper, options: Options, models: tuple[str, ...], path: Path,
              budget: Budget, io: StudyIO) -> Study:
    """Play the study of `paper` for `models` (none: the offline agents) into the run at
    `path`, write its report and return the combined study (with the quick caveat)."""
    from coordbench.runner import check_executor

    module = paper.load()
    each = per_model(options, models)
    # an unknown model alias fails here, before any work
    resources = [module.resources(o) for o in each][0]
    io.open_run(path)  # the study may keep files of its own (a task subset) in the run
    if paper.execute or paper.prepare:
        check_executor(budget.executor, budget.workers)
    if paper.execute:  # a study that trains: its sweep, then the run's report
        from coordbench.report.compose import open_for_report

        run = paper.piece("execute")(each[0], path, budget.executor, budget.workers, io.say)
        io.write_report(open_for_report(path))
    else:
        if paper.prepare:  # a study that trains a team first
            paper.piece("prepare")(each[0], path, budget.executor, budget.workers, io.say)
        items, labels, owners = plan_all(module, each, path)
        run = play_study(path, paper.name, (items, labels, owners), models, budget, io,
                         resources)
    study = combined_study(module, run, each, path, paper.piece("compare"))
    if options.quick:
        study.preamble = QUICK_CAVEAT + " " + study.preamble
    return study


def _spent(path: Path, first: int) -> float:
    """Return the cost the harness recorded in the run since entry `first`."""
    from coordbench.runner.conditions import stats_entries

    return sum(float(e.get("cost") or 0) for e in stats_entries(path)[first:])


def _estimate(path: Path, paper: str, groups: dict, models: tuple[str, ...], io: StudyIO,
              resources: Any, options: dict[str, Any]) -> tuple[RunDir, dict[str, Any]]:
    """Return the run and the cost estimate of the models' rows, after a pilot episode for
    each model with none on disk to estimate from (kept: it is one of its episodes)."""
    from coordbench.reproduce.cost import ModelPlan, count, estimate, per_episode, pilot_item

    run = io.open_run(path)
    plans = [count(run, ModelPlan(m, [i for i, _ in groups.get(m, [])])) for m in models]
    fresh = [p for p in plans if p.items and p.left and per_episode(
        run, [i[0].condition(i[1]) for i in p.items], 1) is None]
    if fresh:
        io.play_plan(path, [pilot_item(p) for p in fresh], quiet=False, report=False,
                labels=[f"{paper} pilot ({p.model})" for p in fresh], **options)
        run = io.open_run(path)  # the pilot registered its conditions
        plans = [count(run, p) for p in plans]
    return run, estimate(run, plans, priced(resources))


def _ask(est: dict[str, Any], piloted: float, budget: Budget, io: StudyIO) -> None:
    """Ask before a study whose estimate exceeds --cost-limit (or whose cost cannot be
    estimated under one); ConfigError where the person says no or none can be asked."""
    if budget.cost_limit is None:
        return
    unknown = [r["model"] for r in est["models"] if r["left"] and r["calls"] is None]
    what = None
    if unknown:
        what = (f"the cost of {', '.join(unknown)} cannot be estimated (no finished "
                f"episode: its pilot stopped at --cost-limit ${budget.cost_limit:g}?)")
    elif piloted + est["total"]["cost"] > budget.cost_limit:
        what = (f"the study is estimated at ${piloted + est['total']['cost']:.2f} (its "
                f"pilot included), over --cost-limit ${budget.cost_limit:g} (the run stops "
                "at the limit)")
    if what is None or budget.yes:
        return
    if io.confirm is None:
        raise ConfigError(f"{what}: pass --yes to start anyway, or raise the limit")
    if not io.confirm(f"{what}; start?"):
        raise ConfigError(f"{what}: not started")


def play_study(path: Path, paper: str, plan: tuple[list, list[str], list[str | None]],
               models: tuple[str, ...], budget: Budget, io: StudyIO, resources: Any
               ) -> RunDir:
    """Play a study's plan ((items, labels, owners)): the shared rows, then each model's
    (timed), after printing the models' planned episodes, calls, tokens and cost; return
    the run (its report written once, after every row)."""
    from coordbench.reproduce.cost import add_wall, describe
    from coordbench.runner.conditions import stats_entries

    groups: dict[str | None, list[tuple[tuple, str]]] = {}
    for item, label, who in zip(*plan, strict=True):
        groups.setdefault(who, []).append((item, label))
    options = {"executor": budget.executor, "workers": budget.workers, "resources": resources}
    limits = Limits(cost_limit=budget.cost_limit, fail_fast=budget.fail_fast)
    # --cost-limit caps this command's spend over everything it plays, the pilot included
    # (episodes the limit cut are not saved but were paid for: harness_stats counts them)
    first = len(stats_entries(path))
    run = io.open_run(path)
    if models:
        run, est = _estimate(path, paper, groups, models, io, resources,
                             dict(options, limits=limits))
        io.say(f"{paper} study plan:\n" + "\n".join(describe(est)))
        _ask(est, _spent(path, first), budget, io)
    for who in [None, *models]:
        todo = groups.get(who, [])
        if not todo:
            continue
        so_far = _spent(path, first)
        if who is not None and limits.cost_limit is not None and so_far >= limits.cost_limit:
            io.say(f"{paper}: --cost-limit ${limits.cost_limit:g} reached; the rows of {who} "
                   "are not played (run the command again to go on)")
            continue
        start = time.monotonic()
        run = io.play_plan(path, [i for i, _ in todo], quiet=False, report=False,
                      labels=[f"{paper} {label}" for _, label in todo],
                      limits=replace(limits, spent=so_far), **options)
        if who is not None:
            add_wall(path, who, time.monotonic() - start)
    try:  # the report once, after every row
        io.write_report(run)
    except CoordbenchError as e:
        io.say(f"warning: report not rewritten: {e}")
    return run


def priced(resources: Any) -> Callable[[str], bool]:
    """Return whether a model alias has prices in the registry the study uses."""
    from coordbench.llm.client import harness_for
    from coordbench.runner.suite import harness_source

    settings = harness_source(resources)
    harness = harness_for(settings) if settings is not None else None

    def has_prices(alias: str) -> bool:
        if harness is None:
            return False
        prices = harness.spec(alias).prices
        return bool(prices.prompt_per_mtok or prices.completion_per_mtok)
    return has_prices
