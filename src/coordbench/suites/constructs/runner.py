"""Run construct episodes: planners choose, the household engine executes, trajectories record.

Planner modes: `central` (C0: one decision picks one action for one agent; the others do
nothing that step), `decentralized` (every agent decides from the same snapshot, no messages)
and `decentralized_comm` (the same, plus a broadcast board: each agent's note from the previous
round). Landing order within a step is agent index order (deterministic). The budget counts
executed agent-actions, waits included. `ConstructSpec.buffer_capacity` overrides the D4
buffer capacity of the instances played (None: each instance's own, 2 in the built-in set).

Every header records the instance's construct facts completed by `score_facts`, so that all
four construct scores can be cross-applied to every trajectory.
"""

from __future__ import annotations

import asyncio
import copy
import re
from dataclasses import asdict, dataclass
from typing import Any

from coordbench.agents.constructs.learned import LearnedPlanners
from coordbench.agents.constructs.llm import LlmPlanners
from coordbench.agents.constructs.minds import ProtocolPlanners, check_protocol
from coordbench.agents.constructs.oracle import OraclePlanners
from coordbench.agents.constructs.planners import RulePlanners
from coordbench.agents.household.protocols import maybe_await, message_events
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    HouseholdStepEvent,
    MessageEvent,
    Trajectory,
)
from coordbench.envs.household.actions import WAIT
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.render import ImageStore, png_bytes, render_agent
from coordbench.envs.household.task import HouseholdTask, task_from_dict
from coordbench.errors import ConfigError
from coordbench.runner import Limits, Recorder

PLANNERS = ("central", "decentralized", "decentralized_comm")
AGENTS = ("oracle", "rule", "llm", "learned")


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

    def __post_init__(self) -> None:
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
        if self.agents == "llm" and not self.model:
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


def make_team(spec: ConstructSpec, harness=None):
    """Return the construct team `spec` names (a model harness for agents=llm)."""
    if spec.protocol is not None:
        return ProtocolPlanners(spec.protocol, spec.agents, harness, spec.model)
    if spec.agents == "oracle":
        return OraclePlanners(spec.planner)
    if spec.agents == "learned":
        return LearnedPlanners(str(spec.checkpoint))
    if spec.agents == "rule":
        return RulePlanners(spec.planner)
    return LlmPlanners(harness, spec.model, spec.planner)


async def arun_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                         harness=None, images: ImageStore | None = None,
                         limits: Limits | None = None) -> Trajectory:
    """Play one construct instance; return its trajectory.

    The episode ends when the goal is met, the action budget is spent, every planner has
    nothing left to do, or `limits` say so (token budget, run cost limit).
    """
    raw = with_capacity(raw, spec.buffer_capacity)
    task, info = load_instance(raw, episode_id)
    facts = score_facts(task, info)  # the header's; the team sees the instance's own info
    n = len(task.roles) if task.roles else len(task.start_rooms)
    env = HouseholdEnv(task, n, spec.seed, "with_close")
    budget = task.budget()
    team = make_team(spec, harness)
    team.reset(env, info)
    rec = Recorder(
        suite="constructs", episode_id=episode_id, task_id=str(raw["task_id"]), seed=spec.seed,
        team=[AgentSpec(id=f"agent_{i}", role=task.roles[i] if task.roles else "agent",
                        driver=spec.agents) for i in range(n)],
        protocol=spec.protocol or spec.planner, policy=spec.agents,
        models={f"agent_{i}": spec.model for i in range(n)} if spec.model else {},
        params={"agents": n, "family": raw["task_name"], "budget": budget,
                "observation": spec.observation, "construct": facts,
                **({"planner": spec.planner} if spec.protocol else {})},
        limits=limits)
    used = 0
    t = 0
    stop: str | None = None
    with rec:
        while used < budget and not env.success():
            rec.t = t
            image_paths = {}
            if images is not None and spec.observation == "image":
                image_paths = {i: str(images.root / f"{images.put(png_bytes(render_agent(env, i)))}"
                                                    ".png") for i in range(n)}
            step = await maybe_await(team.act(image_paths))
            chosen, errors = step.chosen, step.errors
            if all(a is None for a in chosen) and not errors:
                stop = "every planner has nothing left to do"
                break
            room = budget - used
            acting = [i for i in range(n) if chosen[i] is not None][:room]
            landing = list(range(n)) if spec.order == "index" else list(range(n))[::-1]
            outcomes = env.step([chosen[i] if i in acting else WAIT for i in range(n)], landing)
            records = []
            for i in range(n):
                if i in acting:
                    a, o = chosen[i], outcomes[i]
                    node = task.scene.nodes.get(a.obj) if isinstance(a.obj, int) else None
                    records.append(ActionRecord(agent=i, action=a.name, args=a.args(),
                                                obj_class=node.class_name if node else None,
                                                outcome=o.code, detail=o.detail,
                                                completed=list(o.completed)))
                elif i in errors:
                    code = "invalid" if errors[i].startswith("invalid:") else "protocol_failure"
                    records.append(ActionRecord(agent=i, action="none", outcome=code,
                                                detail=errors[i]))
            used += len(records)
            notes = team.executed(acting, records)
            rec.flush_calls()
            rec.emit(*message_events(t, step.messages))
            rec.emit(*(MessageEvent(t=t, phase="broadcast", sender=s, content=m)
                       for s, m in notes))
            rec.emit(HouseholdStepEvent(
                t=t, actions=records,
                conflicts=[Conflict(target=o, agents=m, winner=w)
                           for o, m, w in env.last_conflicts],
                satisfied=env.satisfied(), completion=env.completion_rate(),
                buffers={str(b): env.buffer_load(b) for b in facts.get("buffers", [])},
                images={f"agent_{i}": p.rsplit("/", 1)[-1][:-4]
                        for i, p in image_paths.items()}))
            t += 1
            stop = rec.stop_reason()
            if stop:
                break
    return rec.finish(t, success=env.success(), stop=stop,
                      detail=f"budget of {budget} actions exhausted")


def run_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                  harness=None, images: ImageStore | None = None) -> Trajectory:
    """Play one instance synchronously (see `arun_construct`)."""
    return asyncio.run(arun_construct(raw, spec, episode_id, harness, images))
