"""Model-driven STAT agents: any model in the registry allocates tasks, under the household
protocols (none, broadcast, leader, shared memory) from the same protocol registry.

A mind is asked only when its agent has a choice (no task, two or more free tasks); every
other agent takes the one action its mask allows, with no model call, and stays silent in the
communicate phase. Under `leader`, agent 0 is asked for the team's assignment on every step
where some agent has a choice, whether or not it has one itself (it coordinates the team).
A reply that names no task, or a task that is not free, is a protocol failure, recorded on
the call (`parse_status` "failed" with the reason), and the agent idles for the step (with
the step penalty, as the released code gives an idle agent): the masks deny a taken task to
every policy, and the release's off-mask re-selection of a taken task would hand the task
over without a penalty and can leave the old owner stuck on a finished task.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from coordbench.agents.household.llm import LlmMind
from coordbench.agents.team.protocols import Decision, Message, check_supported
from coordbench.envs.stat.config import IDLE, SELECT0
from coordbench.envs.stat.observe import StatObservation, render_text
from coordbench.llm import prompts
from coordbench.llm.parse import parse_task_choice

# the household protocols that make sense for task allocation (discuss's READY rounds and
# leader_vision's images have no STAT counterpart)
STAT_PROTOCOLS = ("none", "broadcast", "leader", "shared_memory")

PROMPTS = SimpleNamespace(SYSTEM=prompts.STAT_SYSTEM, ACT=prompts.STAT_ACT,
                          SPEAK=prompts.STAT_SPEAK, SPEAK_USER=prompts.SPEAK_USER,
                          ASSIGN=prompts.STAT_ASSIGN, MEMORY=prompts.STAT_MEMORY,
                          SCHEMAS=prompts.STAT_SCHEMAS)


def check_protocol(name: str) -> str:
    """Return `name` if STAT teams support it; ConfigError names the choices otherwise."""
    return check_supported(name, STAT_PROTOCOLS, "STAT")


@dataclass
class StatLlmMind(LlmMind):
    """One STAT agent driven by the model `alias` (see the module docstring)."""

    prompts = PROMPTS
    render = staticmethod(render_text)

    async def speak(self, obs: StatObservation, phase: str, inbox: list[Message],
                    rnd: int) -> str | None:
        """Return this agent's message, or None (no call) when it has no choice to make."""
        if obs.forced_action is not None:
            return None
        return await super().speak(obs, phase, inbox, rnd)

    async def update_memory(self, obs: StatObservation, board: dict[str, Any]
                            ) -> dict[str, Any]:
        """Return the shared board; an agent with no choice leaves it as it is (no call)."""
        if obs.forced_action is not None:
            return board
        return await super().update_memory(obs, board)

    async def act(self, obs: StatObservation, inbox: list[Message]) -> Decision:
        """Return this step's action: the forced one without a call, else the model's task."""
        self._absorb(inbox)
        if obs.forced_action is not None:
            return Decision(obs.forced_action)
        board = [m.content for m in inbox if m.phase == "memory"]
        dialogue, history = self._context()
        if board:
            dialogue += f"\nShared memory: {board[-1][:3000]}"
        text = self.prompts.ACT.format(observation=self.render(obs), memory=self.memory,
                                       dialogue=dialogue, history=history)
        out = await self._call(obs, "act", text)
        if out is None:
            return Decision(None, "", "token budget exhausted")
        if out.error:
            self._mark("failed", out.error)
            return Decision(None, "", f"model call failed: {out.error}", out.tokens)
        choice = parse_task_choice(out.text, obs.choices, len(obs.tasks))
        if choice.memory is not None:
            self.memory = choice.memory
        self.history.append(f"step {obs.t}: " + (f"task {choice.task}" if choice.task is not None
                                                 else "no task") + (
            "" if choice.valid else f" ({choice.error})"))
        if choice.valid:
            self._mark("ok")
            return Decision(SELECT0 + choice.task, out.text[:4000], None, out.tokens)
        self._mark("failed", choice.error)
        return Decision(IDLE, out.text[:4000], choice.error, out.tokens)
