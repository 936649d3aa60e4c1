"""What a person playing a STAT seat sees and may do: the map (the plane, every task with
its status, every agent with its target) and, when the seat has a choice, the free tasks it
may pick (nearest first)."""

from __future__ import annotations

import math
from typing import Any

from coordbench.envs.stat.config import SELECT0
from coordbench.envs.stat.observe import StatObservation, render_text


class StatPresenter:
    """The STAT seat's view and legal picks (see `agents.team.human.Presenter`)."""

    def view(self, obs: StatObservation) -> dict[str, Any]:
        """Return the observation's text and its map."""
        me = {"agent": obs.agent, "x": obs.x, "y": obs.y, "target": obs.target}
        return {"text": render_text(obs),
                "map": {"width": obs.width, "height": obs.height, "me": obs.agent,
                        "tasks": [{"task": t.task, "x": t.x, "y": t.y, "status": t.status}
                                  for t in obs.tasks],
                        "agents": [me, *({"agent": m["agent"], "x": m["x"], "y": m["y"],
                                          "target": m["target"]} for m in obs.teammates)],
                        "choices": list(obs.choices)}}

    def choices(self, obs: StatObservation) -> list[tuple[str, Any]]:
        """Return the tasks the seat may pick now, nearest first, as (label, action)."""
        pos = {t.task: (t.x, t.y) for t in obs.tasks}
        ranked = sorted(obs.choices, key=lambda j: (math.dist((obs.x, obs.y), pos[j]), j))
        return [(f"task {j} ({math.dist((obs.x, obs.y), pos[j]):.1f} away)", SELECT0 + j)
                for j in ranked]

    def forced(self, obs: StatObservation) -> int | None:
        """Return the seat's forced action (move, execute, idle, a lone pick), or None."""
        return obs.forced_action
