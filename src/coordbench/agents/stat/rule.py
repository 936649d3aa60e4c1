"""Rule-based STAT agents under the household protocols (`stat eval --policy rule --protocol
P`): each agent with a choice goes for its nearest free task, and the protocol decides what it
knows of its teammates' picks (`agents.team.claims`).

Under `none` agents pick alone, so two agents whose nearest free task is the same both pick it
(the conflict rule keeps the nearest one and idles the other for the step). Under a talking
protocol a task claimed by a lower-index teammate is left alone, which is what the `greedy`
allocator does centrally: the two play the same actions (a test checks it). When every free
task is claimed the agent still picks its nearest (the mask makes it pick), as `greedy` does.
Agents with no choice take their one action and stay silent.

With dials (`agents.team.dials`) a mind misreads where the tasks are (it picks a task it can
choose at random, not its nearest) at the perception rate, and misses teammates' messages at
the message-loss rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from coordbench.agents.team.claims import ClaimMind
from coordbench.agents.team.dials import Faults
from coordbench.envs.stat.config import IDLE, SELECT0
from coordbench.envs.stat.observe import StatObservation

# the dials a STAT rule mind can fail by
STAT_RULE_DIALS = ("perception", "message_loss", "message_cost", "fail_at")


def _nearest(x: float, y: float, obs: StatObservation, candidates: list[int]) -> int | None:
    """Return the candidate task nearest (x, y), the lower id on a tie; None if none."""
    if not candidates:
        return None
    pos = {t.task: (t.x, t.y) for t in obs.tasks}
    return min(candidates, key=lambda j: (math.dist((x, y), pos[j]), j))


@dataclass
class StatRuleMind(ClaimMind):
    """One rule-based STAT agent (see the module docstring)."""

    agent: int
    role: str = "agent"
    said: str | None = None
    faults: Faults | None = None
    convention: str = "lower"

    def silent(self, obs: StatObservation) -> bool:
        """Return whether the agent has no choice this step."""
        return obs.forced_action is not None

    def choose(self, obs: StatObservation, claims: dict[int, int]) -> tuple[int, int | None]:
        """Return (the action, the task it goes for): its forced action, else the nearest
        free task no lower-index teammate claimed, else (every one is claimed: the mask
        still makes it pick, as `greedy` does) its nearest free task."""
        if obs.forced_action is not None:
            return obs.forced_action, None
        if self.faults is not None and obs.choices and self.faults.hit("perception", obs.t):
            task = self.faults.pick(sorted(obs.choices), "perception", obs.t)
            return SELECT0 + task, task
        task = _nearest(obs.x, obs.y, obs,
                        [j for j in obs.choices if self.free(j, claims)])
        if task is None:
            task = _nearest(obs.x, obs.y, obs, obs.choices)
        return (IDLE, None) if task is None else (SELECT0 + task, task)

    def intent_of(self, obs: StatObservation, j: int, claims: dict[int, int]) -> int | None:
        """Return the task agent `j` would go for (None if it has a task already)."""
        if j == self.agent:
            return None if obs.forced_action is not None else self.choose(obs, claims)[1]
        mate = next(m for m in obs.teammates if m["agent"] == j)
        if mate["target"] is not None:
            return None
        free = [t.task for t in obs.tasks if t.status == "free" and self.free(t.task, claims, j)]
        return _nearest(mate["x"], mate["y"], obs, free)
