"""MECoBench on the one runner: conditions, their cases, play, metrics."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from coordbench.agents.team.dials import dials_suffix
from coordbench.agents.team.seats import has_human, team_label
from coordbench.core.rundir import RunDir, safe_name
from coordbench.core.sample import Sample, draw_order, stratified_sample
from coordbench.core.trajectory import Trajectory
from coordbench.envs.household.render import ImageStore
from coordbench.envs.household.task import HouseholdTask, load_tasks
from coordbench.errors import ConfigError
from coordbench.llm.client import harness_for
from coordbench.metrics.household import episode_metrics
from coordbench.runner import Case, ModelResources, PlayContext, condition_values, play_concurrently
from coordbench.runner.suite import Played
from coordbench.suites.mecobench.instances import PARALLEL_EXAMPLES, SEQUENTIAL_EXAMPLES

from .episode import HouseholdSpec, arun_case

HEADLINE = ("SR", "CR", "AUC", "DOL", "CAR", "HFR", "spatial_error")


def task_stratum(task: HouseholdTask) -> tuple[str, int]:
    """Return a task's stratum in a `--limit` sample: its structure and its number of target
    objects (the team size is the condition's own: a study plays each size as a condition)."""
    return (task.structure, sum(g.count for g in task.subgoals))


def stratum_label(stratum: tuple) -> str:
    """Return a household stratum's name, e.g. "parallel 4 objects"."""
    return f"{stratum[0]} {stratum[1]} objects"


def sample_tasks(tasks: Sequence[HouseholdTask], limit: int) -> Sample:
    """Return the stratified sample of `limit` of `tasks` (`core.sample`)."""
    return stratified_sample(tasks, task_stratum, limit, label=stratum_label)


def load_source(tasks_file: str | None, suite: str | None, structure: str
                ) -> tuple[str, list[HouseholdTask]]:
    """Return (source name, tasks of `structure`) from a task file, a suite, or the examples.

    Parsed sources are kept per process (a task file by its path, size and modification
    time), since a study plays many conditions on one source; tasks are never modified.
    """
    if tasks_file and suite:
        raise ConfigError("give either --tasks or --suite, not both")
    if suite:
        name, tasks = _parsed(None, suite, structure, None)
        return name, list(tasks)
    path = Path(tasks_file) if tasks_file else (
        PARALLEL_EXAMPLES if structure == "parallel" else SEQUENTIAL_EXAMPLES)
    try:
        st = path.stat()
        stamp = (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None  # load_tasks says what is wrong with it
    name, tasks = _parsed(str(path), None, structure, stamp)
    return name, list(tasks)


@lru_cache(maxsize=32)
def _parsed(path: str | None, suite: str | None, structure: str,
            stamp: tuple[int, int] | None) -> tuple[str, list[HouseholdTask]]:
    if suite:
        from .instances import load_suite

        return f"suite-{suite}", [t for t in load_suite(suite) if t.structure == structure]
    assert path is not None
    tasks = [t for t in load_tasks(path) if t.structure == structure]
    if not tasks:
        raise ConfigError(f"{path}: holds no {structure} task")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:8]
    return f"{Path(path).stem}-{digest}", tasks


def condition_name(source: str, spec: HouseholdSpec) -> str:
    """Return the run-directory name of a condition."""
    models = ""
    if spec.agents == "llm" and spec.seats is None:
        models = f"-{spec.model}" + (f"+{spec.leader_model}" if spec.leader_model else "")
    who = spec.agents if spec.seats is None else safe_name(f"team-{team_label(spec.seats)}")
    return (f"mecobench_{source}_{spec.structure}_n{spec.team}_{spec.protocol}_{who}"
            f"{safe_name(models)}_{spec.prior}_seed{spec.seed}"
            + ("" if spec.conflict_set == "paper" else f"_cs-{spec.conflict_set}")
            + dials_suffix(spec.dials))


@dataclass(frozen=True)
class MecobenchCondition:
    """A household condition: the team's spec and where its cases come from (a task file or
    a built-in instance set; `source` names it in the condition id)."""

    household: HouseholdSpec
    source: str
    tasks_file: str | None = None
    instance_set: str | None = None


def mecobench_condition(tasks_file: str | None, instance_set: str | None,
                        spec: HouseholdSpec) -> MecobenchCondition:
    """Return the condition of `spec` on a task file, an instance set, or the examples."""
    source, _ = load_source(tasks_file, instance_set, spec.structure)
    return MecobenchCondition(spec, source, tasks_file, instance_set)


@dataclass(frozen=True)
class MecobenchResources(ModelResources):
    """Run-wide options of household play: the model harness and per-reply token cap of
    every model-driven team, plus rendered views and a step cap for smoke runs."""

    images: bool = False
    max_steps: int | None = None

    def identity(self) -> dict[str, Any]:
        """Return the options that change the episodes (recorded with each condition)."""
        return {"max_steps": self.max_steps, "max_reply_tokens": self.max_reply_tokens}


class MecobenchSuite:
    """MECoBench on the one runner: a case is a task, seeded by base seed + case index."""

    name = "mecobench"
    headline = HEADLINE

    def condition(self, spec: MecobenchCondition) -> str:
        """Return the condition's directory name."""
        return condition_name(spec.source, spec.household)

    def manifest(self, spec: MecobenchCondition) -> dict[str, Any]:
        """Return the source and the team's spec."""
        household = spec.household.as_dict()
        if household.get("seats") is None:  # conditions without a team spec keep theirs
            household.pop("seats", None)
        return {"source": spec.source, **household,
                "tasks_file": spec.tasks_file, "instance_set": spec.instance_set}

    def cases(self, spec: MecobenchCondition, limit: int | None = None) -> list[Case]:
        """Return the condition's tasks in order (with `limit`, the stratified sample of that
        many: `sample`), each keyed and seeded by its index in the source, so a sampled case
        is the same episode as in a run of every case, and samples of one source nest."""
        _, tasks = load_source(spec.tasks_file, spec.instance_set, spec.household.structure)
        picked = range(len(tasks)) if limit is None else sample_tasks(tasks, limit).indices
        return [Case(f"case{k:04d}", (k, tasks[k])) for k in picked]

    def sample(self, spec: MecobenchCondition, limit: int) -> Sample:
        """Return the stratified sample of `limit` of the condition's tasks."""
        _, tasks = load_source(spec.tasks_file, spec.instance_set, spec.household.structure)
        return sample_tasks(tasks, limit)

    def sample_keys(self, fields: dict[str, Any]) -> list[str]:
        """Return the case keys of the condition recorded as `fields` (its manifest entry)
        in the order `--limit` draws them: a sample of K is the first K (the viewer tells a
        missing episode from one never drawn by it)."""
        _, tasks = load_source(fields.get("tasks_file"), fields.get("instance_set"),
                               fields["structure"])
        return [f"case{k:04d}" for k in draw_order([task_stratum(t) for t in tasks])]

    def unit_size(self, spec: MecobenchCondition) -> int:
        """Return cases per unit (model-driven teams: enough to keep calls in flight)."""
        return 8 if spec.household.agents == "llm" else 12

    def play(self, spec: MecobenchCondition, cases: list[Case], ctx: PlayContext
             ) -> Iterator[Played] | AsyncIterator[Played]:
        """Yield (case, trajectory) as each case ends; model-driven cases run concurrently."""
        res = ctx.resources or MecobenchResources()
        store = ImageStore(Path(ctx.run_path)) if res.images else None
        cond = self.condition(spec)
        hs = spec.household

        async def one(case: Case) -> Trajectory:
            k, task = case.data
            harness = harness_for(res.harness) if hs.agents == "llm" else None
            # case seeds follow MECoBench: base seed + case index
            return await arun_case(task, hs, hs.seed + k, f"{cond}/{case.key}", images=store,
                                   max_steps=res.max_steps, limits=ctx.limits, harness=harness,
                                   max_reply_tokens=res.max_reply_tokens, resources=res)

        if hs.agents == "llm" or has_human(hs.seats):
            return play_concurrently(cases, one, ctx)
        return ((case, asyncio.run(one(case))) for case in cases)

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return the MECoBench metrics of one episode."""
        return episode_metrics(trajectory)


SUITE = MecobenchSuite()


def condition_values_of(run: RunDir, cond: str, limit: int | None = None,
                        keys: Sequence[str] | None = None) -> dict[str, list[float | None]]:
    """Return {metric: per-case values (None = n/a)} recomputed from saved trajectories: of
    the cases `keys` where given (those of them on disk), else of the first `limit` saved."""
    saved = run.episode_keys(cond)
    if keys is not None:
        wanted = set(keys)
        saved = [k for k in saved if k in wanted]
    elif limit:
        saved = saved[:limit]
    return condition_values(run, cond, SUITE.metrics, saved)


def plan_items(p: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items, progress labels) of the default benchmark's household section:
    each team under each protocol on the instance set (its optional `limit`: a stratified
    sample of that many)."""
    items: list[tuple] = []
    labels: list[str] = []
    for t in p["teams"]:
        for proto in p["protocols"]:
            spec = HouseholdSpec(t["structure"], t["team"], proto, p["agents"])
            items.append((SUITE, mecobench_condition(None, p["instance_set"], spec),
                          p.get("limit")))
            labels.append(f"household {t['structure']} n={t['team']} {proto}")
    return items, labels


def api_condition(options: dict[str, Any]) -> tuple[MecobenchSuite, MecobenchCondition,
                                                   int | None]:
    """Return (suite, condition, limit) from `coordbench.evaluate("mecobench", ...)`'s
    options (`tasks` a task file or `suite` an instance set, `limit` a stratified sample of
    that many cases)."""
    tasks, instance_set = options.pop("tasks", None), options.pop("suite", None)
    limit = options.pop("limit", None)
    spec = HouseholdSpec(**options)
    return SUITE, mecobench_condition(str(tasks) if tasks else None, instance_set, spec), limit
