"""Run household episodes: observe -> communicate -> decide -> resolve -> execute -> record."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict, dataclass

from coordbench.agents.household_oracle import OracleTeam
from coordbench.agents.household_rule import RuleMind
from coordbench.agents.protocols import PROTOCOLS, Decision, Mind, TeamProtocol, maybe_await
from coordbench.core.provenance import git_sha, version
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.envs.household.actions import WAIT, Outcome
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.observe import observe
from coordbench.envs.household.render import ImageStore, png_bytes, render_agent, render_team
from coordbench.envs.household.task import PRIORS, HouseholdTask
from coordbench.errors import ConfigError

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
        if self.agents == "llm" and not self.model:
            raise ConfigError("--agents llm needs --model ALIAS")

    def alias(self, agent: int) -> str | None:
        """Return the model alias driving `agent` (None for non-model teams)."""
        if self.agents != "llm":
            return None
        if agent == 0 and self.leader_model and self.protocol.startswith("leader"):
            return self.leader_model
        return self.model

    def as_dict(self) -> dict:
        """Return the spec as a plain dict."""
        return asdict(self)


def make_minds(spec: HouseholdSpec) -> list[Mind]:
    """Return rule-based minds for the team (communication flag from the protocol)."""
    return [RuleMind(i, comm=spec.protocol != "none") for i in range(spec.team)]


def run_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
             minds: list[Mind] | None = None, images: ImageStore | None = None) -> Trajectory:
    """Play one case synchronously (see `arun_case`); return its trajectory."""
    return asyncio.run(arun_case(task, spec, case_seed, episode_id, minds, images))


async def arun_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
                    minds: list[Mind] | None = None, images: ImageStore | None = None,
                    max_steps: int | None = None, stop: Callable[[], str | None] | None = None
                    ) -> Trajectory:
    """Play one case to success or budget exhaustion; return its trajectory.

    `max_steps` caps the team steps below the budget (short smoke episodes); `stop` is polled
    after every step and ends the episode early (termination normal_stop) with its reason.

    With an `images` store, each agent's four-view image (and, under leader_vision, the team
    composite) is rendered every step, stored once by content hash, and referenced from the
    step event and from the observation (`obs.extra["image"]`).
    """
    n = spec.team
    try:
        env = HouseholdEnv(task, n, case_seed)
    except ValueError as e:
        raise ConfigError(f"task {task.task_id}: {e}") from None
    steps = task.team_steps(n, spec.prior)
    if max_steps is not None:
        steps = min(steps, max_steps)
    reason: str | None = None
    goal_text = task.goal_text(spec.prior)
    hints = task.hints(spec.prior, case_seed)
    oracle = OracleTeam(env) if spec.agents == "oracle" else None
    minds = minds if minds is not None else ([] if oracle else make_minds(spec))
    protocol = TeamProtocol(spec.protocol)
    events: list = []
    last: list[Outcome | None] = [None] * n
    for t in range(steps):
        views: dict[str, str] = {}
        paths: dict[str, str] = {}
        if images is not None:
            views = {f"agent_{i}": images.put(png_bytes(render_agent(env, i))) for i in range(n)}
            if spec.protocol == "leader_vision":
                views["team"] = images.put(png_bytes(render_team(env)))
            paths = {k: str(images.root / f"{v}.png") for k, v in views.items()}
        if oracle is None:
            obs = [observe(env, i, goal_text=goal_text, hints=hints, steps_left=steps - t,
                           last=last[i]) for i in range(n)]
            for i, o in enumerate(obs):
                o.extra.update({k: v for k, v in (("image", paths.get(f"agent_{i}")),
                                                  ("team_image", paths.get("team"))) if v})
            inboxes, transcript = await protocol.communicate(minds, obs)
            events.extend(MessageEvent(t=t, phase=m.phase, round=m.round, sender=m.sender,
                                       recipients=list(m.recipients) if m.recipients else None,
                                       content=m.content, tokens=m.tokens) for m in transcript)
            decisions = list(await asyncio.gather(*(maybe_await(minds[i].act(obs[i], inboxes[i]))
                                                    for i in range(n))))
            events.extend(_drain_calls(t, minds))
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
        events.append(HouseholdStepEvent(
            t=t, actions=records,
            conflicts=[Conflict(target=obj, agents=members, winner=w)
                       for obj, members, w in env.last_conflicts],
            satisfied=env.satisfied(), completion=env.completion_rate(), images=views))
        if env.success():
            break
        reason = stop() if stop is not None else None
        if reason:
            break
    success = env.success()
    if success:
        end = EpisodeEndEvent(t=env.t, success=True, termination="success")
    elif reason:
        end = EpisodeEndEvent(t=env.t, success=False, termination="normal_stop", detail=reason)
    else:
        end = EpisodeEndEvent(t=env.t, success=False, termination="truncated",
                              detail="step budget exhausted")
    events.append(end)
    header = TrajectoryHeader(
        episode_id=episode_id, suite="mecobench", task_id=str(task.task_id), seed=case_seed,
        team=[AgentSpec(id=f"agent_{i}", role="leader" if (
            i == 0 and spec.protocol.startswith("leader")) else "agent", driver=spec.agents)
            for i in range(n)],
        protocol=spec.protocol, policy=spec.agents, coordbench_version=version(),
        git_sha=git_sha(),
        params={"structure": task.structure, "agents": n, "prior": spec.prior,
                "budget": task.budget(spec.prior), "team_steps": steps,
                "required": {g.key: g.count for g in task.subgoals},
                "goal_classes": sorted({g.obj_class for g in task.subgoals}),
                "required_handovers": task.required_handovers, "source": task.source})
    header = header.model_copy(update={"models": {
        f"agent_{i}": spec.alias(i) for i in range(n) if spec.alias(i)}})
    return Trajectory(header=header, events=events)


def _drain_calls(t: int, minds: list[Mind]) -> list[ModelCallEvent]:
    """Return the model calls the minds made this step as events (and forget them)."""
    out = []
    for m in minds:
        calls = getattr(m, "calls", None)
        if calls:
            out.extend(ModelCallEvent(t=t, **c) for c in calls)
            calls.clear()
    return out
