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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from coordbench.core.trajectory import MessageEvent
from coordbench.envs.household.actions import Action
from coordbench.envs.household.observe import Observation
from coordbench.errors import ConfigError
from coordbench.runner.episode import gather_all

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


async def _broadcast(state: TeamProtocol, minds: list[Mind], obs: list[Observation],
                     log: list[Message]) -> None:
    for m in minds:
        text = await maybe_await(m.speak(obs[m.agent], "broadcast", list(log), 0))
        if text:
            log.append(Message(m.agent, None, text, "broadcast"))


async def _discuss(state: TeamProtocol, minds: list[Mind], obs: list[Observation],
                   log: list[Message]) -> None:
    for rnd in range(state.rounds):
        ready = True
        for m in minds:
            text = await maybe_await(m.speak(obs[m.agent], "discuss", list(log), rnd))
            text = text or "READY"
            log.append(Message(m.agent, None, text, "discuss", rnd))
            ready &= text.strip().upper().startswith("READY")
        if ready:
            break


async def _lead(state: TeamProtocol, minds: list[Mind], obs: list[Observation],
                log: list[Message]) -> None:
    if len(minds) < 2:
        return
    for m in minds[1:]:
        text = await maybe_await(m.speak(obs[m.agent], "report", [], 0))
        if text:
            log.append(Message(m.agent, (LEADER,), text, "report"))
    views = {m.agent: obs[m.agent] for m in minds} if state.protocol.team_view else None
    orders = await maybe_await(minds[LEADER].assign(obs[LEADER], list(log), views))
    for j in range(len(minds)):
        if j in orders:
            log.append(Message(LEADER, (j,), orders[j] + FOLLOW, "assignment"))


async def _shared_memory(state: TeamProtocol, minds: list[Mind], obs: list[Observation],
                         log: list[Message]) -> None:
    for m in minds:
        state.board = await maybe_await(m.update_memory(obs[m.agent],
                                                        json.loads(json.dumps(state.board))))
        log.append(Message(m.agent, None, json.dumps(state.board, sort_keys=True), "memory"))


async def _silent(state: TeamProtocol, minds: list[Mind], obs: list[Observation],
                  log: list[Message]) -> None:
    return None


@dataclass(frozen=True)
class ProtocolSpec:
    """One communication protocol: its communicate phase and what it implies for the team.

    `leader`: agent 0 leads (its role is "leader", it may run another model); `team_view`: the
    leader also receives every agent's view; `talks`: agents exchange any information.
    """

    name: str
    phase: Callable[[TeamProtocol, list[Mind], list[Observation], list[Message]],
                    Awaitable[None]]
    leader: bool = False
    team_view: bool = False
    talks: bool = True

    def role(self, agent: int) -> str:
        """Return the role of `agent` in a team under this protocol."""
        return "leader" if self.leader and agent == LEADER else "agent"


PROTOCOLS: dict[str, ProtocolSpec] = {p.name: p for p in (
    ProtocolSpec("none", _silent, talks=False),
    ProtocolSpec("broadcast", _broadcast),
    ProtocolSpec("discuss", _discuss),
    ProtocolSpec("leader", _lead, leader=True),
    ProtocolSpec("leader_vision", _lead, leader=True, team_view=True),
    ProtocolSpec("shared_memory", _shared_memory),
)}


def get_protocol(name: str) -> ProtocolSpec:
    """Return the protocol called `name`; ConfigError names the choices otherwise."""
    if name not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {name!r}; choose from {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def check_supported(name: str, supported: tuple[str, ...], family: str) -> str:
    """Return `name` if it is one of the protocols a family's teams run (`supported`);
    ConfigError otherwise, saying whether it is unknown or not supported there."""
    if name not in supported:
        what = (f"protocol {name!r} is not supported by {family} teams" if name in PROTOCOLS
                else f"unknown protocol {name!r}")
        raise ConfigError(f"{what}; choose from {', '.join(supported)}")
    return name


class TeamProtocol:
    """Runs the communicate phase of one protocol over a list of minds (it keeps the
    protocol's state across steps, e.g. the shared-memory board)."""

    def __init__(self, protocol: ProtocolSpec | str, rounds: int = 3) -> None:
        self.protocol = get_protocol(protocol) if isinstance(protocol, str) else protocol
        self.name = self.protocol.name
        self.rounds = rounds
        self.board: dict[str, Any] = {}

    async def communicate(self, minds: list[Mind], obs: list[Observation]
                          ) -> tuple[list[list[Message]], list[Message]]:
        """Return (each agent's visible messages, the full transcript) for this step.

        Minds may answer synchronously (rule-based) or with coroutines (model-driven).
        """
        log: list[Message] = []
        await self.protocol.phase(self, minds, obs, log)
        inboxes = [[msg for msg in log if msg.visible_to(i)] for i in range(len(minds))]
        return inboxes, log


class ProtocolTeam:
    """A household team: minds under a protocol; `act` runs one team step's communicate
    and decide phases."""

    name = "protocol_team"

    def __init__(self, minds: list[Mind], protocol: ProtocolSpec | str) -> None:
        self.minds = minds
        self.protocol = TeamProtocol(protocol)

    def reset(self) -> None:
        """Forget the protocol's state (a new episode)."""
        self.protocol = TeamProtocol(self.protocol.protocol, self.protocol.rounds)

    async def act(self, obs: list[Observation]) -> tuple[list[Decision], list[Message]]:
        """Return (each agent's decision, the step's messages)."""
        inboxes, transcript = await self.protocol.communicate(self.minds, obs)
        decisions = await gather_all(*(maybe_await(m.act(obs[m.agent], inboxes[m.agent]))
                                       for m in self.minds))
        return list(decisions), transcript


def message_events(t: int, transcript: list[Message]) -> list[MessageEvent]:
    """Return a step's transcript as trajectory events (every family's teams record it so)."""
    return [MessageEvent(t=t, phase=m.phase, round=m.round, sender=m.sender,
                         recipients=list(m.recipients) if m.recipients else None,
                         content=m.content, tokens=m.tokens) for m in transcript]


async def maybe_await(value):
    """Return `value`, awaiting it first when a mind answered with a coroutine."""
    return await value if inspect.isawaitable(value) else value
