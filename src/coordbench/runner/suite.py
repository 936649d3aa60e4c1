"""The contracts a benchmark family implements to run on the one runner.

- `Suite`: a family's name, the cases of one of its conditions, how to play a list of cases
  (batched in lockstep, or concurrently for model-driven teams), and its metrics over a
  trajectory. Its report section lives in `coordbench.report`, registered under the same name.
- `Team`: who decides in an episode. Teams have the same two verbs, `reset` and `act`; what
  they observe and return stays the family's own (a household team's `StepView` -> `Turn`,
  a physical team's environments -> (n, 9) controls), as PettingZoo shares one API shape
  over per-environment spaces.

A spec is a frozen dataclass that names one condition; it travels to worker processes (and to
Ray workers) by pickling, so it holds plain data. A suite object is stateless and pickles by
reference to its class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from coordbench.core.trajectory import Trajectory

from .episode import Limits

S = TypeVar("S")
Obs = TypeVar("Obs", contravariant=True)
Act = TypeVar("Act", covariant=True)


@dataclass(frozen=True)
class Case:
    """One episode to play: its file key inside the condition and what the suite needs."""

    key: str
    data: Any = None


class HarnessSource(Protocol):
    """What a worker turns into a model harness (`llm.harness_for`): the harness's settings,
    which pickle to any worker, or a harness already made in this process."""


class SeatSession(Protocol):
    """The person's seat of `coordbench play` (`play.session.SeatSession`), as an episode
    sees it: the seat it serves and the one verb that asks the person."""

    seat: int

    async def ask(self, episode: str, t: int, phase: str, view: dict[str, Any],
                  choices: list[dict[str, Any]] | None = None, free_text: bool = False
                  ) -> tuple[Any, float]:
        """Return (the answer, seconds the person took) to a question."""


@dataclass(frozen=True)
class ModelResources:
    """Run-wide options of model-driven play that do not name a condition: the
    model-harness settings (or a ModelHarness when played in this process) and a per-reply
    token cap. A family that needs more (MECoBench: rendered views, a step cap) extends it."""

    harness: HarnessSource | None = None
    max_reply_tokens: int | None = None
    # the person's seat of `coordbench play`; None elsewhere
    seat: SeatSession | None = None

    def identity(self) -> dict[str, Any]:
        """Return the options that change the episodes (recorded with each condition)."""
        return {"max_reply_tokens": self.max_reply_tokens}


# A family's run-wide resources: ModelResources (or a family's extension of it), the
# harness's settings alone (the construct family's form), or None
Resources = ModelResources | HarnessSource | None


def harness_source(resources: Resources) -> HarnessSource | None:
    """Return the harness settings (or harness) `resources` carry (None: none)."""
    return resources.harness if isinstance(resources, ModelResources) else resources


def seat_session(resources: Resources) -> SeatSession | None:
    """Return the person's seat session `resources` carry (None: no person plays)."""
    return resources.seat if isinstance(resources, ModelResources) else None


@dataclass(frozen=True)
class PlayContext:
    """What a worker needs beyond the spec and the cases: where the run lives (images are
    stored there), the family's run-wide resources (e.g. model-harness settings), the limits,
    and how many model-driven episodes may be in flight at once."""

    run_path: str
    resources: Resources = None
    limits: Limits = field(default_factory=Limits)
    in_flight: int = 8
    # where the model-driven episodes a stopped run leaves are handed (cut short, or ended
    # after the run stopped taking them): this process only, the driver saves them with
    # their model calls on record; None elsewhere
    keep_cut: Callable[[Case, Trajectory], None] | None = None


Played = tuple[Case, Trajectory]


class Suite(Protocol, Generic[S]):
    """A benchmark family on the one runner."""

    name: str  # recorded in the manifest with every condition; reports dispatch on it
    headline: tuple[str, ...]  # the metrics a summary leads with

    def condition(self, spec: S) -> str:
        """Return the condition's name inside a run directory."""

    def manifest(self, spec: S) -> dict[str, Any]:
        """Return the spec's fields as recorded in the manifest (the suite name is added)."""

    def cases(self, spec: S, limit: int | None = None) -> list[Case]:
        """Return the condition's cases in order (`limit` of them: a household or construct
        suite draws a stratified sample, `core.sample`)."""

    def unit_size(self, spec: S) -> int:
        """Return how many cases a worker plays in one unit of work."""

    def play(self, spec: S, cases: list[Case], ctx: PlayContext
             ) -> Iterator[Played] | AsyncIterator[Played]:
        """Yield (case, trajectory) as each episode of `cases` ends (any order)."""

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return the episode's metrics (None where a metric does not apply)."""


@runtime_checkable
class Team(Protocol[Obs, Act]):
    """Who decides in an episode: the two verbs every family's teams share (a household or
    construct team on `suites.household_episode`, a physical team policy, a model-driven
    STAT team); STAT's scripted allocators stay batched functions `policy(env, rng)`."""

    name: str

    def reset(self, *args: Any, **kwargs: Any) -> None:
        """Start new episodes (the family says from what: environments, a task)."""

    def act(self, obs: Obs) -> Act | Awaitable[Act]:
        """Return the team's decision for the current step (may be a coroutine)."""
