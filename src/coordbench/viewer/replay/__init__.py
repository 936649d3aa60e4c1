"""The state of an episode at every step, rebuilt by replaying its recorded actions through
the family's own engine (household, STAT and construct episodes store no states).

One module per family: `stat` (the reference STAT environment), `mecobench` and `constructs`
(the household engine, through `household`), `physical` (no replay: the recorded poses,
one state per pose sample, and the phase and coupling events are the state).

`picture(run, condition, trajectory)` returns `{"kind", "static", "states", "replay"}`:
`states[s]` is the state after s steps (s = 0 is the start); `replay` says whether the replay
reproduced every recorded outcome (`ok`), how many it checked, the first mismatch, or why no
replay was possible (`available: false` with the reason: the page shows it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.errors import CoordbenchError

Picture = dict[str, Any]


def unavailable(kind: str, why: str) -> Picture:
    """Return the picture of an episode whose state cannot be rebuilt, saying why."""
    return {"kind": kind, "static": None, "states": [],
            "replay": {"available": False, "ok": False, "reason": why}}


def _builders() -> dict[str, Callable[[RunDir, str, Trajectory], Picture]]:
    from . import constructs, mecobench, physical, stat

    return {"stat": stat.picture, "mecobench": mecobench.picture,
            "constructs": constructs.picture, "physical": physical.picture}


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the per-step picture of `traj` for its family (see the module docstring)."""
    build = _builders().get(traj.header.suite)
    if build is None:
        return unavailable(traj.header.suite, f"no picture for suite {traj.header.suite!r}")
    try:
        return build(run, condition, traj)
    except (CoordbenchError, KeyError, ValueError, TypeError, IndexError, OSError) as e:
        # a header from another coordbench, a task file moved away: say so, show the rest
        return unavailable(traj.header.suite, f"cannot replay: {type(e).__name__}: {e}")
