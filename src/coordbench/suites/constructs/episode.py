"""Run construct episodes: planners choose, the household engine executes, trajectories record.

Planner modes: `central` (C0: one decision picks one action for one agent; the others do
nothing that step), `decentralized` (every agent decides from the same snapshot, no messages)
and `decentralized_comm` (the same, plus a broadcast board: each agent's note from the previous
round). Landing order within a step is agent index order (deterministic). The budget counts
executed agent-actions, waits included. `ConstructSpec.buffer_capacity` overrides the D4
buffer capacity of the instances played (None: each instance's own, 2 in the built-in set).

A planner reply that cannot be parsed or names an action not on its menu is a protocol
failure, and as in CoCoBench's protocol it ends the episode (termination `protocol_failure`):
under the central planner at once; under the decentralized planners, where the paper's agent
with a bad reply simply does not act that round, in the first step in which no agent acts
and at least one reply failed. `on_protocol_failure="skip"` keeps coordbench's earlier rule
(the failing agent idles and the episode runs on).

Every header records the instance's construct facts completed by `score_facts`, so that all
four construct scores can be cross-applied to every trajectory.
"""

from __future__ import annotations

import asyncio
import copy
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from coordbench.agents.constructs.learned import LearnedPlanners
from coordbench.agents.constructs.llm import LlmPlanners
from coordbench.agents.constructs.minds import ProtocolPlanners, check_protocol
from coordbench.agents.constructs.oracle import OraclePlanners
from coordbench.agents.constructs.planners import RULE_DIALS, RuleAgent, RulePlanners, StepChoice
from coordbench.agents.team.claims import checked_variant
from coordbench.agents.team.counterfactual import Swap, current
from coordbench.agents.team.dials import Dials, check_applicable, dials_from, with_message_cost
from coordbench.agents.team.protocols import maybe_await, message_events
from coordbench.agents.team.seats import Seat
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    MessageEvent,
    Trajectory,
)
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.render import ImageStore
from coordbench.envs.household.task import HouseholdTask, task_from_dict
from coordbench.errors import ConfigError
from coordbench.runner import Limits, Recorder
from coordbench.suites.household_episode import Choice, StepView, Turn, play_household

PLANNERS = ("central", "decentralized", "decentralized_comm")
AGENTS = ("oracle", "rule", "llm", "learned")
ON_PROTOCOL_FAILURE = ("end", "skip")


@dataclass(frozen=True)
class ConstructSpec:
    """A construct condition: planner mode, who plans, what it sees."""

    planner: str = "central"
    agents: str = "rule"
    observation: str = "blind"
    model: str | None = None
    seed: int = 0
    order: str = "index"  # landing order within a step: index or reverse
    # D4 buffer capacity for every instance played; None: each instance's own (v1: 2)
    buffer_capacity: int | None = None
    # a household protocol over one mind per agent (planner decentralized); None: the planner
    protocol: str | None = None
    # agents "learned": the trained team's checkpoint (`coordbench constructs train`)
    checkpoint: str | None = None
    # a planner reply that cannot be parsed or is illegal: "end" the episode as a protocol
    # failure (the paper's protocol), or "skip" (the agent idles; coordbench's earlier rule)
    on_protocol_failure: str = "end"
    # injected failures of the rule planners (agents.team.dials); None: none, nothing recorded
    dials: Dials | None = None
    # a mixed team: each seat's mind (agents.team.seats; llm:ALIAS or rule) under `protocol`;
    # None: every seat is `agents`
    seats: tuple[Seat, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dials", dials_from(self.dials))
        if self.seats is not None:
            seats = tuple(s if isinstance(s, Seat) else Seat(**s) for s in self.seats)
            object.__setattr__(self, "seats", seats)
            bad = [s for s in seats if s.kind not in ("llm", "rule", "human")]
            if bad:
                raise ConfigError(f"a construct seat is llm:ALIAS, rule or human, not "
                                  f"{bad[0].kind}")
            for i, x in enumerate(seats):
                if x.kind == "rule":
                    checked_variant(x.arg, f"seat agent_{i}", RULE_DIALS,
                                     "construct rule planners (they see the whole state "
                                     "each step)")
            if self.protocol is None:
                raise ConfigError("a mixed construct team plays one mind per seat: it needs "
                                  "--protocol (none: no messages)")
            if self.model:
                raise ConfigError("--team names each seat's model: drop --model")
        if self.dials is not None and self.agents != "rule":
            raise ConfigError(f"--dial is for --agents rule, not {self.agents}")
        check_applicable(self.dials, RULE_DIALS, "construct rule planners (they see the "
                                                 "whole state each step)")
        if self.on_protocol_failure not in ON_PROTOCOL_FAILURE:
            raise ConfigError(f"--on-protocol-failure must be end or skip, not "
                              f"{self.on_protocol_failure!r}")
        if self.buffer_capacity is not None and (
                isinstance(self.buffer_capacity, bool) or not isinstance(self.buffer_capacity, int)
                or self.buffer_capacity < 1):
            raise ConfigError(f"--buffer-capacity must be an integer >= 1, got "
                              f"{self.buffer_capacity!r}")
        if self.planner not in PLANNERS:
            raise ConfigError(f"unknown --planner {self.planner!r}; choose from "
                              f"{', '.join(PLANNERS)}")
        if self.agents not in AGENTS:
            raise ConfigError(f"unknown --agents {self.agents!r}; choose from {', '.join(AGENTS)}")
        if self.order not in ("index", "reverse"):
            raise ConfigError(f"--order must be index or reverse, not {self.order!r}")
        if self.observation not in ("image", "blind"):
            raise ConfigError(f"--observation must be image or blind, not {self.observation!r}")
        if self.agents == "llm" and not self.model and self.seats is None:
            raise ConfigError("--agents llm needs --model ALIAS")
        if (self.agents == "learned") != (self.checkpoint is not None):
            raise ConfigError("--agents learned needs --checkpoint PATH (and --checkpoint "
                              "needs --agents learned)")
        if self.agents == "learned":
            if self.model:
                raise ConfigError("--model is for --agents llm, not learned")
            if self.planner != "decentralized":
                raise ConfigError(f"a learned team decides per agent: it needs --planner "
                                  f"decentralized, not {self.planner}")
            from coordbench.learn.menu_ppo import load_cached

            load_cached(str(self.checkpoint))  # a missing or foreign file: one line, now
        if self.protocol is not None:
            check_protocol(self.protocol)
            if self.planner != "decentralized":
                raise ConfigError(f"--protocol runs one mind per agent: it needs --planner "
                                  f"decentralized, not {self.planner}")
            if self.agents not in ("rule", "llm"):
                raise ConfigError(f"--protocol needs --agents rule or llm, not "
                                  f"{self.agents} (an oracle or a learned team does not talk)")

    def as_dict(self) -> dict[str, Any]:
        """Return the spec as a plain dict."""
        return asdict(self)


def load_instance(raw: dict[str, Any], where: str) -> tuple[HouseholdTask, dict[str, Any]]:
    """Return (task, construct info) of one instance dict; ConfigError names a bad field."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: an instance must be a JSON object")
    info = raw.get("coordbench_construct")
    if not isinstance(info, dict) or info.get("construct") not in ("D1", "D2", "D3", "D4"):
        raise ConfigError(f"{where}: field 'coordbench_construct' is missing or malformed")
    return task_from_dict(raw, where), info


def with_capacity(raw: dict[str, Any], capacity: int | None) -> dict[str, Any]:
    """Return the instance with every buffer station's capacity set to `capacity` (in the
    engine's `coordbench_buffers`, the construct facts and the goal text); the instance
    itself when `capacity` is None or it has no buffer station."""
    if capacity is None or not raw.get("coordbench_buffers"):
        return raw
    out = copy.deepcopy(raw)
    out["coordbench_buffers"] = {b: capacity for b in out["coordbench_buffers"]}
    info = out.get("coordbench_construct")
    if isinstance(info, dict) and "capacity" in info:
        info["capacity"] = capacity
    if isinstance(out.get("raw_goal"), str):
        out["raw_goal"] = re.sub(r"\(it holds \d+\)", f"(it holds {capacity})", out["raw_goal"])
    return out


def score_facts(task: HouseholdTask, info: dict[str, Any]) -> dict[str, Any]:
    """Return the construct facts `info` completed with what every cross-applied score needs
    and the instance does not list, derived from its task: `targets` (each item's goal
    receptacle, from the D4 `target`), `containers` (the goal targets that are containers
    that open: C_D2's precedence-relevant operations), `knife` (the scene's one knife, if it
    has exactly one: C_D3's shared tool) and `buffers` (the buffer stations: C_D4). Facts the
    instance gives are kept as they are (so its own construct's score does not change); M*
    references (`m_star`, `oracle_makespan`, `oracle_steps`) come from the instance only."""
    out = dict(info)
    nodes = task.scene.nodes
    items = list(info.get("items", []))
    if "targets" not in out and isinstance(info.get("target"), int):
        out["targets"] = {str(i): info["target"] for i in items}
    if "containers" not in out:
        goals = sorted({int(t) for t in out.get("targets", {}).values()})
        out["containers"] = [t for t in goals if t in nodes and nodes[t].is_container
                             and nodes[t].can_open]
    if "knife" not in out:
        knives = [n for n, nd in nodes.items() if nd.class_name == "knife" and nd.grabbable]
        if len(knives) == 1:
            out["knife"] = knives[0]
    if "buffers" not in out and task.buffers:
        out["buffers"] = sorted(task.buffers)
    return out


def make_team(spec: ConstructSpec, harness=None, key: str = "", resources: Any = None,
              episode: str = ""):
    """Return the construct team `spec` names (a model harness for agents=llm); `key` names
    the episode in the draws of injected failures (its dials)."""
    if spec.protocol is not None:  # its minds are taken over where they are made
        return ProtocolPlanners(spec.protocol, spec.agents, harness, spec.model, spec.dials,
                                key, spec.seats, resources, episode)
    planners: Any
    if spec.agents == "oracle":
        planners = OraclePlanners(spec.planner)
    elif spec.agents == "learned":
        planners = LearnedPlanners(str(spec.checkpoint))
    elif spec.agents == "rule":
        planners = RulePlanners(spec.planner, spec.dials, key)
    else:
        planners = LlmPlanners(harness, spec.model, spec.planner)
    swap = current()
    if swap is not None and swap.reference != "clean":
        return SeatTakenOver(planners, swap, spec.planner == "decentralized_comm")
    return planners


class SeatTakenOver:
    """Planners whose seat `swap.seat` a rule agent plays from team step `swap.step` on (a
    counterfactual replay, `coordbench attribute`): the rule agent reads the shared state
    and the broadcast board as the team's own rule agents do."""

    def __init__(self, planners: Any, swap: Swap, comm: bool) -> None:
        if swap.reference != "rule":
            raise ConfigError(f"--reference {swap.reference}: a construct seat's references "
                              "are clean, rule")
        self.planners, self.swap, self.comm = planners, swap, comm
        self.name = getattr(planners, "name", type(planners).__name__)
        self.t = 0

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env` (the planners and the rule agent)."""
        if not 0 <= self.swap.seat < env.n:
            raise ConfigError(f"seat agent_{self.swap.seat}: the team has seats "
                              f"agent_0..agent_{env.n - 1}")
        self.planners.reset(env, info)
        self.env, self.t = env, 0
        self.rule = RuleAgent(self.swap.seat, info, self.comm)
        self.board: list[tuple[int, str]] = []

    async def act(self, images: dict[int, str]) -> StepChoice:
        """Return the planners' choices, the taken-over seat's from the rule agent."""
        step = await maybe_await(self.planners.act(images))
        t, self.t = self.t, self.t + 1
        if t < self.swap.step:
            return step
        seat = self.swap.seat
        self.rule.read(self.board)
        chosen = list(step.chosen)
        chosen[seat] = self.rule.decide(self.env)
        return replace(step, chosen=chosen,
                       errors={k: v for k, v in step.errors.items() if k != seat})

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Return the planners' notes (the rule agent reads them next step)."""
        notes = self.planners.executed(acting, records)
        self.board = list(notes)
        return notes


class InstanceTeam:
    """A construct team on the household episode: the planners choose from the shared state
    (seeing their rendered views under `--observation image`), at most the actions the budget
    has room for land, in the spec's landing order."""

    def __init__(self, planners: Any, n: int, budget: int, order: str,
                 central: bool = False, end_on_failure: bool = True,
                 dials: Dials | None = None) -> None:
        self.planners, self.n, self.budget = planners, n, budget
        self.central, self.end_on_failure, self.dials = central, end_on_failure, dials
        self.name = getattr(planners, "name", type(planners).__name__)
        self.landing = list(range(n)) if order == "index" else list(range(n))[::-1]
        self.used = self.t = 0

    def reset(self) -> None:
        """Start counting the budget afresh."""
        self.used = 0

    async def act(self, view: StepView) -> Turn | None:
        """Return the step's choices, or None when every planner has nothing left to do."""
        self.t = view.t
        images = {int(k.removeprefix("agent_")): v for k, v in view.images.items()}
        step = await maybe_await(self.planners.act(images))
        chosen, errors = step.chosen, step.errors
        if all(a is None for a in chosen) and not errors:
            return None
        acting = [i for i in range(self.n) if chosen[i] is not None][:self.budget - self.used]
        choices = []
        for i in range(self.n):
            if i in acting:
                choices.append(Choice(chosen[i]))
            elif i in errors:
                code = "invalid" if errors[i].startswith("invalid:") else "protocol_failure"
                choices.append(Choice(None, (code, errors[i])))
            else:
                choices.append(Choice(None))
        ends = None
        if errors and self.end_on_failure and (self.central or not acting):
            ends = "; ".join(f"agent_{i}: {why}" for i, why in sorted(errors.items()))
        return Turn(choices, self.landing,
                    message_events(view.t, with_message_cost(step.messages, self.dials)), ends)

    def executed(self, acting: list[int], records: list[ActionRecord]) -> list[MessageEvent]:
        """Count the step's actions against the budget; return the notes planners post."""
        self.used += len(records)
        return with_message_cost([MessageEvent(t=self.t, phase="broadcast", sender=s, content=m)
                                  for s, m in self.planners.executed(acting, records)],
                                 self.dials)

    def exhausted(self) -> bool:
        """Return whether the action budget is spent."""
        return self.used >= self.budget


async def arun_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                         harness=None, images: ImageStore | None = None,
                         limits: Limits | None = None, resources: Any = None) -> Trajectory:
    """Play one construct instance; return its trajectory.

    The episode ends when the goal is met, the action budget is spent, every planner has
    nothing left to do, or `limits` say so (token budget, run cost limit).
    """
    raw = with_capacity(raw, spec.buffer_capacity)
    task, info = load_instance(raw, episode_id)
    facts = score_facts(task, info)  # the header's; the team sees the instance's own info
    n = len(task.roles) if task.roles else len(task.start_rooms)
    if spec.seats is not None and len(spec.seats) != n:
        raise ConfigError(f"{episode_id}: the team spec has {len(spec.seats)} seats, the "
                          f"instance a team of {n}")
    env = HouseholdEnv(task, n, spec.seed, "with_close")
    budget = task.budget()
    planners = make_team(spec, harness, f"{spec.seed}/{raw['task_id']}", resources, episode_id)
    planners.reset(env, info)
    team = InstanceTeam(planners, n, budget, spec.order, spec.planner == "central"
                        and spec.protocol is None, spec.on_protocol_failure == "end",
                        spec.dials)
    rec = Recorder(
        suite="constructs", episode_id=episode_id, task_id=str(raw["task_id"]), seed=spec.seed,
        team=[AgentSpec(id=f"agent_{i}", role=task.roles[i] if task.roles else "agent",
                        driver=spec.agents if spec.seats is None else spec.seats[i].driver)
              for i in range(n)],
        protocol=spec.protocol or spec.planner, policy=spec.agents,
        models=({f"agent_{i}": spec.model for i in range(n)} if spec.model else
                {f"agent_{i}": str(s.arg) for i, s in enumerate(spec.seats or ())
                 if s.kind == "llm"}),
        params={"agents": n, "family": raw["task_name"], "budget": budget,
                "observation": spec.observation, "construct": facts,
                **({"dials": spec.dials.as_dict()} if spec.dials is not None else {}),
                **({"planner": spec.planner} if spec.protocol else {})},
        limits=limits)
    with rec:
        t, stop, broke = await play_household(env, rec, team, steps=budget, images=images,
                                              view_agents=spec.observation == "image",
                                              buffers=facts.get("buffers", []))
    return rec.finish(t, success=env.success(), stop=stop, protocol_failure=broke,
                      detail=f"budget of {budget} actions exhausted")


def run_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                  harness=None, images: ImageStore | None = None) -> Trajectory:
    """Play one instance synchronously (see `arun_construct`)."""
    return asyncio.run(arun_construct(raw, spec, episode_id, harness, images))
