"""`coordbench attribute RUN`: who made each failed episode fail, and when, by replaying it
with one seat taken over by a reference (docs/attribution.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.errors import ConfigError

from .common import (
    cache_option,
    cache_path_option,
    cost_limit_option,
    emit_json,
    episode_option,
    err,
    executor_option,
    json_option,
    metric_option,
    models_option,
    out,
    reference_option,
    steps_option,
    workers_option,
    write_report,
    yes_option,
)


def attribute(
    run_dir: Path = typer.Argument(..., help="A run directory."),
    episode: list[str] | None = episode_option("CONDITION/KEY (or KEY) of an episode to "
                                               "attribute; repeatable (default: every "
                                               "failed episode)."),
    reference: str | None = reference_option(
        "NAME", "Who takes a seat over: clean (the seat's own mind without its injected "
                "failures), rule, hungarian (STAT), expert (physical); default: "
                "clean for a seat with dials, else the family's first reference."),
    steps: str = steps_option("binary", "binary (the decisive step in log2(T) replays) | "
                                        "all (every step)."),
    metric: str | None = metric_option("Attribute episodes whose METRIC is below "
                                       "--threshold (default: the family's success)."),
    threshold: float = typer.Option(1.0, "--threshold", help="With --metric: below this "
                                    "an episode underperforms (default 1: not a success)."),
    as_json: bool = json_option("Print a JSON list, one object per attributed episode."),
    executor: str = executor_option(), workers: int = workers_option(),
    models: Path | None = models_option(), cache: bool = cache_option(),
    cache_path: Path | None = cache_path_option(),
    cost_limit: float | None = cost_limit_option(),
    yes: bool = yes_option("Start although the estimate exceeds --cost-limit."),
) -> None:
    """For each failed episode (or each below --threshold on --metric): the seats whose
    takeover by a reference rescues it, the decisive step of each (the last step from
    which the takeover still rescues), a blame share per seat, and a table per condition.
    Results are written beside the run's episodes, in RUN/attribution/ (resumable), and the
    run's report gains a "who and when" section."""
    from coordbench.attribution.episode import Question
    from coordbench.attribution.run import (
        attribute_run,
        check_question,
        estimate,
        pending,
        targets,
    )
    from coordbench.attribution.table import by_condition
    from coordbench.core.files import check_in_dir, check_range
    from coordbench.core.limits import MAX_WORKERS
    from coordbench.core.rundir import RunDir

    check_in_dir(run_dir, "RUN")
    check_range("--workers", workers, 1, MAX_WORKERS)
    q = Question(metric=metric, threshold=threshold, reference=reference, steps=steps)
    check_question(q)
    if reference is not None:
        from coordbench.agents.team.counterfactual import Swap

        Swap(0, 0, reference)  # an unknown reference: one line before any work
    run = RunDir.open(run_dir)
    todo = targets(run, q, episode)
    if not todo:
        err.print(f"{run_dir}: no failed episode to attribute", highlight=False, soft_wrap=True)
        if as_json:
            emit_json([])
        return
    # what is asked again: episodes whose stored result answers this question are reused
    est = estimate(pending(run, todo, q), q)
    harness = _harness(models, cache, cache_path) if any(t.calls for t in todo) else None
    if est["calls"]:
        _ask(est, cost_limit, yes)
    results, refused = attribute_run(run, todo, q, harness=harness, executor=executor,
                                     workers=workers)
    for line in refused:
        err.print(line, highlight=False, soft_wrap=True)
    write_report(run)  # report.md and report.html gain their "who and when" section
    if as_json:
        emit_json(results)
    else:
        _print(results, by_condition(results))
    if refused:
        raise typer.Exit(2)


def _harness(models: Path | None, cache: bool, cache_path: Path | None):
    """Return the harness settings model seats replay with (the response cache on by
    default, so a rerun makes no new call)."""
    from coordbench.llm.client import HarnessSettings

    return HarnessSettings(str(models) if models else None, cache,
                           str(cache_path) if cache_path else None, None, None)


def _ask(est: dict, cost_limit: float | None, yes: bool) -> None:
    """Say what the replays may cost; refuse (one line) where it exceeds --cost-limit and
    no one said --yes or confirmed."""
    import sys

    what = (f"attribution: {est['episodes']} episodes, at most {est['replays']} replays, "
            f"{est['calls']} model calls (${est['cost']:.2f}) if no reply is cached")
    err.print(what, highlight=False)
    if cost_limit is None or est["cost"] <= cost_limit or yes:
        return
    over = f"{what}, over --cost-limit ${cost_limit:g}"
    if not sys.stdin.isatty():
        raise ConfigError(f"{over}: pass --yes to start anyway, or raise the limit")
    if not typer.confirm(f"{over}; start?"):
        raise ConfigError(f"{over}: not started")


def _print(results: list[dict], table: dict) -> None:
    """Print each episode's responsible seats and the per-condition table."""
    for r in results:
        who = ", ".join(f"{x['seat']} from step {x['step']} (blame {x['blame']:.2f})"
                        for x in r["responsible"]) or "no single seat rescues it"
        how = ("stored" if r.get("reused")
               else f"{r['replays']} replays, {r['calls']} new calls")
        out.print(f"{r['episode']}: {who}; {how}", highlight=False, soft_wrap=True)
    for cond, row in table.items():
        seats = "; ".join(
            f"{seat} {s['responsible']['mean']:.0%} (median step {s['step_median']:g})"
            for seat, s in row["seats"].items()) or "none"
        out.print(f"{cond}: {row['episodes']} failed, responsible: {seats}", highlight=False,
                  soft_wrap=True)
