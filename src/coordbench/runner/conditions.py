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

Provider failures: an episode errored by one (see `episode.ProviderFailed`) is kept under
RUN/errors/, never counted, and replayed by the next run. `Limits.fail_fast` stops the run at
the first one; after `Limits.breaker` of them in a row no further episode starts. Episode files
that cannot be counted on resume (truncated, unreadable, another case's) are set aside under
RUN/damaged/ and replayed; half-written temporaries of a killed command are removed.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.errors import RunDirError

from .episode import (
    CUT_SHORT,
    PROVIDER_FAILURE,
    SEAT_LEFT,
    Limits,
    Meter,
    ProviderFailed,
    current_meter,
    metered,
    unmetered,
)
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


def register(run: RunDir, suite: Suite, spec: Any, settings: dict[str, Any] | None = None
             ) -> str:
    """Record the condition of `spec` in the manifest with its suite and the run `settings`
    that change its episodes (a step cap, say; only those that are set); return its name.

    Resuming with other settings is refused (RunDirError naming them), never mixed. A
    manifest written by an earlier coordbench that recorded fewer fields for the same
    condition (no suite, or a field added since with its default) is brought up to date.
    """
    cond = suite.condition(spec)
    admits = getattr(suite, "admits", None)  # a suite may refuse to share a run directory
    if admits is not None:
        admits(run, spec)
    # as the manifest holds them (JSON: a tuple of seats reads back as a list), so that a
    # resumed condition compares equal to what was written
    fields = _as_json({"suite": suite.name, **suite.manifest(spec),
                       **{k: v for k, v in (settings or {}).items() if v is not None}})
    old = run.conditions.get(cond)
    if old is not None and old != fields:
        added = fields.keys() - old.keys()
        if all(old[k] == fields.get(k) for k in old) and all(
                k == "suite" or fields[k] is None for k in added):
            run.conditions[cond] = fields
            run.save_manifest()
        else:
            diff = [f"{k}={old.get(k)!r}, not {fields.get(k)!r}"
                    for k in sorted(old.keys() | fields.keys()) if old.get(k) != fields.get(k)]
            raise RunDirError(f"condition {cond} in {run.path} was run with "
                              f"{'; '.join(diff)[:300]}; rerun with those settings or "
                              "choose a new --out directory")
    run.register(cond, fields)
    return cond


def _as_json(value: Any) -> Any:
    """Return `value` with tuples as lists, recursively (what JSON gives back)."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    return value


def spent(trajectory: Trajectory) -> float:
    """Return what an episode's model calls cost (cache hits cost nothing)."""
    return sum(c.cost for c in trajectory.steps(ModelCallEvent) if not c.cache_hit)


def call_stats(trajectory: Trajectory) -> dict[str, float]:
    """Return the model-harness counters of one episode's calls (calls, cache hits, attempts
    sent to the provider, retries, failed calls, tokens, cost)."""
    calls = trajectory.steps(ModelCallEvent)
    return {"calls": len(calls), "cache_hits": sum(c.cache_hit for c in calls),
            "attempts": sum(c.attempts for c in calls),
            "retries": sum(max(0, c.attempts - 1) for c in calls),
            "failures": sum(c.error is not None for c in calls),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "cost": sum(c.cost for c in calls if not c.cache_hit)}


def errored(trajectory: Trajectory) -> str | None:
    """Return why this episode errored (a provider failure, or cut short when its run
    stopped), or None if it is a result."""
    end = trajectory.end
    if end is not None and end.termination == "error" and (end.detail or "").startswith(
            (PROVIDER_FAILURE, SEAT_LEFT, CUT_SHORT)):
        return end.detail
    return None


@dataclass(frozen=True)
class Finished:
    """A finished episode as it travels back to the driver: already serialized (the workers
    do the JSON work), what it cost, whether it is kept (an episode cut short by the cost
    limit is not), the provider failure that errored it, and its model-call counters."""

    key: str
    text: str
    cost: float
    keep: bool
    error: str | None = None
    stats: dict[str, float] | None = None
    prompts: dict[str, str] | None = None  # request hash -> prompt JSON (RUN/prompts/)


def finished(case: Case, traj: Trajectory, limits: Limits) -> Finished:
    """Return the episode of `case` ready to be written."""
    if traj.end is None:
        raise RunDirError(f"episode {case.key} is incomplete (no episode_end)")
    end = traj.end
    cut = (limits.cost_limit is not None and end.termination == "normal_stop"
           and end.detail == limits.cost_reason())
    return Finished(case.key, traj.to_jsonl(), spent(traj), not cut, errored(traj),
                    call_stats(traj), dict(traj.prompts) or None)


class ErrorGate:
    """Decides when provider failures stop a run: at the first with `fail_fast`, else after
    `breaker` errored episodes in a row (a result in between resets the count)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.in_a_row = 0
        self.stopped = False

    def note(self, error: str | None, stop_run: bool = False) -> None:
        """Count one finished episode (`error`: its provider failure, if any)."""
        if error is None:
            self.in_a_row = 0
            return
        self.in_a_row += 1
        breaker = self.limits.breaker
        if stop_run or self.limits.fail_fast or (breaker is not None and
                                                 self.in_a_row >= breaker):
            self.stopped = True


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

    A plan item is (suite, spec) or (suite, spec, limit). `limit` plays `limit` cases of
    each condition, those its suite's `cases(spec, limit)` gives (an item's own limit wins:
    the first episodes, or a stratified sample of household and construct cases);
    `resources` reaches every play (e.g.
    model-harness settings); `labels` name the conditions in progress reports.
    """
    limits = limits or Limits()
    check_executor(executor, workers)
    with run.lock():
        return _run_locked(run, plan, executor, workers, limit, resources, limits, in_flight,
                           labels, progress)


def _run_locked(run: RunDir, plan: Sequence[tuple], executor: str, workers: int,
                limit: int | None, resources: Any, limits: Limits, in_flight: int,
                labels: Sequence[str] | None, progress: Progress | None) -> list[str]:
    items = [(it[0], it[1], it[2] if len(it) > 2 else limit) for it in plan]
    settings = {**(resources.identity() if hasattr(resources, "identity") else {}),
                "max_tokens_per_episode": limits.max_tokens_per_episode}
    names = [register(run, suite, spec, settings) for suite, spec, _ in items]
    todo: list[tuple[Suite, Any, str, list[Case]]] = []
    counts = []
    for (suite, spec, lim), cond in zip(items, names, strict=True):
        cases = suite.cases(spec, lim)
        keys = {c.key for c in cases}
        if len(keys) != len(cases):
            raise RunDirError(f"condition {cond} has two cases with one key")
        run.remove_stale_temporaries(cond)
        missing = []
        for c in cases:
            problem = run.episode_problem(cond, c.key)
            if problem is not None:
                if problem != "missing":
                    run.set_aside(cond, c.key)  # replayed below; the old file is kept
                missing.append(c)
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
    gate = ErrorGate(limits)
    tally = Tally()

    def save(cond: str, done: list[Finished]) -> None:
        for f in done:
            total[0] += f.cost
            tally.add(f)
            for digest, prompt in (f.prompts or {}).items():
                run.write_prompt(digest, prompt)  # before the episode that names it
            if f.error is not None:
                run.write_errored(cond, f.key, f.text)
            elif f.keep:
                run.write_episode_text(cond, f.key, f.text)
            gate.note(f.error)
        if progress and done:
            progress.advance(cond, len(done))

    try:
        with make_executor(executor, workers) as ex:
            started()  # once the executor is up: a cluster that cannot be reached draws no bars
            if ex.name == "local":
                _run_inline(todo, ctx, save, gate)
            else:
                _run_units(ex, todo, ctx, total, save, gate)
    finally:
        if tally.stats["calls"] or tally.errored:
            tally.write(run)
    return names


def stats_entries(path: Path | str) -> list[dict[str, Any]]:
    """Return the run's harness_stats.json entries, one per command that called a model ([]
    where there is none or it cannot be read: it is derived, not a result, and a damaged one
    is replaced)."""
    import json

    f = Path(path) / "harness_stats.json"
    try:
        entries = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else []
    except (OSError, ValueError):
        return []
    return entries if isinstance(entries, list) else []


class Tally:
    """What one command's episodes did with models: the harness counters summed over every
    episode it finished (errored ones included), written to RUN/harness_stats.json."""

    def __init__(self) -> None:
        self.stats: dict[str, float] = dict.fromkeys(
            ("calls", "cache_hits", "attempts", "retries", "failures", "prompt_tokens",
             "completion_tokens", "cost"), 0)
        self.episodes = 0
        self.errored = 0

    def add(self, f: Finished) -> None:
        """Count one finished episode."""
        self.episodes += 1
        self.errored += f.error is not None
        for k, v in (f.stats or {}).items():
            self.stats[k] = self.stats.get(k, 0) + v

    def write(self, run: RunDir) -> None:
        """Append this command's entry to RUN/harness_stats.json."""
        import json
        from datetime import UTC, datetime

        entries = stats_entries(run.path)
        entries.append({"finished": datetime.now(UTC).isoformat(),
                        "command": run.command,
                        "episodes": self.episodes, "errored_episodes": self.errored,
                        **{k: round(v, 6) if isinstance(v, float) else v
                           for k, v in self.stats.items()}})
        run.write_text("harness_stats.json", json.dumps(entries, indent=1) + "\n")


def run_condition(run: RunDir, suite: Suite, spec: Any, **options: Any) -> str:
    """Play the missing cases of one condition (options as `run_conditions`); return its
    name."""
    return run_conditions(run, [(suite, spec)], **options)[0]


def _run_inline(todo: list[tuple[Suite, Any, str, list[Case]]], ctx: PlayContext,
                save: Callable[[str, list[Finished]], None], gate: ErrorGate) -> None:
    """Play each condition whole in this process, writing each episode as it ends."""
    meter = current_meter() or Meter()
    token = metered(meter)
    try:
        for suite, spec, cond, cases in todo:
            if ctx.limits.over_cost(meter) or gate.stopped:
                return
            cut: list[Played] = []
            here = replace(ctx, keep_cut=lambda case, traj, cut=cut: cut.append((case, traj)))
            for case, traj in _iterate(suite.play(spec, cases, here)):
                save(cond, [finished(case, traj, ctx.limits)])
                if ctx.limits.over_cost(meter) or gate.stopped:
                    break
            # episodes in flight when the run stopped: errored, their model calls on record
            save(cond, [finished(case, traj, ctx.limits) for case, traj in cut])
    finally:
        unmetered(token)


def _run_units(ex: Executor, todo: list[tuple[Suite, Any, str, list[Case]]],
               ctx: PlayContext, total: list[float],
               save: Callable[[str, list[Finished]], None], gate: ErrorGate) -> None:
    """Cut the work into units and let the executor play them; stop dispatching at the
    cost limit or when provider failures stop the run."""

    def units() -> Iterator[Unit]:
        for suite, spec, cond, cases in todo:
            size = max(1, suite.unit_size(spec))
            # spread a small condition over every worker rather than into one unit
            size = min(size, max(1, -(-len(cases) // ex.workers)))
            for a in range(0, len(cases), size):
                limits = replace(ctx.limits, spent=total[0])
                if limits.over_cost(None) or gate.stopped:
                    return
                yield Unit(suite, spec, cond, cases[a:a + size], replace(ctx, limits=limits))

    for cond, played in ex.map(_play_tagged, units()):
        save(cond, played)


def _play_tagged(unit: Unit) -> tuple[str, list[Finished]]:
    return unit.condition, play_unit(unit)


async def play_concurrently(cases: list[Case], one: Callable[[Case], Awaitable[Trajectory]],
                            ctx: PlayContext) -> AsyncIterator[Played]:
    """Yield (case, trajectory) as each episode ends, at most `ctx.in_flight` at once.

    Cases not yet started when the run's cost limit is reached, or when provider failures
    stop the run (`ErrorGate`), are skipped (a rerun plays them). An episode a provider
    failure ended is yielded errored (see `episode.ProviderFailed`)."""
    slots = asyncio.Semaphore(ctx.in_flight)
    errors = ErrorGate(ctx.limits)

    async def guarded(case: Case) -> Played | None:
        async with slots:
            if ctx.limits.over_cost(current_meter()) or errors.stopped:
                return None
            try:
                traj = await one(case)
            except asyncio.CancelledError as e:
                cut = getattr(e, "trajectory", None)
                if cut is not None and ctx.keep_cut is not None:
                    ctx.keep_cut(case, cut)  # the run stopped: its calls stay on record
                raise
            except ProviderFailed as e:
                if e.trajectory is None:
                    raise
                errors.note(str(e), e.stop_run)
                return case, e.trajectory
            errors.note(None)
            return case, traj

    tasks = [asyncio.ensure_future(guarded(c)) for c in cases]
    taken: set[str] = set()
    try:
        for fut in asyncio.as_completed(tasks):
            played = await fut
            if played is not None:
                taken.add(played[0].key)
                yield played
    finally:
        for t in tasks:
            t.cancel()
        ends = await asyncio.gather(*tasks, return_exceptions=True)
        # episodes that ended after the run stopped taking them: still played and paid for
        for end in ends:
            if isinstance(end, tuple) and end[0].key not in taken and ctx.keep_cut:
                ctx.keep_cut(*end)


def condition_values(run: RunDir, condition: str, metrics: Callable[[Trajectory], dict],
                     keys: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Return {metric: per-episode values} of a condition, recomputed from its trajectories
    (only the episodes `keys`, when given)."""
    out: dict[str, list[Any]] = {}
    for key in run.episode_keys(condition) if keys is None else keys:
        for name, v in metrics(run.load_episode(condition, key)).items():
            out.setdefault(name, []).append(v)
    return out
