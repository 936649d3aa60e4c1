"""Counterfactual seats: who plays one seat from a given step on, in a replay of an episode.

Failure attribution (docs/attribution.md) replays a saved episode from its seed and, from step
`step` on, lets a reference play seat `seat` while the other seats play their own policies.
The replay sets the swap for the duration of one episode (`swapped`, a ContextVar, so
concurrent episodes and other threads never see it) and each family's team reads it where
it builds its minds:

- `clean`: the seat's own mind with its injected failures (`agents.team.dials`) turned off
  from `step` on. Its memory and its claims are the ones it had; only the dials stop.
- `rule`, `hungarian`, `expert`: the family's reference mind takes the seat over at
  `step`. Until then it shadows the seat: it is shown every observation and message and
  asked every question, and its answers are dropped, so at `step` it holds the state a
  reference that had played along would hold (a shadowing rule mind costs no model call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from coordbench.errors import ConfigError

REFERENCES = ("clean", "rule", "hungarian", "expert")


@dataclass(frozen=True)
class Swap:
    """Seat `seat` is played by `reference` from team step `step` on."""

    seat: int
    step: int
    reference: str = "clean"

    def __post_init__(self) -> None:
        if self.reference not in REFERENCES:
            raise ConfigError(f"--reference {self.reference}: choose from "
                              f"{', '.join(REFERENCES)}")


_CURRENT: ContextVar[Swap | None] = ContextVar("coordbench_counterfactual", default=None)


def current() -> Swap | None:
    """Return the swap of the replay being played here (None outside a replay)."""
    return _CURRENT.get()


@contextmanager
def swapped(swap: Swap | None) -> Iterator[None]:
    """Play what runs inside with `swap` in force (None: the episode as recorded)."""
    token = _CURRENT.set(swap)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def faults_off(agent: int, t: int) -> bool:
    """Return whether the current replay turns seat `agent`'s injected failures off at step
    `t` (the `clean` reference, from its step on)."""
    s = _CURRENT.get()
    return s is not None and s.reference == "clean" and s.seat == agent and t >= s.step


def swap_for(n: int, offered: Mapping[str, Any], family: str) -> Swap | None:
    """Return the current swap where it replaces a mind of an `n`-seat team (None: no swap,
    or `clean`, which the dials apply); ConfigError names a seat out of range or a reference
    the family does not offer (`offered`: the references it builds)."""
    s = _CURRENT.get()
    if s is None:
        return None
    if not 0 <= s.seat < n:
        raise ConfigError(f"seat agent_{s.seat}: the team has seats agent_0..agent_{n - 1}")
    if s.reference == "clean":
        return None
    if s.reference not in offered:
        raise ConfigError(f"--reference {s.reference}: a {family} seat's references are "
                          f"{', '.join(['clean', *offered])}")
    return s


class SwitchMind:
    """A protocol mind (`agents.team.protocols.Mind`) that is `original` until team step
    `step` and `reference` from then on; the reference shadows the original before (asked
    everything, its answers dropped) and the original is not asked after (a model seat stops
    calling its model)."""

    def __init__(self, original: Any, reference: Any, step: int) -> None:
        self.original, self.reference, self.step = original, reference, step
        self.agent = original.agent
        self.t = 0  # team steps decided so far: every mind acts once a step

    def _now(self, obs: Any) -> int:
        # the observation's own step where it has one (a team may skip a step on which
        # every action is forced), else the steps decided so far
        t = getattr(obs, "t", None)
        return t if isinstance(t, int) else self.t

    def _taken(self, obs: Any) -> bool:
        return self._now(obs) >= self.step

    def _both(self, method: str, obs: Any, *args: Any) -> Any:
        if self._taken(obs):
            return getattr(self.reference, method)(obs, *args)
        getattr(self.reference, method)(obs, *args)  # the shadow keeps up; answer dropped
        return getattr(self.original, method)(obs, *args)

    def speak(self, obs: Any, phase: str, inbox: list, rnd: int) -> Any:
        """Return the seat's message for a communicate phase (see `Mind.speak`)."""
        return self._both("speak", obs, phase, inbox, rnd)

    def assign(self, obs: Any, inbox: list, views: Any) -> Any:
        """Return the leader's instructions (see `Mind.assign`)."""
        return self._both("assign", obs, inbox, views)

    def update_memory(self, obs: Any, board: dict[str, Any]) -> Any:
        """Return the shared board after the seat's update (see `Mind.update_memory`); the
        shadow writes on a copy, so its answer never reaches the board."""
        import copy

        if self._taken(obs):
            return self.reference.update_memory(obs, board)
        self.reference.update_memory(obs, copy.deepcopy(board))
        return self.original.update_memory(obs, board)

    def act(self, obs: Any, inbox: list) -> Any:
        """Return the seat's decision this step (see `Mind.act`)."""
        out = self._both("act", obs, inbox)
        self.t = self._now(obs) + 1
        return out

    def __getattr__(self, name: str) -> Any:
        # a family reads its own attributes of a mind (its faults, what it holds): the
        # mind that plays the seat now answers
        if name in ("original", "reference", "step", "t", "agent"):
            raise AttributeError(name)
        return getattr(self.reference if self.t >= self.step else self.original, name)


def switch_minds(minds: list[Any], references: Mapping[str, Callable[[int], Any]],
                 family: str) -> list[Any]:
    """Return `minds` with the current swap's seat played by a SwitchMind onto the
    reference `references[name](seat)` builds (the same list outside a replay, or for the
    `clean` reference, which the dials apply)."""
    s = swap_for(len(minds), references, family)
    if s is None:
        return minds
    out = list(minds)
    out[s.seat] = SwitchMind(minds[s.seat], references[s.reference](s.seat), s.step)
    return out
