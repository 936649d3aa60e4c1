"""MECoBench conditions in run directories: resumable case loops and summaries."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from coordbench.agents.household_llm import EpisodeBudget, LlmMind
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.envs.household.render import ImageStore
from coordbench.envs.household.task import HouseholdTask, load_tasks
from coordbench.errors import ConfigError
from coordbench.llm.client import ModelHarness
from coordbench.metrics.household import episode_metrics
from coordbench.suites.mecobench_data import PARALLEL_EXAMPLES, SEQUENTIAL_EXAMPLES

from .runner import HouseholdSpec, arun_case, run_case

HEADLINE = ("SR", "CR", "AUC", "DOL", "CAR", "HFR", "spatial_error")


def load_source(tasks_file: str | None, suite: str | None, structure: str
                ) -> tuple[str, list[HouseholdTask]]:
    """Return (source name, tasks of `structure`) from a task file, a suite, or the examples."""
    if tasks_file and suite:
        raise ConfigError("give either --tasks or --suite, not both")
    if suite:
        from .suite import load_suite

        return f"suite-{suite}", [t for t in load_suite(suite) if t.structure == structure]
    path = Path(tasks_file) if tasks_file else (
        PARALLEL_EXAMPLES if structure == "parallel" else SEQUENTIAL_EXAMPLES)
    tasks = [t for t in load_tasks(path) if t.structure == structure]
    if not tasks:
        raise ConfigError(f"{path}: holds no {structure} task")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    return f"{path.stem}-{digest}", tasks


def condition_name(source: str, spec: HouseholdSpec) -> str:
    """Return the run-directory name of a condition."""
    models = ""
    if spec.agents == "llm":
        models = f"-{spec.model}" + (f"+{spec.leader_model}" if spec.leader_model else "")
        models = re.sub(r"[^A-Za-z0-9_.=+-]", "-", models)
    return (f"mecobench_{source}_{spec.structure}_n{spec.team}_{spec.protocol}_{spec.agents}"
            f"{models}_{spec.prior}_seed{spec.seed}")


def run_condition(run: RunDir, source: str, tasks: list[HouseholdTask], spec: HouseholdSpec,
                  progress: Callable[[int], None] | None = None, images: bool = False) -> str:
    """Play every case of `tasks` missing from `run`; return the condition name.

    With `images`, agents' views are rendered and stored under RUN/images/ by content hash.
    """
    cond = condition_name(source, spec)
    store = ImageStore(run.path) if images else None
    run.register(cond, {"suite": "mecobench", "source": source, **spec.as_dict()})
    for k, task in enumerate(tasks):
        key = f"case{k:04d}"
        if not run.has_episode(cond, key):
            # case seeds follow MECoBench: base seed + case index
            traj = run_case(task, spec, spec.seed + k, f"{cond}/{key}", images=store)
            run.write_episode(cond, key, traj)
        if progress:
            progress(1)
    return cond


async def arun_condition(run: RunDir, source: str, tasks: list[HouseholdTask],
                         spec: HouseholdSpec, harness: ModelHarness, *,
                         progress: Callable[[int], None] | None = None, images: bool = False,
                         in_flight: int = 8, max_tokens_per_episode: int | None = None,
                         cost_limit: float | None = None, max_steps: int | None = None,
                         max_reply_tokens: int | None = None) -> str:
    """Play the missing cases of a model-driven team concurrently; return the condition name.

    Up to `in_flight` episodes run at once (the harness caps calls per model). Each finished
    episode is written atomically at once. When the run's model spend reaches `cost_limit`,
    running episodes stop and are not written, so a rerun with a higher limit replays them.
    """
    cond = condition_name(source, spec)
    run.register(cond, {"suite": "mecobench", "source": source, **spec.as_dict()})
    store = ImageStore(run.path) if images else None
    gate = asyncio.Semaphore(in_flight)

    def over_budget() -> str | None:
        if cost_limit is not None and harness.stats.cost >= cost_limit:
            return f"cost limit ${cost_limit:g} reached"
        return None

    async def one(k: int, task: HouseholdTask) -> None:
        key = f"case{k:04d}"
        if run.has_episode(cond, key) or over_budget():
            if progress:
                progress(1)
            return
        async with gate:
            budget = EpisodeBudget(max_tokens_per_episode)
            minds = [LlmMind(i, harness, spec.alias(i) or "", role="leader" if (
                i == 0 and spec.protocol.startswith("leader")) else "agent",
                max_tokens=max_reply_tokens, budget=budget) for i in range(spec.team)]

            def stop() -> str | None:
                if budget.exhausted:
                    return f"token budget of {max_tokens_per_episode} exhausted"
                return over_budget()

            traj = await arun_case(task, spec, spec.seed + k, f"{cond}/{key}", minds, store,
                                   max_steps=max_steps, stop=stop)
            if over_budget() is None or traj.end.termination != "normal_stop":
                run.write_episode(cond, key, traj)
        if progress:
            progress(1)

    await asyncio.gather(*(one(k, t) for k, t in enumerate(tasks)))
    return cond


def condition_values(run: RunDir, cond: str, limit: int | None = None
                     ) -> dict[str, list[float | None]]:
    """Return {metric: per-case values (None = n/a)} recomputed from saved trajectories."""
    keys = run.episode_keys(cond)
    if limit is not None:
        keys = keys[:limit]
    out: dict[str, list[float | None]] = {}
    for key in keys:
        for name, v in episode_metrics(run.load_episode(cond, key)).items():
            out.setdefault(name, []).append(v)
    return out


def summarize(values: dict[str, list[float | None]]) -> dict[str, Estimate]:
    """Return {metric: mean and 95% CI over the cases where it applies}."""
    return {k: mean_ci([v for v in vs if v is not None]) for k, vs in values.items()}
