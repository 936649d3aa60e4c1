"""The decisive step of one seat: the last step from which taking the seat over still
rescues the episode.

`rescues(s)` replays the episode with the seat taken over from step s. Taking it over from
the first step (s = 0) decides whether the seat is responsible at all. The step at which the
episode ended is asked too (a team that stopped because it believed the work done decided
to stop there); after it nothing is left to change. `all` asks every step;
`binary` assumes that a seat taken over earlier rescues at least as often as later (what a
failure that cannot be undone implies) and finds the boundary in log2(T) replays.
"""

from __future__ import annotations

from collections.abc import Callable

STEPS = ("all", "binary")


def decisive_step(rescues: Callable[[int], bool], steps: int, how: str = "binary"
                  ) -> int | None:
    """Return the last step in [0, `steps`) from which `rescues` holds (None: taking the
    seat over from the first step does not rescue, so the seat is not responsible). An
    episode that ended at step T has T + 1 steps to ask: 0..T."""
    if how not in STEPS:
        raise ValueError(f"how must be one of {STEPS}, not {how!r}")
    if steps <= 0 or not rescues(0):
        return None
    if how == "all":
        return max(s for s in range(steps) if s == 0 or rescues(s))
    lo, hi = 0, steps  # rescues(lo); from `steps` on nothing is left to change
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rescues(mid):
            lo = mid
        else:
            hi = mid
    return lo
