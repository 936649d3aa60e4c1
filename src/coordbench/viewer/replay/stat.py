"""STAT states by replay: the header records the layout (task positions) and the plane, the
events the submitted actions; the reference environment (envs/stat/reference.py, the
executable specification the kernels are tested against) replays them."""

from __future__ import annotations

from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import StatStepEvent, Trajectory
from coordbench.envs.stat.config import StatConfig
from coordbench.envs.stat.reference import ReferenceStatEnv

from .common import Picture, unavailable


def _snapshot(env: ReferenceStatEnv) -> dict[str, Any]:
    return {"pos": [[round(x, 4), round(y, 4)] for x, y in env.pos],
            "target": list(env.target), "mode": list(env.mode), "counter": list(env.counter),
            "completed": list(env.completed), "assignee": list(env.assignee)}


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the STAT plane at every step, replayed from the header's layout."""
    p = traj.header.params
    if "task_positions" not in p:
        return unavailable("stat", "the header records no task positions (layout)")
    cfg = StatConfig(agents=int(p["agents"]), tasks=int(p["tasks"]), width=float(p["width"]),
                     height=float(p["height"]), episode_limit=int(p["episode_limit"]))
    env = ReferenceStatEnv(cfg)
    env.reset(p["task_positions"])
    states = [_snapshot(env)]
    mismatch = None
    checked = 0
    for e in traj.steps(StatStepEvent):
        info = env.step(e.actions)
        checked += 1
        if mismatch is None:
            if list(info["final_actions"]) != e.executed:
                mismatch = (f"step {e.t}: executed {e.executed} recorded, "
                            f"{info['final_actions']} replayed")
            elif any(abs(a - b) > 1e-6 for a, b in zip(info["rewards"], e.rewards, strict=True)):
                mismatch = f"step {e.t}: rewards {e.rewards} recorded, {info['rewards']} replayed"
            elif [(i, j) for i, j in enumerate(info["completed_task"]) if j >= 0] != [
                    tuple(c) for c in e.completed]:
                mismatch = f"step {e.t}: completions differ"
        states.append(_snapshot(env))
    end = traj.end
    if mismatch is None and end is not None and end.success != all(env.completed):
        mismatch = f"the replay ends with {sum(env.completed)}/{cfg.tasks} tasks done"
    static = {"width": cfg.width, "height": cfg.height, "tasks": p["task_positions"],
              "agents": cfg.agents}
    return {"kind": "stat", "static": static, "states": states,
            "replay": {"available": True, "ok": mismatch is None, "checked": checked,
                       "mismatch": mismatch, "engine": "envs.stat.reference"}}
