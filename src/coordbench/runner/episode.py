"""One episode's record for every family: the header, the events, model calls and the end.

A family's episode loop opens a `Recorder` with what the episode is, emits its events, and
calls `finish` with how it ended. The header's provenance and the end event are built here and
nowhere else. While a recorder is open (`with recorder:`), it is the current one of its context
(a ContextVar, like inspect_ai's transcript), so the model layer records each call into the
episode that made it without the family collecting calls by hand; concurrent episodes of one
event loop each see their own recorder.

A `Meter` adds up what the episodes of one work unit spent on models, so a run-wide cost limit
can be checked inside a worker as well as by the driver.

A model call that fails for the provider's reasons (authentication, an unreachable endpoint,
retries exhausted) raises `ProviderFailed` through the episode. The recorder closes the episode
as *errored* (termination "error", the calls so far kept for inspection) and hands it on with
the exception: it is not a result, and the condition engine replays it on the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, TypeVar

from coordbench.core.provenance import git_sha, version
from coordbench.core.trajectory import (
    AgentSpec,
    EpisodeEndEvent,
    ModelCallEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.errors import ConfigError

T = TypeVar("T")

PROVIDER_FAILURE = "provider failure: "  # how an errored episode's end detail begins
# how the end detail of an episode cut when its run stopped begins (errored too: not a result,
# replayed by a rerun; kept for the model calls it made)
CUT_SHORT = "cut short: "
SEAT_LEFT = "seat left: "  # a person's seat went unplayed (the play page closed or timed out)


class ProviderFailed(Exception):
    """A model call failed for the provider's reasons; the episode cannot be a result.

    `stop_run`: the harness's circuit breaker is open (too many provider failures in a row),
    so no further episode should start. `trajectory` is set by the recorder the exception
    passed through: the errored episode."""

    detail_prefix = PROVIDER_FAILURE  # how the errored episode's end detail begins

    def __init__(self, message: str, *, stop_run: bool = False) -> None:
        super().__init__(message)
        self.stop_run = stop_run
        self.trajectory: Trajectory | None = None


_CURRENT: ContextVar[Recorder | None] = ContextVar("coordbench_recorder", default=None)
_METER: ContextVar[Meter | None] = ContextVar("coordbench_meter", default=None)


@dataclass
class Meter:
    """Model spend of the episodes played under it (cache hits cost nothing)."""

    cost: float = 0.0
    tokens: int = 0


@dataclass(frozen=True)
class Limits:
    """What may stop an episode before its own end: a run-wide model spend and a per-episode
    token budget. `spent` is what the run had spent before this work unit began. What stops
    a run on provider failures: the first (`fail_fast`), or `breaker` errored episodes in a
    row (None: never)."""

    cost_limit: float | None = None
    max_tokens_per_episode: int | None = None
    spent: float = 0.0
    fail_fast: bool = False
    breaker: int | None = 5

    def __post_init__(self) -> None:
        if self.cost_limit is not None and not self.cost_limit > 0:
            raise ConfigError(f"--cost-limit must be > 0 dollars, got {self.cost_limit}")
        if self.max_tokens_per_episode is not None and self.max_tokens_per_episode < 1:
            raise ConfigError("--max-tokens-per-episode must be >= 1, got "
                              f"{self.max_tokens_per_episode}")
        if self.breaker is not None and self.breaker < 1:
            raise ConfigError(f"--breaker must be >= 1, got {self.breaker}")

    def cost_reason(self) -> str:
        """Return the stop reason an episode cut short by the cost limit records."""
        return f"cost limit ${self.cost_limit:g} reached"

    def over_cost(self, meter: Meter | None) -> bool:
        """Return whether the run's spend (before this unit plus `meter`) reached the limit."""
        if self.cost_limit is None:
            return False
        return self.spent + (meter.cost if meter else 0.0) >= self.cost_limit


class Recorder:
    """Builds one trajectory: header fields at the start, events as they happen, the end."""

    def __init__(self, *, suite: str, episode_id: str, task_id: str, seed: int,
                 team: list[AgentSpec], protocol: str | None = None, policy: str | None = None,
                 models: dict[str, str] | None = None, params: dict[str, Any] | None = None,
                 limits: Limits | None = None) -> None:
        self.header = {"episode_id": episode_id, "suite": suite, "task_id": task_id,
                       "seed": int(seed), "team": team, "protocol": protocol, "policy": policy,
                       "models": dict(models or {}), "params": dict(params or {})}
        self.events: list = []
        self.t = 0
        self.tokens = 0
        self.limits = limits or Limits()
        self._calls: list[Any] = []
        self._token: Token | None = None
        # request hash -> the prompt's JSON text: stored beside the run, once per request
        self.prompts: dict[str, str] = {}

    # -- the current recorder ------------------------------------------------------------------
    def __enter__(self) -> Recorder:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None
        if isinstance(exc, ProviderFailed) and exc.trajectory is None:
            exc.trajectory = self.errored(str(exc), exc.detail_prefix)
        elif isinstance(exc, asyncio.CancelledError):
            # the run stopped while this episode played: keep what it did (its model calls
            # were sent and may be billed) as an errored episode the run can save
            exc.trajectory = self.cut_short(  # type: ignore[attr-defined]
                "the run stopped while this episode played")

    # -- events ----------------------------------------------------------------------------------
    def emit(self, *events: Any) -> None:
        """Append events in order."""
        self.events.extend(events)

    def reserve_call(self) -> dict[str, Any]:
        """Hold a place for a model call that is starting: calls are recorded in the order
        they were made, not the order their replies came back, so concurrent calls of one
        step keep one order whatever the timing."""
        slot: dict[str, Any] = {}
        self._calls.append(slot)
        return slot

    def model_call(self, fields: dict[str, Any], slot: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
        """Hold one model call (the fields of a model_call event, in `slot` if one was
        reserved) until `flush_calls`; return the record, which the caller may still complete
        (parse status)."""
        if slot is None:
            slot = {}
            self._calls.append(slot)
        slot.update(fields)
        tokens = int(fields.get("prompt_tokens", 0)) + int(fields.get("completion_tokens", 0))
        self.tokens += tokens
        meter = _METER.get()
        if meter is not None and not fields.get("cache_hit"):
            meter.cost += float(fields.get("cost", 0.0))
            meter.tokens += tokens
        return slot

    def hold(self, event: Any) -> None:
        """Hold a decision event of this step (a person's, `HumanDecisionEvent`) to be
        emitted with the step's model calls, in the order decisions were made."""
        self._calls.append(event)

    def flush_calls(self) -> None:
        """Emit the held model calls (and held decisions) as events of step `t`."""
        # an empty slot is a call that never returned (its episode was cancelled)
        self.events.extend(c if not isinstance(c, dict) else ModelCallEvent(t=self.t, **c)
                           for c in self._calls if c)
        self._calls.clear()

    @property
    def tokens_exhausted(self) -> bool:
        """Return whether the episode has spent its token budget."""
        cap = self.limits.max_tokens_per_episode
        return cap is not None and self.tokens >= cap

    def stop_reason(self) -> str | None:
        """Return why the episode must stop now (token budget, run cost limit), or None."""
        if self.tokens_exhausted:
            return f"token budget of {self.limits.max_tokens_per_episode} exhausted"
        if self.limits.over_cost(_METER.get()):
            return self.limits.cost_reason()
        return None

    def errored(self, reason: str, prefix: str = PROVIDER_FAILURE) -> Trajectory:
        """Return the trajectory so far, closed as errored (termination "error") because a
        model call failed for the provider's reasons (or, with `prefix` SEAT_LEFT, the
        person's seat went unplayed)."""
        self.flush_calls()
        end = EpisodeEndEvent(t=self.t, success=False, termination="error",
                              detail=prefix + reason)
        return self._trajectory(end)

    def cut_short(self, reason: str) -> Trajectory:
        """Return the trajectory so far, closed as errored because it was cut from outside
        (the run stopped): not a result, kept for the model calls it made."""
        self.flush_calls()
        end = EpisodeEndEvent(t=self.t, success=False, termination="error",
                              detail=CUT_SHORT + reason)
        return self._trajectory(end)

    def _trajectory(self, end: EpisodeEndEvent) -> Trajectory:
        header = TrajectoryHeader(**self.header, coordbench_version=version(), git_sha=git_sha())
        traj = Trajectory(header=header, events=[*self.events, end])
        traj.prompts.update(self.prompts)
        return traj

    def finish(self, t: int, *, success: bool, stop: str | None = None,
               detail: str | None = None, protocol_failure: str | None = None) -> Trajectory:
        """Return the trajectory, closed by its episode_end event.

        success -> termination success; else `protocol_failure` (why the team's protocol
        broke) -> protocol_failure with that reason; else `stop` (a reason the episode was
        ended early) -> normal_stop with that reason; else truncated with `detail`.
        """
        self.flush_calls()
        if success:
            end = EpisodeEndEvent(t=t, success=True, termination="success")
        elif protocol_failure:
            end = EpisodeEndEvent(t=t, success=False, termination="protocol_failure",
                                  detail=protocol_failure)
        elif stop:
            end = EpisodeEndEvent(t=t, success=False, termination="normal_stop", detail=stop)
        else:
            end = EpisodeEndEvent(t=t, success=False, termination="truncated", detail=detail)
        return self._trajectory(end)


def current_recorder() -> Recorder | None:
    """Return the recorder of the episode running in this context, if any."""
    return _CURRENT.get()


def reserve_model_call() -> dict[str, Any] | None:
    """Hold the place of a starting model call in the current episode (None outside one)."""
    rec = _CURRENT.get()
    return rec.reserve_call() if rec is not None else None


def record_model_call(fields: dict[str, Any], slot: dict[str, Any] | None = None,
                      prompt: str | None = None) -> dict[str, Any]:
    """Record one model call into the current episode (if one is open), in its reserved
    `slot` if any, with its prompt's JSON text (kept under RUN/prompts/ by request hash);
    return the record."""
    rec = _CURRENT.get()
    if rec is None:
        return fields
    if prompt is not None and fields.get("request_hash"):
        rec.prompts.setdefault(fields["request_hash"], prompt)
    return rec.model_call(fields, slot)


def metered(meter: Meter) -> Token:
    """Make `meter` count the model spend of this context; return the token to reset it."""
    return _METER.set(meter)


def unmetered(token: Token) -> None:
    """Undo `metered` (the token it returned)."""
    _METER.reset(token)


def current_meter() -> Meter | None:
    """Return the meter of this context, if any."""
    return _METER.get()


async def gather_all(*aws: Awaitable[T]) -> list[T]:
    """Return the results of `aws` run concurrently; where one raises, cancel the others and
    wait for them before raising it, so that an episode's record (the attempts of its cut
    model calls among it) never depends on their timing."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
