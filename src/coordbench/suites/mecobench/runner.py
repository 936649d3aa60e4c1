"""Run household episodes: observe -> communicate -> decide -> resolve -> execute -> record."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass

from coordbench.agents.household.oracle import OracleTeam
from coordbench.agents.household.protocols import (
    PROTOCOLS,
    Decision,
    Mind,
    ProtocolTeam,
    get_protocol,
    message_events,
)
from coordbench.agents.household.rule import RuleMind
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    HouseholdStepEvent,
    Trajectory,
)
from coordbench.envs.household.actions import CONFLICT_SETS, WAIT, Outcome
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.observe import observe
from coordbench.envs.household.render import ImageStore, png_bytes, render_agent, render_team
from coordbench.envs.household.task import PRIORS, HouseholdTask
from coordbench.errors import ConfigError
from coordbench.runner import Limits, Recorder

AGENT_KINDS = ("oracle", "rule", "llm")


@dataclass(frozen=True)
class HouseholdSpec:
    """One household condition: structure, team, protocol, minds and prior variant."""

    structure: str
    team: int
    protocol: str = "none"
    agents: str = "rule"
    prior: str = "full"
    seed: int = 0
    model: str | None = None  # model alias of every agent (agents=llm)
    leader_model: str | None = None  # alias of agent 0 under leader protocols
    conflict_set: str = "paper"  # same-step contention: paper (grab/open) | with_close

    def __post_init__(self) -> None:
        if self.structure not in ("parallel", "sequential"):
            raise ConfigError(f"--structure must be parallel or sequential, not {self.structure!r}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {self.protocol!r}; choose from "
                              f"{', '.join(PROTOCOLS)}")
        if self.agents not in AGENT_KINDS:
            raise ConfigError(f"unknown --agents {self.agents!r}; choose from "
                              f"{', '.join(AGENT_KINDS)}")
        if self.prior not in PRIORS:
            raise ConfigError(f"unknown prior {self.prior!r}; choose from {', '.join(PRIORS)}")
        if self.team < 1:
            raise ConfigError(f"--team must be >= 1, got {self.team}")
        if self.structure == "sequential" and self.team != 2:
            raise ConfigError("sequential tasks are played by teams of 2 (--team 2)")
        if self.conflict_set not in CONFLICT_SETS:
            raise ConfigError(f"unknown --conflict-set {self.conflict_set!r}; choose from "
                              f"{', '.join(CONFLICT_SETS)}")
        if self.agents == "llm" and not self.model:
            raise ConfigError("--agents llm needs --model ALIAS")

    def alias(self, agent: int) -> str | None:
        """Return the model alias driving `agent` (None for non-model teams)."""
        if self.agents != "llm":
            return None
        if self.leader_model and get_protocol(self.protocol).role(agent) == "leader":
            return self.leader_model
        return self.model

    def as_dict(self) -> dict:
        """Return the spec as a plain dict."""
        return asdict(self)


def make_minds(spec: HouseholdSpec, case_seed: int = 0) -> list[Mind]:
    """Return rule-based minds for the team (they talk when the protocol lets them)."""
    talks = get_protocol(spec.protocol).talks
    return [RuleMind(i, comm=talks, seed=case_seed) for i in range(spec.team)]


def run_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
             minds: list[Mind] | None = None, images: ImageStore | None = None) -> Trajectory:
    """Play one case synchronously (see `arun_case`); return its trajectory."""
    return asyncio.run(arun_case(task, spec, case_seed, episode_id, minds, images))


async def arun_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
                    minds: list[Mind] | None = None, images: ImageStore | None = None,
                    max_steps: int | None = None, limits: Limits | None = None) -> Trajectory:
    """Play one case to success or budget exhaustion; return its trajectory.

    `max_steps` caps the team steps below the budget (short smoke episodes); the episode also
    stops early (termination normal_stop, with the reason) when `limits` say so: the team's
    token budget or the run's cost limit.

    With an `images` store, each agent's four-view image (and, where the protocol gives the
    leader every view, the team composite) is rendered every step, stored once by content
    hash, and referenced from the step event and from the observation (`obs.extra["image"]`).
    """
    n = spec.team
    try:
        env = HouseholdEnv(task, n, case_seed, spec.conflict_set)
    except ValueError as e:
        raise ConfigError(f"task {task.task_id}: {e}") from None
    protocol = get_protocol(spec.protocol)
    steps = task.team_steps(n, spec.prior)
    if max_steps is not None:
        steps = min(steps, max_steps)
    goal_text = task.goal_text(spec.prior)
    hints = task.hints(spec.prior, case_seed)
    described = task.described(spec.prior)
    spots = task.spots(spec.prior)
    oracle = OracleTeam(env) if spec.agents == "oracle" else None
    if minds is None and oracle is None:
        minds = make_minds(spec, case_seed)
    team = None if oracle else ProtocolTeam(minds, spec.protocol)
    rec = Recorder(
        suite="mecobench", episode_id=episode_id, task_id=str(task.task_id), seed=case_seed,
        team=[AgentSpec(id=f"agent_{i}", role=protocol.role(i), driver=spec.agents)
              for i in range(n)],
        protocol=spec.protocol, policy=spec.agents,
        models={f"agent_{i}": spec.alias(i) for i in range(n) if spec.alias(i)},
        params={"structure": task.structure, "agents": n, "prior": spec.prior,
                "budget": task.budget(spec.prior), "team_steps": steps,
                "required": {g.key: g.count for g in task.subgoals},
                "goal_classes": sorted({g.obj_class for g in task.subgoals}),
                "required_handovers": task.required_handovers, "source": task.source,
                "conflict_set": spec.conflict_set},
        limits=limits)
    reason: str | None = None
    last: list[Outcome | None] = [None] * n
    with rec:
        for t in range(steps):
            rec.t = t
            views: dict[str, str] = {}
            paths: dict[str, str] = {}
            if images is not None:
                views = {f"agent_{i}": images.put(png_bytes(render_agent(env, i)))
                         for i in range(n)}
                if protocol.team_view:
                    views["team"] = images.put(png_bytes(render_team(env)))
                paths = {k: str(images.root / f"{v}.png") for k, v in views.items()}
            if team is not None:
                obs = [observe(env, i, goal_text=goal_text, hints=hints, described=described,
                               spots=spots, steps_left=steps - t, last=last[i]) for i in range(n)]
                for i, o in enumerate(obs):
                    o.extra.update({k: v for k, v in (("image", paths.get(f"agent_{i}")),
                                                      ("team_image", paths.get("team"))) if v})
                decisions, transcript = await team.act(obs)
                rec.emit(*message_events(t, transcript))
                rec.flush_calls()
            else:
                decisions = [Decision(a) for a in oracle.act()]
            actions = [d.action or WAIT for d in decisions]
            outcomes = env.step(actions)
            records = []
            for i, (d, a, o) in enumerate(zip(decisions, actions, outcomes, strict=True)):
                if d.action is None:
                    o = Outcome("protocol_failure", d.error or "no action")
                last[i] = o
                node = task.scene.nodes.get(a.obj) if isinstance(a.obj, int) else None
                records.append(ActionRecord(
                    agent=i, action=a.name if d.action else "none", args=a.args(),
                    obj_class=node.class_name if node else None, outcome=o.code,
                    detail=o.detail, completed=list(o.completed), raw=d.raw or None,
                    tokens=d.tokens))
            rec.emit(HouseholdStepEvent(
                t=t, actions=records,
                conflicts=[Conflict(target=obj, agents=members, winner=w)
                           for obj, members, w in env.last_conflicts],
                satisfied=env.satisfied(), completion=env.completion_rate(), images=views))
            if env.success():
                break
            reason = rec.stop_reason()
            if reason:
                break
    return rec.finish(env.t, success=env.success(), stop=reason,
                      detail="step budget exhausted")
