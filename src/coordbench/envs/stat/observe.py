"""A STAT state as one agent's text observation, for model-driven teams.

The learners see the paper's vector (binned distances, modes, flags); a model reads the state
itself: positions, exact distances, who is committed to what. `observe` builds the record
from one environment of a `StatVecEnv` (row b), `render_text` writes it as the prompt's
observation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import MODE_EXECUTING, MODE_MOVING, SELECT0
from .vec import StatVecEnv

MODES = {0: "idle", MODE_MOVING: "moving", MODE_EXECUTING: "executing"}


@dataclass
class TaskView:
    """One task as an agent sees it: where it is, how far, and its status."""

    task: int
    x: float
    y: float
    distance: float
    status: str  # "free", "taken" (by `by`) or "done"
    by: int | None = None


@dataclass
class StatObservation:
    """What agent `agent` knows at step `t` (all of the state: STAT is fully observed).

    `choices` are the tasks it may select now (empty when its action is forced);
    `forced_action` is that action (IDLE, MOVE, EXECUTE or a lone SELECT) or None when it
    has a choice; `extra` carries what a protocol or a mind adds (no images on STAT);
    `pick` is, for a seat an allocator or learned policy plays in a team of minds, the
    action its policy chose this step."""

    agent: int
    n_agents: int
    t: int
    limit: int
    width: float
    height: float
    x: float
    y: float
    mode: str
    target: int | None
    tasks: list[TaskView]
    teammates: list[dict[str, Any]]
    choices: list[int]
    forced_action: int | None
    extra: dict[str, Any] = field(default_factory=dict)
    pick: int | None = None

    @property
    def completed(self) -> int:
        """Return how many tasks are done."""
        return sum(t.status == "done" for t in self.tasks)


def observe(env: StatVecEnv, b: int, agent: int) -> StatObservation:
    """Return agent `agent`'s observation of environment row `b`."""
    s, cfg = env.state, env.cfg
    px, py = float(s.pos[b, agent, 0]), float(s.pos[b, agent, 1])
    tasks = []
    for j in range(cfg.tasks):
        tx, ty = float(s.task_pos[b, j, 0]), float(s.task_pos[b, j, 1])
        if s.completed[b, j]:
            status, by = "done", None
        elif s.selected[b, j]:
            status, by = "taken", int(s.assignee[b, j])
        else:
            status, by = "free", None
        tasks.append(TaskView(j, tx, ty, math.dist((px, py), (tx, ty)), status, by))
    mask = env.masks[b, agent]
    valid = np.flatnonzero(mask)
    choices = [int(a - SELECT0) for a in valid if a >= SELECT0]
    forced = int(valid[0]) if len(valid) == 1 else None
    mates = []
    for k in range(cfg.agents):
        if k != agent:
            tgt = int(s.target[b, k])
            mates.append({"agent": k, "x": float(s.pos[b, k, 0]), "y": float(s.pos[b, k, 1]),
                          "mode": MODES[int(s.mode[b, k])], "target": tgt if tgt >= 0 else None})
    tgt = int(s.target[b, agent])
    return StatObservation(agent, cfg.agents, int(s.t[b]), cfg.episode_limit, cfg.width,
                           cfg.height, px, py, MODES[int(s.mode[b, agent])],
                           tgt if tgt >= 0 else None, tasks, mates,
                           choices if forced is None else [], forced)


def render_text(obs: StatObservation, max_tasks: int = 60) -> str:
    """Return the observation as prompt text: the step, the agent, teammates, and the free
    tasks nearest first (at most `max_tasks`; the rest are counted)."""
    lines = [f"Step {obs.t} (the episode ends at step {obs.limit} at the latest). "
             f"Plane {obs.width:g} x {obs.height:g}. Tasks completed: {obs.completed} of "
             f"{len(obs.tasks)}."]
    doing = f"committed to task {obs.target}" if obs.target is not None else "with no task"
    lines.append(f"You are agent {obs.agent} at ({obs.x:.1f}, {obs.y:.1f}), {obs.mode}, "
                 f"{doing}.")
    if obs.teammates:
        lines.append("Teammates:")
        for m in obs.teammates:
            task = f"task {m['target']}" if m["target"] is not None else "no task"
            lines.append(f"- agent {m['agent']} at ({m['x']:.1f}, {m['y']:.1f}), {m['mode']}, "
                         f"{task}")
    free = sorted((t for t in obs.tasks if t.status == "free"), key=lambda t: t.distance)
    lines.append(f"Free tasks (id: position, your distance), nearest first ({len(free)}):")
    for t in free[:max_tasks]:
        lines.append(f"- task {t.task}: ({t.x:.1f}, {t.y:.1f}), {t.distance:.1f}")
    if len(free) > max_tasks:
        lines.append(f"- ... and {len(free) - max_tasks} farther free tasks")
    taken = [f"task {t.task} (agent {t.by})" for t in obs.tasks if t.status == "taken"]
    if taken:
        lines.append("Taken, not yet done: " + ", ".join(taken))
    if obs.choices:
        lines.append(f"You may select any free task: {len(obs.choices)} choices.")
    return "\n".join(lines)
