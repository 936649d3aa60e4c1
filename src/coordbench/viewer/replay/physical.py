"""Physical states: no replay (re-simulating MuJoCo is not the viewer's job). The phase and
coupling events are the state: at control step t the picture shows which phases have latched
and which coupling events happened. A pose-recording event, once trajectories carry one, adds
`poses` to each state here; the page draws them when present."""

from __future__ import annotations

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import PhysicalCouplingEvent, PhysicalPhaseEvent, Trajectory

from . import Picture


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the phase picture of a physical episode (states are indexed by control step
    through `phase_at`, not stored per step: an episode has hundreds of control steps)."""
    p = traj.header.params
    collab = list(p.get("collaborative") or [])
    until = int(p.get("until_phase", len(collab) or 3))
    phases = [{"phase": e.phase, "name": e.name, "t": e.t, "collaborative": e.collaborative}
              for e in traj.steps(PhysicalPhaseEvent)]
    coupling = [{"t": e.t, "kind": e.kind, "robots": e.robots, "value": e.value}
                for e in traj.steps(PhysicalCouplingEvent)]
    static = {"phases": until, "start_phase": int(p.get("start_phase", 0)),
              "collaborative": collab, "control_dt": p.get("control_dt"),
              "latched": phases, "coupling": coupling,
              "robots": len(traj.header.team), "poses": None}
    return {"kind": "physical", "static": static, "states": [],
            "replay": {"available": False, "ok": True,
                       "reason": "physical episodes record phases and coupling events, not "
                                 "poses; the picture shows the phase timeline"}}
