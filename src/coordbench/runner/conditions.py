"""The one condition engine: register, skip finished episodes, play the missing ones, write.

`run_conditions` takes a plan of (suite, spec) pairs. Each condition is registered in the
run's manifest with its suite; its missing cases are cut into work units, which an executor
plays (here, in a process pool, or on Ray); the driver writes every finished episode
atomically as it comes back. A rerun into the same directory plays only what is missing.

Limits: a run-wide model spend (`cost_limit`) and a per-episode token budget. An episode
stopped by the cost limit is not written, so a rerun with a higher limit replays it; once the
limit is reached no further unit is dispatched. Workers check the limit against what the run
had spent when their unit was dispatched plus what they spend themselves, so concurrent units
can overshoot it by what is in flight.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.errors import RunDirError

from .episode import Limits, Meter, current_meter, metered, unmetered
from .executors import Executor, check_executor, make_executor
from .suite import Case, PlayContext, Played, Suite


class Progress(Protocol):
    """What the engine reports while it runs (the CLI draws bars from it)."""

    def start(self, condition: str, label: str, total: int, done: int) -> None:
        """A condition with `total` cases, `done` of them already on disk."""

    def advance(self, condition: str, n: int) -> None:
        """`n` more cases of `condition` are finished."""


@dataclass(frozen=True)
class Unit:
    """One piece of work for a worker: some cases of one condition."""

    suite: Suite
    spec: Any
    condition: str
    cases: list[Case]
    ctx: PlayContext


def register(run: RunDir, suite: Suite, spec: Any) -> str:
    """Record the condition of `spec` in the manifest with its suite; return its name.

    A manifest written by an earlier coordbench that recorded fewer fields for the same
    condition (no suite, say) is brought up to date instead of refused.
    """
    cond = suite.condition(spec)
    fields = {"suite": suite.name, **suite.manifest(spec)}
    old = run.conditions.get(cond)
    if old is not None and old != fields and old.items() <= fields.items():
        run.conditions[cond] = fields
        run.save_manifest()
    run.register(cond, fields)
    return cond


def spent(trajectory: Trajectory) -> float:
    """Return what an episode's model calls cost (cache hits cost nothing)."""
    return sum(c.cost for c in trajectory.steps(ModelCallEvent) if not c.cache_hit)


@dataclass(frozen=True)
class Finished:
    """A finished episode as it travels back to the driver: already serialized (the workers
    do the JSON work), what it cost, and whether it is kept (an episode cut short by the
    cost limit is not)."""

    key: str
    text: str
    cost: float
    keep: bool


def finished(case: Case, traj: Trajectory, limits: Limits) -> Finished:
    """Return the episode of `case` ready to be written."""
    if traj.end is None:
        raise RunDirError(f"episode {case.key} is incomplete (no episode_end)")
    end = traj.end
    cut = (limits.cost_limit is not None and end.termination == "normal_stop"
           and end.detail == limits.cost_reason())
    return Finished(case.key, traj.to_jsonl(), spent(traj), not cut)


def play_unit(unit: Unit) -> list[Finished]:
    """Play one unit to the end; return every episode it produced."""
    meter = Meter()
    token = metered(meter)
    try:
        out = unit.suite.play(unit.spec, unit.cases, unit.ctx)
        played = asyncio.run(_collect(out)) if inspect.isasyncgen(out) else list(out)
        return [finished(c, t, unit.ctx.limits) for c, t in played]
    finally:
        unmetered(token)


async def _collect(gen: AsyncIterator[Played]) -> list[Played]:
    return [item async for item in gen]


def _iterate(out: Iterator[Played] | AsyncIterator[Played]) -> Iterator[Played]:
    """Yield from a sync or an async generator of played episodes, as each arrives."""
    if not inspect.isasyncgen(out):
        yield from out
        return
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(out.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.run_until_complete(out.aclose())
        loop.close()


def run_conditions(run: RunDir, plan: Sequence[tuple], *, executor: str = "local",
                   workers: int = 1, limit: int | None = None, resources: Any = None,
                   limits: Limits | None = None, in_flight: int = 8,
                   labels: Sequence[str] | None = None,
                   progress: Progress | None = None) -> list[str]:
    """Play every missing case of every condition in `plan`; return the condition names.

    A plan item is (suite, spec) or (suite, spec, limit). `limit` keeps the first `limit`
    cases of each condition (an item's own limit wins); `resources` reaches every play (e.g.
    model-harness settings); `labels` name the conditions in progress reports.
    """
    limits = limits or Limits()
    check_executor(executor, workers)
    items = [(it[0], it[1], it[2] if len(it) > 2 else limit) for it in plan]
    names = [register(run, suite, spec) for suite, spec, _ in items]
    todo: list[tuple[Suite, Any, str, list[Case]]] = []
    counts = []
    for (suite, spec, lim), cond in zip(items, names, strict=True):
        cases = suite.cases(spec, lim)
        keys = {c.key for c in cases}
        if len(keys) != len(cases):
            raise RunDirError(f"condition {cond} has two cases with one key")
        missing = [c for c in cases if not run.has_episode(cond, c.key)]
        counts.append((len(cases), len(cases) - len(missing)))
        if missing:
            todo.append((suite, spec, cond, missing))

    def started() -> None:
        for k, (cond, (n, done)) in enumerate(zip(names, counts, strict=True)):
            if progress:
                progress.start(cond, labels[k] if labels else cond, n, done)

    if not todo:
        started()
        return names
    ctx = PlayContext(str(run.path), resources, limits, in_flight)
    total = [limits.spent]

    def save(cond: str, done: list[Finished]) -> None:
        for f in done:
            total[0] += f.cost
            if f.keep:
                run.write_episode_text(cond, f.key, f.text)
        if progress and done:
            progress.advance(cond, len(done))

    with make_executor(executor, workers) as ex:
        started()  # once the executor is up: a cluster that cannot be reached draws no bars
        if ex.name == "local":
            _run_inline(todo, ctx, save)
        else:
            _run_units(ex, todo, ctx, total, save)
    return names


def run_condition(run: RunDir, suite: Suite, spec: Any, **options: Any) -> str:
    """Play the missing cases of one condition (options as `run_conditions`); return its
    name."""
    return run_conditions(run, [(suite, spec)], **options)[0]


def _run_inline(todo: list[tuple[Suite, Any, str, list[Case]]], ctx: PlayContext,
                save: Callable[[str, list[Finished]], None]) -> None:
    """Play each condition whole in this process, writing each episode as it ends."""
    meter = current_meter() or Meter()
    token = metered(meter)
    try:
        for suite, spec, cond, cases in todo:
            if ctx.limits.over_cost(meter):
                return
            for case, traj in _iterate(suite.play(spec, cases, ctx)):
                save(cond, [finished(case, traj, ctx.limits)])
                if ctx.limits.over_cost(meter):
                    break
    finally:
        unmetered(token)


def _run_units(ex: Executor, todo: list[tuple[Suite, Any, str, list[Case]]],
               ctx: PlayContext, total: list[float],
               save: Callable[[str, list[Finished]], None]) -> None:
    """Cut the work into units and let the executor play them; stop dispatching at the
    cost limit."""

    def units() -> Iterator[Unit]:
        for suite, spec, cond, cases in todo:
            size = max(1, suite.unit_size(spec))
            # spread a small condition over every worker rather than into one unit
            size = min(size, max(1, -(-len(cases) // ex.workers)))
            for a in range(0, len(cases), size):
                limits = replace(ctx.limits, spent=total[0])
                if limits.over_cost(None):
                    return
                yield Unit(suite, spec, cond, cases[a:a + size], replace(ctx, limits=limits))

    for cond, played in ex.map(_play_tagged, units()):
        save(cond, played)


def _play_tagged(unit: Unit) -> tuple[str, list[Finished]]:
    return unit.condition, play_unit(unit)


async def play_concurrently(cases: list[Case], one: Callable[[Case], Awaitable[Trajectory]],
                            ctx: PlayContext) -> AsyncIterator[Played]:
    """Yield (case, trajectory) as each episode ends, at most `ctx.in_flight` at once.

    Cases not yet started when the run's cost limit is reached are skipped (a rerun plays
    them)."""
    gate = asyncio.Semaphore(ctx.in_flight)

    async def guarded(case: Case) -> Played | None:
        async with gate:
            if ctx.limits.over_cost(current_meter()):
                return None
            return case, await one(case)

    tasks = [asyncio.ensure_future(guarded(c)) for c in cases]
    try:
        for fut in asyncio.as_completed(tasks):
            played = await fut
            if played is not None:
                yield played
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def condition_values(run: RunDir, condition: str, metrics: Callable[[Trajectory], dict],
                     keys: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Return {metric: per-episode values} of a condition, recomputed from its trajectories
    (only the episodes `keys`, when given)."""
    out: dict[str, list[Any]] = {}
    for key in run.episode_keys(condition) if keys is None else keys:
        for name, v in metrics(run.load_episode(condition, key)).items():
            out.setdefault(name, []).append(v)
    return out
