"""Physical-suite metrics as pure functions of trajectories (their physical_phase,
physical_event and episode_end events; a model-driven team's also its model_call events)."""

from __future__ import annotations

import numpy as np

from coordbench.core.stats import Estimate, estimate
from coordbench.core.trajectory import (
    ModelCallEvent,
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    Trajectory,
)


def phases_reached(tr: Trajectory) -> int:
    """Return the number of phases completed (phases latch in order, so this is the last)."""
    done = [e.phase for e in tr.steps(PhysicalPhaseEvent)]
    return max(done, default=int(tr.header.params.get("start_phase", 0)))


def episode_metrics(tr: Trajectory) -> dict[str, float]:
    """Return one rollout's numbers: success, p1-p3 reached (cumulative), failing phase,
    coupling events; for a model-driven team also `model_calls`, `tokens` (prompt +
    completion) and `protocol_failures` (calls whose reply gave no usable skill)."""
    reached = phases_reached(tr)
    until = int(tr.header.params.get("until_phase", 3))
    ev = tr.steps(PhysicalCouplingEvent)
    lag = [e.value for e in ev if e.kind == "partner_lag" and e.value is not None]
    out = {"success": float(reached >= until),
           "failed_phase": float(reached + 1) if reached < until else float("nan"),
           "drops": float(sum(e.kind == "drop" for e in ev)),
           "robot_collisions": float(sum(e.kind == "robot_collision" for e in ev)),
           "partner_lag_s": float(lag[0]) if lag else float("nan"),
           "steps": float(tr.end.t - int(tr.header.params.get("start_step", 0)))
           if tr.end else float("nan")}
    for p in (1, 2, 3):
        out[f"p{p}"] = float(reached >= p)
    if tr.header.models:
        calls = tr.steps(ModelCallEvent)
        out.update(model_calls=float(len(calls)),
                   tokens=float(sum(c.prompt_tokens + c.completion_tokens for c in calls)),
                   protocol_failures=float(sum(c.parse_status == "failed" for c in calls)))
    return out


# how each metric's interval is drawn (core.stats.estimate): success and phases reached are
# 0/1 outcomes (Wilson intervals)
KINDS = {"success": "binary", "p1": "binary", "p2": "binary", "p3": "binary"}


def summarize(trajectories: list[Trajectory]) -> dict[str, Estimate]:
    """Return mean and 95% CI over rollouts of every episode metric."""
    rows = [episode_metrics(t) for t in trajectories]
    keys = rows[0].keys() if rows else []
    return {k: estimate([r[k] for r in rows if not np.isnan(r[k])], KINDS.get(k, "mean"))
            for k in keys}


def failure_breakdown(trajectories: list[Trajectory]) -> dict[str, float]:
    """Return the share of rollouts failing at each phase (p1/p2/p3) and succeeding."""
    rows = [episode_metrics(t) for t in trajectories]
    n = max(1, len(rows))
    out = {f"fail_p{p}": sum(r["failed_phase"] == p for r in rows) / n for p in (1, 2, 3)}
    out["success"] = sum(r["success"] for r in rows) / n
    return out
