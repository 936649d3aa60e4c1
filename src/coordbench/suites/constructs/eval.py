"""Construct conditions in run directories: resumable loops and summaries per construct."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.envs.household.render import ImageStore
from coordbench.metrics.constructs import correlation_matrix, episode_metrics

from .families import CONSTRUCTS
from .runner import ConstructSpec, arun_construct, run_construct

HEADLINE = ("SR", "CS", "legal_rate")


def condition_name(subset: str, construct: str | None, team: int | None,
                   spec: ConstructSpec) -> str:
    """Return the run-directory name of a construct condition."""
    model = re.sub(r"[^A-Za-z0-9_.=+-]", "-", f"-{spec.model}") if spec.model else ""
    order = "" if spec.order == "index" else f"_order-{spec.order}"
    return (f"constructs_{subset}_{construct or 'all'}_team{team or 'all'}_{spec.planner}_"
            f"{spec.agents}{model}_{spec.observation}_seed{spec.seed}{order}")


def run_condition(run: RunDir, cond: str, raws: list[dict[str, Any]], spec: ConstructSpec,
                  progress: Callable[[int], None] | None = None, harness=None,
                  in_flight: int = 8) -> None:
    """Play the instances of `raws` missing from `run` (model-driven ones concurrently)."""
    run.register(cond, {"suite": "constructs", **spec.as_dict()})
    store = ImageStore(run.path) if spec.observation == "image" else None
    todo = [(k, raw) for k, raw in enumerate(raws)
            if not run.has_episode(cond, f"inst{k:04d}")]
    if progress:
        progress(len(raws) - len(todo))
    if harness is None:
        for k, raw in todo:
            run.write_episode(cond, f"inst{k:04d}",
                              run_construct(raw, spec, f"{cond}/inst{k:04d}", None, store))
            if progress:
                progress(1)
        return
    gate = asyncio.Semaphore(in_flight)

    async def one(k: int, raw: dict[str, Any]) -> None:
        async with gate:
            traj = await arun_construct(raw, spec, f"{cond}/inst{k:04d}", harness, store)
            run.write_episode(cond, f"inst{k:04d}", traj)
        if progress:
            progress(1)

    async def all_of_them() -> None:
        await asyncio.gather(*(one(k, raw) for k, raw in todo))

    asyncio.run(all_of_them())


def summarize(run: RunDir, cond: str, limit: int | None = None
              ) -> tuple[dict[str, Estimate], dict[str, dict[str, Estimate]]]:
    """Return (overall {metric: estimate}, per construct {construct: {metric: estimate}})."""
    keys = run.episode_keys(cond)[:limit] if limit else run.episode_keys(cond)
    overall: dict[str, list[float]] = {}
    per: dict[str, dict[str, list[float]]] = {c: {} for c in CONSTRUCTS}
    for key in keys:
        traj = run.load_episode(cond, key)
        construct = traj.header.params["construct"]["construct"]
        for name, v in episode_metrics(traj).items():
            if v is None:
                continue
            overall.setdefault(name, []).append(v)
            per[construct].setdefault(name, []).append(v)
    est = {k: mean_ci(v) for k, v in overall.items()}
    per_est = {c: {k: mean_ci(v) for k, v in d.items()} for c, d in per.items() if d}
    return est, per_est


def correlations(run: RunDir) -> dict[str, dict[str, float | None]]:
    """Return the construct-score correlation matrix over the run's construct conditions
    (one row per condition: its mean score on each construct)."""
    rows = []
    for cond in run.conditions:
        if cond.startswith("constructs_") and run.episode_keys(cond):
            _, per = summarize(run, cond)
            rows.append({c: per[c]["CS"].mean if c in per and "CS" in per[c] else None
                         for c in CONSTRUCTS})
    return correlation_matrix(rows)


def report_markdown(run: RunDir) -> str:
    """Return the construct section of a run report: scores per construct and condition,
    diagnostics, and the construct-score correlation matrix over conditions."""
    lines = ["## Coordination constructs", "",
             "Mean ± 95% t-interval over instances (definitions: docs/constructs.md).", "",
             "| planner | agents | observation | construct | n | SR | CS | legal rate | "
             "invalid actions | progress on failure | steps on success | planner calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    any_rows = False
    for cond, spec in run.conditions.items():
        if not cond.startswith("constructs_") or not run.episode_keys(cond):
            continue
        _, per = summarize(run, cond)
        for c, d in sorted(per.items()):
            any_rows = True

            def f(k, d=d):
                return d[k].fmt(3) if k in d and d[k].n else "n/a"

            lines.append(f"| {spec['planner']} | {spec['agents']} | {spec['observation']} | {c} "
                         f"| {d['SR'].n} | {f('SR')} | {f('CS')} | {f('legal_rate')} | "
                         f"{f('invalid_action_ratio')} | {f('progress_on_failure')} | "
                         f"{f('steps_on_success')} | {f('planner_calls')} |")
    if not any_rows:
        return ""
    m = correlations(run)
    lines += ["", "Construct-score correlations over conditions (Pearson; n/a with fewer than "
              "3 conditions or no variance):", "", "| | " + " | ".join(m) + " |",
              "|---|" + "---|" * len(m)]
    for a, row in m.items():
        lines.append(f"| {a} | " + " | ".join("n/a" if v is None else f"{v:+.2f}"
                                              for v in row.values()) + " |")
    return "\n".join(lines) + "\n"
