"""Communication protocols: orchestration objects over minds (rule-based or model-driven).

A protocol runs the communicate phase of one team step and returns, per agent, the messages
that agent sees when it acts, plus the full transcript for the trajectory. Minds implement
`Mind`; a protocol never looks inside them, so rule-based and LLM minds are interchangeable.

- none: no messages.
- broadcast: one round; agents speak in index order, each seeing what earlier agents said.
- discuss: rounds in index order until every agent's message starts with READY (max R rounds).
- leader: workers report to agent 0; agent 0 sends one instruction to each agent (itself too).
- leader_vision: as leader, and the leader also receives every agent's view.
- shared_memory: no messages; one JSON board that agents read and rewrite in index order, so a
  later agent sees what an earlier one wrote in the same step.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any, Protocol

from coordbench.envs.household.actions import Action
from coordbench.envs.household.observe import Observation

PROTOCOLS = ("none", "broadcast", "discuss", "leader", "leader_vision", "shared_memory")
LEADER = 0
FOLLOW = " You must follow the leader's (agent 0) instruction."


@dataclass(frozen=True)
class Message:
    """One message: who sent it, who may read it (None = everyone), in which phase."""

    sender: int
    recipients: tuple[int, ...] | None
    content: str
    phase: str
    round: int = 0
    tokens: int = 0

    def visible_to(self, agent: int) -> bool:
        """Return whether `agent` may read this message."""
        return self.recipients is None or agent in self.recipients or agent == self.sender


@dataclass(frozen=True)
class Decision:
    """A mind's choice for the act phase: an action, or None with the reason it failed."""

    action: Action | None
    raw: str = ""
    error: str | None = None
    tokens: int = 0


class Mind(Protocol):
    """What a protocol needs from a team member."""

    agent: int

    def speak(self, obs: Observation, phase: str, inbox: list[Message], rnd: int) -> str | None:
        """Return a message for a broadcast/discuss/report phase, or None to stay silent."""

    def assign(self, obs: Observation, inbox: list[Message],
               views: dict[int, Observation] | None) -> dict[int, str]:
        """Return one instruction per agent (leader only); `views` in leader_vision."""

    def update_memory(self, obs: Observation, board: dict[str, Any]) -> dict[str, Any]:
        """Return the shared board after this agent's update."""

    def act(self, obs: Observation, inbox: list[Message]) -> Decision:
        """Return this step's decision."""


class TeamProtocol:
    """Runs the communicate phase of one protocol over a list of minds."""

    def __init__(self, name: str, rounds: int = 3) -> None:
        if name not in PROTOCOLS:
            raise ValueError(f"unknown protocol {name!r}; choose from {', '.join(PROTOCOLS)}")
        self.name = name
        self.rounds = rounds
        self.board: dict[str, Any] = {}

    async def communicate(self, minds: list[Mind], obs: list[Observation]
                          ) -> tuple[list[list[Message]], list[Message]]:
        """Return (each agent's visible messages, the full transcript) for this step.

        Minds may answer synchronously (rule-based) or with coroutines (model-driven).
        """
        n = len(minds)
        log: list[Message] = []
        if self.name == "broadcast":
            for m in minds:
                text = await maybe_await(m.speak(obs[m.agent], "broadcast", list(log), 0))
                if text:
                    log.append(Message(m.agent, None, text, "broadcast"))
        elif self.name == "discuss":
            for rnd in range(self.rounds):
                ready = True
                for m in minds:
                    text = await maybe_await(m.speak(obs[m.agent], "discuss", list(log), rnd))
                    text = text or "READY"
                    log.append(Message(m.agent, None, text, "discuss", rnd))
                    ready &= text.strip().upper().startswith("READY")
                if ready:
                    break
        elif self.name in ("leader", "leader_vision") and n > 1:
            for m in minds[1:]:
                text = await maybe_await(m.speak(obs[m.agent], "report", [], 0))
                if text:
                    log.append(Message(m.agent, (LEADER,), text, "report"))
            views = {m.agent: obs[m.agent] for m in minds} if self.name == "leader_vision" else None
            orders = await maybe_await(minds[LEADER].assign(obs[LEADER], list(log), views))
            for j in range(n):
                if j in orders:
                    log.append(Message(LEADER, (j,), orders[j] + FOLLOW, "assignment"))
        elif self.name == "shared_memory":
            for m in minds:
                self.board = await maybe_await(m.update_memory(obs[m.agent],
                                                          json.loads(json.dumps(self.board))))
                log.append(Message(m.agent, None, json.dumps(self.board, sort_keys=True),
                                   "memory"))
        inboxes = [[msg for msg in log if msg.visible_to(i)] for i in range(n)]
        return inboxes, log


async def maybe_await(value):
    """Return `value`, awaiting it first when a mind answered with a coroutine."""
    return await value if inspect.isawaitable(value) else value
