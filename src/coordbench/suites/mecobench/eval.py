"""MECoBench conditions in run directories: resumable case loops and summaries."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.envs.household.render import ImageStore
from coordbench.envs.household.task import HouseholdTask, load_tasks
from coordbench.errors import ConfigError
from coordbench.metrics.household import episode_metrics
from coordbench.suites.mecobench_data import PARALLEL_EXAMPLES, SEQUENTIAL_EXAMPLES

from .runner import HouseholdSpec, run_case

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
    return (f"mecobench_{source}_{spec.structure}_n{spec.team}_{spec.protocol}_{spec.agents}"
            f"_{spec.prior}_seed{spec.seed}")


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
