"""Rule minds that coordinate by claims, under any household protocol: the part of a rule
team that is the same in every family (what is said and read), apart from the family's rule
for what to go for (`ClaimMind.choose`) and the leader's plan for another agent
(`ClaimMind.intent_of`).

A mind says what it goes for as "TAKE <id>" and treats a target as taken when a teammate
with a lower index claimed it (or the leader reserved it for someone else), so agents that
speak in index order never contend:

- none: no messages; each agent decides alone.
- broadcast: in index order, each agent says what it goes for, having read the earlier ones.
- discuss: the same, in rounds, until each agent repeats its claim (READY).
- leader: workers report what they would take; agent 0 plans the step in index order and
  tells each agent "TAKE <id>; LEAVE <ids taken by others>".
- shared_memory: a board {"claims": {id: agent}} that agents rewrite in index order.

With `faults` (`agents.team.dials`) a mind misses teammates' messages at the message-loss rate
and makes a decision that cannot be parsed at the protocol-violation rate; the family's
`choose` applies the dials that are its own (perception, hallucination).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any

from coordbench.agents.team.dials import Faults
from coordbench.agents.team.protocols import Decision, Message
from coordbench.errors import ConfigError

_TAKE = re.compile(r"TAKE (\d+)")
_LEAVE = re.compile(r"LEAVE ([\d ]+)")
PRIORITY = -1  # a claim no agent index outranks (the leader's plan)


def said_claims(messages: list[Message], me: int) -> dict[int, int]:
    """Return {target: agent} from the latest "TAKE <id>" of each teammate's broadcast or
    discussion messages."""
    latest: dict[int, str] = {}
    for m in messages:
        if m.sender != me and m.phase in ("broadcast", "discuss"):
            latest[m.sender] = m.content
    return {int(o): s for s, text in latest.items() for o in _TAKE.findall(text)}


def board_claims(board: Any, me: int) -> dict[int, int]:
    """Return the teammates' claims {target: agent} on a shared-memory board."""
    raw = board.get("claims", {}) if isinstance(board, dict) else {}
    return {int(o): int(a) for o, a in raw.items()
            if str(o).isdigit() and isinstance(a, int) and a != me}


def free_for(target: int, claims: dict[int, int], me: int, convention: str = "lower") -> bool:
    """Return whether `target` is free for agent `me`: unclaimed, or claimed by an agent with
    a higher index (a lower index, or the leader's reservation, keeps it); under the
    `reverse` convention a higher index keeps it and a lower one yields."""
    if target not in claims:
        return True
    if claims[target] == PRIORITY:
        return False
    return claims[target] > me if convention == "lower" else claims[target] < me


CONVENTIONS = ("lower", "reverse")


def checked_variant(arg: str | None, where: str, allowed: Any, who: str) -> tuple[str, Any]:
    """Return `rule_variant(arg, where)`, refusing (one line, naming the seat) a dial the
    family's rule minds cannot fail by."""
    from coordbench.agents.team.dials import check_applicable

    convention, dials = rule_variant(arg, where)
    try:
        check_applicable(dials, allowed, who)
    except ConfigError as e:
        raise ConfigError(f"{where}: rule:{arg}: {str(e).removeprefix('--dial ')}") from None
    return convention, dials


def rule_variant(arg: str | None, where: str) -> tuple[str, Any]:
    """Return (claim convention, dials or None) of a rule seat's argument (`reverse`,
    `perception=0.2`, joined by `+`); ConfigError names a part that is neither."""
    from coordbench.agents.team.dials import parse_dials

    convention, items = "lower", []
    for part in (p.strip() for p in (arg or "").split("+") if p.strip()):
        if part == "reverse":
            convention = "reverse"
        elif "=" in part:
            items.append(part)
        else:
            raise ConfigError(f"{where}: rule:{arg}: {part!r} is neither reverse (claims "
                              "yield to higher-index teammates) nor a dial NAME=VALUE")
    try:
        dials = parse_dials(items)
    except ConfigError as e:
        raise ConfigError(f"{where}: rule:{arg}: {str(e).removeprefix('--dial ')}") from None
    return convention, dials


class ClaimMind(ABC):
    """A rule team member under any protocol (see the module docstring). Subclasses say what
    the agent goes for given the claims it knows (`choose`) and, for the leader, what agent
    `j` would go for (`intent_of`)."""

    agent: int
    said: str | None = None
    faults: Faults | None = None
    # whose claim keeps a target: "lower" (the lower index, every protocol's order of
    # speaking) or "reverse" (the higher index): a convention partners must share
    convention: str = "lower"

    def free(self, target: int, claims: dict[int, int], who: int | None = None) -> bool:
        """Return whether `target` is free for agent `who` (default: this one) under this
        mind's convention."""
        return free_for(target, claims, self.agent if who is None else who, self.convention)

    def step_of(self, obs: Any) -> int:
        """Return the team step `obs` is from (the key of this step's failure draws)."""
        return int(getattr(obs, "t", 0))

    def _hear(self, obs: Any, inbox: list[Message]) -> list[Message]:
        return inbox if self.faults is None else self.faults.heard(inbox, self.step_of(obs))

    # -- the family's rule ----------------------------------------------------------------
    @abstractmethod
    def choose(self, obs: Any, claims: dict[int, int]) -> tuple[Any, int | None]:
        """Return (this step's action or None, the target it goes for or None)."""

    @abstractmethod
    def intent_of(self, obs: Any, j: int, claims: dict[int, int]) -> int | None:
        """Return what agent `j` would go for given `claims` (the leader's plan)."""

    def silent(self, obs: Any) -> bool:
        """Return whether the agent has nothing to say this step (no choice to make)."""
        return False

    # -- the protocol verbs ---------------------------------------------------------------
    def speak(self, obs: Any, phase: str, inbox: list[Message], rnd: int) -> str | None:
        """Return "TAKE <id>" for what this agent goes for (discuss: "READY ..." once it
        repeats its last claim, else "CONTINUE ..."), or None."""
        if self.silent(obs):
            return None
        inbox = self._hear(obs, inbox)
        _, intent = self.choose(obs, {} if phase == "report" else said_claims(inbox, self.agent))
        text = f"TAKE {intent}" if intent is not None else None
        if phase != "discuss":
            return text
        text = text or "NOTHING"
        ready = rnd > 0 and self.said == text
        self.said = text
        return f"READY {text}" if ready else f"CONTINUE {text}"

    def assign(self, obs: Any, inbox: list[Message], views: Any) -> dict[int, str]:
        """Return the leader's plan: in index order, what each agent goes for given what the
        earlier ones took, as "TAKE <id>; LEAVE <ids taken by others>"."""
        taken: dict[int, int] = {}
        for j in range(obs.n_agents):
            target = self.intent_of(obs, j, {o: PRIORITY for o in taken})
            if target is not None:
                taken[target] = j
        orders = {}
        for j in range(obs.n_agents):
            mine = [o for o, a in taken.items() if a == j]
            others = sorted(o for o, a in taken.items() if a != j)
            orders[j] = "; ".join([f"TAKE {mine[0]}" if mine else "NOTHING TO TAKE",
                                   *([f"LEAVE {' '.join(map(str, others))}"] if others else [])])
        return orders

    def update_memory(self, obs: Any, board: dict[str, Any]) -> dict[str, Any]:
        """Return the board with this agent's claim rewritten (its earlier ones dropped)."""
        if self.silent(obs):
            return board
        claims = board_claims(board, self.agent)
        _, intent = self.choose(obs, claims)
        if intent is not None:
            claims[intent] = self.agent
        return {"claims": {str(o): a for o, a in sorted(claims.items())}}

    def act(self, obs: Any, inbox: list[Message]) -> Decision:
        """Return this agent's action given what the protocol let it see (a decision that
        cannot be parsed where the protocol-violation dial strikes)."""
        inbox = self._hear(obs, inbox)
        if self.faults is not None:
            why = self.faults.violation(self.step_of(obs))
            if why is not None and not self.silent(obs):
                return Decision(None, "", why)
        claims = said_claims(inbox, self.agent)
        for m in inbox:
            if m.phase == "memory":
                claims = board_claims(json.loads(m.content), self.agent)
            elif m.phase == "assignment" and m.recipients == (self.agent,):
                claims = {int(o): PRIORITY for found in _LEAVE.findall(m.content)
                          for o in found.split()}
        action, _ = self.choose(obs, claims)
        return Decision(action)
