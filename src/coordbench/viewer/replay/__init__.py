"""The state of an episode at every step, rebuilt by replaying its recorded actions through
the family's own engine (household, STAT and construct episodes store no states).

One module per family (each family record's `replay` names its `picture`): `stat` (the
reference STAT environment), `mecobench` and `constructs`
(the household engine, through `household`), `physical` (no replay: the recorded poses,
one state per pose sample, and the phase and coupling events are the state).

`picture(run, condition, trajectory)` returns `{"kind", "static", "states", "replay"}`:
`states[s]` is the state after s steps (s = 0 is the start); `replay` says whether the replay
reproduced every recorded outcome (`ok`), how many it checked, the first mismatch, or why no
replay was possible (`available: false` with the reason: the page shows it).
"""

from __future__ import annotations

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.errors import CoordbenchError
from coordbench.runner.family import family

from .common import Picture, unavailable

__all__ = ["Picture", "picture", "unavailable"]


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the per-step picture of `traj` for its family (see the module docstring),
    built by the family's `replay` piece."""
    f = family(traj.header.suite)
    build = f.get("replay") if f is not None else None
    if build is None:
        return unavailable(traj.header.suite, f"no picture for suite {traj.header.suite!r}")
    try:
        return build(run, condition, traj)
    except (CoordbenchError, KeyError, ValueError, TypeError, IndexError, OSError) as e:
        # a header from another coordbench, a task file moved away: say so, show the rest
        return unavailable(traj.header.suite, f"cannot replay: {type(e).__name__}: {e}")
