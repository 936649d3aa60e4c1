"""Construct teams under the household protocols: one mind per agent (rule-based or
model-driven), orchestrated by the same protocol registry as MECoBench's teams
(`agents.household.protocols`), so the protocol effect can be compared across the two suites.

Each step every agent gets a `ConstructView` (the instance as the decentralized planners see
it); the protocol runs its communicate phase over the minds, then every mind picks its own
action. Rule minds put the decentralized rule agents (`planners.RuleAgent`) behind the `Mind`
verbs; they say what they go for as "TAKE <id>" and read their teammates' claims from what the
protocol lets them see, a lower agent index keeping priority as under `decentralized_comm`:

- none: no messages; each agent decides alone (the `decentralized` planner's rules).
- broadcast: in index order, each agent says what it goes for, having read the earlier ones.
- discuss: the same, in rounds, until each agent repeats its claim (READY).
- leader: workers report what they would take; agent 0 plans the step in index order and
  tells each agent what to take and what to leave to others.
- shared_memory: a board {"claims": {object id: agent}} that agents rewrite in index order.

Model minds talk with the household phases' prompts (construct wording, `llm.prompts`) and
act by choosing an id from their own action menu, as the model planners do (`llm.choose`);
the messages they saw are their board.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from coordbench.agents.household.llm import LlmMind
from coordbench.agents.household.protocols import (
    PROTOCOLS,
    Decision,
    Message,
    ProtocolTeam,
    get_protocol,
)
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.errors import ConfigError
from coordbench.llm import prompts
from coordbench.runner.episode import current_recorder

from .llm import choose, last_step_text, state_text
from .planners import RuleAgent, StepChoice, menu, menu_catalog

# the household protocols construct teams run (leader_vision's team images have no construct
# counterpart: the construct views are the planners' state texts)
CONSTRUCT_PROTOCOLS = ("none", "broadcast", "discuss", "leader", "shared_memory")
_TAKE = re.compile(r"TAKE (\d+)")
_LEAVE = re.compile(r"LEAVE ([\d ]+)")
PRIORITY = -1  # a claim no agent index outranks (the leader's plan)


def check_protocol(name: str) -> str:
    """Return `name` if construct teams support it; ConfigError names the choices otherwise."""
    if name not in CONSTRUCT_PROTOCOLS:
        what = (f"protocol {name!r} is not supported by construct teams" if name in PROTOCOLS
                else f"unknown protocol {name!r}")
        raise ConfigError(f"{what}; choose from {', '.join(CONSTRUCT_PROTOCOLS)}")
    return name


@dataclass
class ConstructView:
    """What one agent's mind gets each step: the instance (engine and construct facts) and
    the episode's progress; `extra["image"]` its rendered view, when the run renders them."""

    agent: int
    n_agents: int
    env: HouseholdEnv
    info: dict[str, Any]
    progress: dict[str, Any]
    extra: dict[str, str] = field(default_factory=dict)


def render_view(view: ConstructView) -> str:
    """Return one agent's view as prompt text: who it is, the budget, the instance state."""
    env, i = view.env, view.agent
    role = f" ({env.roles[i]})" if env.roles else ""
    p = view.progress
    return (f"You are agent_{i}{role}. Step {p['step']}: {p['left']} of {p['budget']} actions "
            f"left.\nLast step: {p['last']}\n{state_text(env, view.info)}")


def _claims(messages: list[Message], me: int) -> dict[int, int]:
    """Return {object: agent} from the latest "TAKE <id>" of each teammate's messages."""
    latest: dict[int, str] = {}
    for m in messages:
        if m.sender != me and m.phase in ("broadcast", "discuss"):
            latest[m.sender] = m.content
    return {int(o): s for s, text in latest.items() for o in _TAKE.findall(text)}


@dataclass
class ConstructRuleMind:
    """A decentralized rule agent as a protocol mind (see the module docstring)."""

    agent: int
    rule: RuleAgent
    said: str | None = None

    def _decide(self, env: HouseholdEnv, claims: dict[int, int]) -> Action | None:
        self.rule.claims = claims
        return self.rule.decide(env)

    def _say(self) -> str | None:
        return f"TAKE {self.rule.intent}" if self.rule.intent is not None else None

    def speak(self, obs: ConstructView, phase: str, inbox: list[Message], rnd: int
              ) -> str | None:
        """Return "TAKE <id>" for what this agent goes for (discuss: "READY ..." once it
        repeats its last claim), or None when it goes for nothing."""
        self._decide(obs.env, {} if phase == "report" else _claims(inbox, self.agent))
        text = self._say()
        if phase != "discuss":
            return text
        text = text or "NOTHING"
        ready = rnd > 0 and self.said == text
        self.said = text
        return f"READY {text}" if ready else f"CONTINUE {text}"

    def assign(self, obs: ConstructView, inbox: list[Message],
               views: dict[int, ConstructView] | None) -> dict[int, str]:
        """Return the leader's plan: in index order, what each agent goes for given what the
        earlier ones took, as "TAKE <id>; LEAVE <ids taken by others>"."""
        taken: dict[int, int] = {}
        for j in range(obs.n_agents):
            planner = RuleAgent(j, obs.info, True, {o: PRIORITY for o in taken})
            planner.decide(obs.env)
            if planner.intent is not None:
                taken[planner.intent] = j
        orders = {}
        for j in range(obs.n_agents):
            mine = [o for o, a in taken.items() if a == j]
            others = sorted(o for o, a in taken.items() if a != j)
            orders[j] = "; ".join([f"TAKE {mine[0]}" if mine else "NOTHING TO TAKE",
                                   *([f"LEAVE {' '.join(map(str, others))}"] if others else [])])
        return orders

    def update_memory(self, obs: ConstructView, board: dict[str, Any]) -> dict[str, Any]:
        """Return the board with this agent's claim rewritten (its earlier ones dropped)."""
        claims = self._board_claims(board)
        self._decide(obs.env, claims)
        if self.rule.intent is not None:
            claims[self.rule.intent] = self.agent
        return {"claims": {str(o): a for o, a in sorted(claims.items())}}

    def _board_claims(self, board: dict[str, Any]) -> dict[int, int]:
        raw = board.get("claims", {}) if isinstance(board, dict) else {}
        return {int(o): int(a) for o, a in raw.items()
                if str(o).isdigit() and isinstance(a, int) and a != self.agent}

    def act(self, obs: ConstructView, inbox: list[Message]) -> Decision:
        """Return this agent's action given what the protocol let it see."""
        claims = _claims(inbox, self.agent)
        for m in inbox:
            if m.phase == "memory":
                claims = self._board_claims(json.loads(m.content))
            elif m.phase == "assignment" and m.recipients == (self.agent,):
                claims = {int(o): PRIORITY for found in _LEAVE.findall(m.content)
                          for o in found.split()}
        return Decision(self._decide(obs.env, claims))


PROMPTS = SimpleNamespace(SYSTEM=prompts.CONSTRUCT_SYSTEM, SPEAK=prompts.CONSTRUCT_SPEAK,
                          SPEAK_USER=prompts.SPEAK_USER, ASSIGN=prompts.CONSTRUCT_ASSIGN,
                          MEMORY=prompts.CONSTRUCT_MEMORY, SCHEMAS=prompts.CONSTRUCT_SCHEMAS)


@dataclass
class ConstructLlmMind(LlmMind):
    """One construct agent driven by the model `alias`: it talks in the protocol's phases and
    acts by choosing from its own action menu."""

    catalog: list[tuple[int, Action]] = field(default_factory=list)

    prompts = PROMPTS
    render = staticmethod(render_view)

    async def act(self, obs: ConstructView, inbox: list[Message]) -> Decision:
        """Return the menu action the model chose, or a failure (invalid id or no id)."""
        self._absorb(inbox)
        rec = current_recorder()
        if rec is not None and rec.tokens_exhausted:
            return Decision(None, "", "token budget exhausted")
        dialogue, _ = self._context()
        board = [m.content for m in inbox if m.phase == "memory"]
        text = ("TEAM MESSAGES:\n" + dialogue) if self.dialogue else ""
        if board:
            text += f"\nSHARED MEMORY: {board[-1][:3000]}"
        who = f"agent_{self.agent}, one of {obs.n_agents} robots deciding at the same time"
        got = await choose(self.harness, self.alias, obs.env, obs.info,
                           menu(obs.env, self.catalog, self.agent), who, text,
                           obs.extra.get("image"), self.agent, self.role, obs.progress)
        if got[0] is None:
            return Decision(None, "", str(got[1]))
        return Decision(got[1])


class ProtocolPlanners:
    """A construct team of one mind per agent under a household protocol (decentralized)."""

    name = "protocol"

    def __init__(self, protocol: str, agents: str, harness=None, alias: str | None = None
                 ) -> None:
        self.protocol = check_protocol(protocol)
        self.agents, self.harness, self.alias = agents, harness, alias

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`: fresh minds and protocol state."""
        self.env, self.info = env, info
        spec = get_protocol(self.protocol)
        if self.agents == "rule":
            minds: list[Any] = [ConstructRuleMind(i, RuleAgent(i, info, spec.talks))
                                for i in range(env.n)]
        else:
            catalog = menu_catalog(env, info)
            minds = [ConstructLlmMind(agent=i, harness=self.harness, alias=str(self.alias),
                                      role=spec.role(i), catalog=catalog)
                     for i in range(env.n)]
        self.team = ProtocolTeam(minds, self.protocol)
        self.step, self.used, self.budget = 0, 0, env.task.budget()
        self.last: list[Any] = []

    async def act(self, images: dict[int, str]) -> StepChoice:
        """Return this step's choices, why a mind chose nothing, and the step's messages."""
        progress = {"step": self.step, "left": max(0, self.budget - self.used),
                    "budget": self.budget, "last": last_step_text(self.last)}
        views = [ConstructView(i, self.env.n, self.env, self.info, progress,
                               {"image": images[i]} if i in images else {})
                 for i in range(self.env.n)]
        decisions, transcript = await self.team.act(views)
        errors = {i: d.error for i, d in enumerate(decisions) if d.action is None and d.error}
        return StepChoice([d.action for d in decisions], errors, transcript)

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Note what ran (for the next views); the protocol's messages went with `act`."""
        self.step += 1
        self.used += len(records)
        self.last = list(records)
        return []
