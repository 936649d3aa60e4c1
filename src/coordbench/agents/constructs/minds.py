"""Construct teams under the household protocols: one mind per agent (rule-based or
model-driven), orchestrated by the same protocol registry as MECoBench's teams
(`agents.team.protocols`), so the protocol effect can be compared across the two suites.

Each step every agent gets a `ConstructView` (the instance as the decentralized planners see
it); the protocol runs its communicate phase over the minds, then every mind picks its own
action. Rule minds are the decentralized rule agents (`planners.RuleAgent`) as claiming minds
(`agents.team.claims`: "TAKE <id>", a lower agent index keeping priority, as under
`decentralized_comm`); under `none` they are exactly the `decentralized` planner.

Model minds talk with the household phases' prompts (construct wording, `llm.prompts`) and
act by choosing an id from their own action menu, as the model planners do (`llm.choose`);
the messages they saw are their board.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from coordbench.agents.household.llm import LlmMind
from coordbench.agents.team.claims import ClaimMind, rule_variant
from coordbench.agents.team.counterfactual import switch_minds
from coordbench.agents.team.dials import Dials, Faults
from coordbench.agents.team.protocols import (
    Decision,
    Message,
    ProtocolTeam,
    check_supported,
    get_protocol,
)
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.menu import menu
from coordbench.errors import ConfigError
from coordbench.llm import prompts
from coordbench.runner.episode import current_recorder

from .llm import choose, last_step_text, state_text
from .planners import RuleAgent, StepChoice, menu_catalog, misperceived

# the household protocols construct teams run (leader_vision's team images have no construct
# counterpart: the construct views are the planners' state texts)
CONSTRUCT_PROTOCOLS = ("none", "broadcast", "discuss", "leader", "shared_memory")


def check_protocol(name: str) -> str:
    """Return `name` if construct teams support it; ConfigError names the choices otherwise."""
    return check_supported(name, CONSTRUCT_PROTOCOLS, "construct")


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

    @property
    def t(self) -> int:
        """Return the team step this view is of (as every family's observation names it)."""
        return int(self.progress["step"])


def render_view(view: ConstructView) -> str:
    """Return one agent's view as prompt text: who it is, the budget, the instance state."""
    env, i = view.env, view.agent
    role = f" ({env.roles[i]})" if env.roles else ""
    p = view.progress
    return (f"You are agent_{i}{role}. Step {p['step']}: {p['left']} of {p['budget']} actions "
            f"left.\nLast step: {p['last']}\n{state_text(env, view.info)}")


@dataclass
class ConstructRuleMind(ClaimMind):
    """A decentralized rule agent (`planners.RuleAgent`) as a claiming protocol mind."""

    agent: int
    rule: RuleAgent
    said: str | None = None
    faults: Faults | None = None
    convention: str = "lower"
    stopped: bool = False  # the hallucination dial struck: it believes the work done

    def choose(self, obs: ConstructView, claims: dict[int, int]
               ) -> tuple[Action | None, int | None]:
        """Return the rule agent's action and the object it goes for, given the claims
        (nothing once it believes the work done; a misread object where the perception
        dial strikes)."""
        t = self.step_of(obs)
        if self.faults is not None and not self.stopped and self.faults.hit("hallucination", t):
            self.stopped = True
        if self.stopped:
            return None, None
        self.rule.claims = claims
        action = misperceived(self.rule.decide(obs.env), obs.info, self.faults, t)
        return action, self.rule.intent

    def intent_of(self, obs: ConstructView, j: int, claims: dict[int, int]) -> int | None:
        """Return what agent `j`'s rules go for given the claims (with communication)."""
        planner = RuleAgent(j, obs.info, True, dict(claims), convention=self.convention)
        planner.decide(obs.env)
        return planner.intent


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

    def __init__(self, protocol: str, agents: str, harness=None, alias: str | None = None,
                 dials: Dials | None = None, key: str = "", seats: Any = None,
                 resources: Any = None, episode: str = "") -> None:
        self.protocol = check_protocol(protocol)
        self.resources, self.episode = resources, episode
        if agents not in ("rule", "llm"):
            raise ConfigError(f"a team under a protocol is rule or llm minds, not {agents}")
        self.agents, self.harness, self.alias = agents, harness, alias
        self.dials, self.key, self.seats = dials, key, seats

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`: fresh minds and protocol state."""
        self.env, self.info = env, info
        spec = get_protocol(self.protocol)
        if self.seats is not None:  # a mixed team: each seat's own mind
            catalog = menu_catalog(env, info)
            minds = [self._seat_mind(i, seat, spec, catalog, info)
                     for i, seat in enumerate(self.seats)]
        elif self.agents == "rule":
            minds: list[Any] = [
                ConstructRuleMind(i, RuleAgent(i, info, spec.talks),
                                  faults=Faults(self.dials, self.key, i) if self.dials else None)
                for i in range(env.n)]
        else:
            catalog = menu_catalog(env, info)
            minds = [ConstructLlmMind(agent=i, harness=self.harness, alias=str(self.alias),
                                      role=spec.role(i), catalog=catalog)
                     for i in range(env.n)]
        # a counterfactual replay's seat taken over (coordbench attribute)
        minds = switch_minds(minds, {"rule": lambda i: ConstructRuleMind(
            i, RuleAgent(i, info, spec.talks))}, "construct")
        self.team = ProtocolTeam(minds, self.protocol)
        self.step, self.used, self.budget = 0, 0, env.task.budget()
        self.last: list[Any] = []

    def _seat_mind(self, i: int, seat: Any, spec: Any, catalog: Any, info: dict[str, Any]
                   ) -> Any:
        """Return seat `i`'s mind: a model's, a rule mind (its variant's convention and
        dials, else the team's dials), or the person's of `coordbench play`."""
        if seat.kind == "llm":
            return ConstructLlmMind(agent=i, harness=self.harness, alias=str(seat.arg),
                                    role=spec.role(i), catalog=catalog)
        if seat.kind == "human":
            from coordbench.agents.team.human import human_mind

            from .human import ConstructPresenter

            return human_mind(self.resources, i, ConstructPresenter(catalog, render_view),
                              "constructs", spec.role(i), self.episode)
        convention, own = rule_variant(seat.arg, f"seat agent_{i}")
        dials = own or self.dials
        return ConstructRuleMind(i, RuleAgent(i, info, spec.talks, convention=convention),
                                 faults=Faults(dials, self.key, i) if dials else None,
                                 convention=convention)

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
