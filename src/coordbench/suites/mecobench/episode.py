"""Run household episodes: observe -> communicate -> decide -> resolve -> execute -> record."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any

from coordbench.agents.household.llm import LlmMind
from coordbench.agents.household.oracle import OracleTeam
from coordbench.agents.household.rule import RuleMind
from coordbench.agents.team.claims import checked_variant, rule_variant
from coordbench.agents.team.counterfactual import swap_for, switch_minds
from coordbench.agents.team.dials import (
    Dials,
    Faults,
    check_applicable,
    dials_from,
    with_message_cost,
)
from coordbench.agents.team.protocols import (
    PROTOCOLS,
    Mind,
    ProtocolSpec,
    ProtocolTeam,
    get_protocol,
    message_events,
)
from coordbench.agents.team.seats import Seat, has_model
from coordbench.core.trajectory import ActionRecord, AgentSpec, MessageEvent, Trajectory
from coordbench.envs.household.actions import CONFLICT_SETS, Action, Outcome
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.observe import observe
from coordbench.envs.household.render import ImageStore
from coordbench.envs.household.task import PRIORS, HouseholdTask
from coordbench.errors import ConfigError
from coordbench.runner import Limits, Recorder
from coordbench.suites.household_episode import Choice, StepView, Turn, play_household

AGENT_KINDS = ("oracle", "rule", "llm")
SEAT_KINDS = ("llm", "rule", "human")  # what a MECoBench seat of a mixed team can be
# every dial has a household meaning (agents.household.rule)
RULE_DIALS = ("perception", "hallucination", "message_loss", "memory", "protocol_violation",
              "message_cost", "contention", "handover_slip", "fail_at")


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
    # injected failures of the rule minds (agents.team.dials); None: none, nothing recorded
    dials: Dials | None = None
    # a mixed team: each seat's agent (agents.team.seats; llm:ALIAS or rule), in seat order;
    # None: every seat is `agents`
    seats: tuple[Seat, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dials", dials_from(self.dials))
        if self.seats is not None:
            seats = tuple(s if isinstance(s, Seat) else Seat(**s) for s in self.seats)
            object.__setattr__(self, "seats", seats)
            if len(seats) != self.team:
                raise ConfigError(f"--team names {len(seats)} seats for a team of {self.team}")
            kind = "llm" if has_model(seats) else "rule"
            if self.agents != kind:
                raise ConfigError(f"a mixed team's --agents is {kind}, not {self.agents}")
            if self.model or self.leader_model:
                raise ConfigError("--team names each seat's model: drop --model and "
                                  "--leader-model")
            bad = [s for s in seats if s.kind not in SEAT_KINDS]
            if bad:
                raise ConfigError(f"a MECoBench seat is llm:ALIAS, rule or human, not "
                                  f"{bad[0].kind}")
            for i, x in enumerate(seats):
                if x.kind == "rule":
                    checked_variant(x.arg, f"seat agent_{i}", RULE_DIALS,
                                     "MECoBench rule minds")
                if x.kind == "rule" and rule_variant(x.arg, f"seat agent_{i}")[0] != "lower":
                    raise ConfigError(f"seat agent_{i}: household rule minds keep no claim "
                                      "convention (rule:reverse is for STAT and construct "
                                      "seats); their variants are dials, e.g. "
                                      "rule:perception=0.2")
        if self.dials is not None and self.agents != "rule":
            raise ConfigError(f"--dial is for --agents rule, not {self.agents}")
        check_applicable(self.dials, RULE_DIALS, "MECoBench rule minds")
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
        if self.agents == "llm" and not self.model and self.seats is None:
            raise ConfigError("--agents llm needs --model ALIAS")

    def alias(self, agent: int, protocol: ProtocolSpec | None = None) -> str | None:
        """Return the model alias driving `agent` (None for non-model teams); `protocol`: the
        spec's protocol where the caller has already looked it up."""
        if self.agents != "llm":
            return None
        if self.seats is not None:
            seat = self.seats[agent]
            return seat.arg if seat.kind == "llm" else None
        proto = protocol or get_protocol(self.protocol)
        if self.leader_model and proto.role(agent) == "leader":
            return self.leader_model
        return self.model

    def as_dict(self) -> dict:
        """Return the spec as a plain dict."""
        return asdict(self)

    def driver(self, agent: int) -> str:
        """Return what drives seat `agent` as the header names it (`llm:A`, `rule`, ...)."""
        return self.seats[agent].driver if self.seats is not None else self.agents


def seat_mind(spec: HouseholdSpec, protocol: ProtocolSpec, i: int, seat: Seat, case_seed: int,
              harness: Any, max_reply_tokens: int | None, resources: Any = None,
              episode: str = "") -> Mind:
    """Return seat `i`'s mind in a mixed team: a model's, a rule mind (with its variant's
    dials, else the team's), or the person's of `coordbench play` (`resources.seat`)."""
    if seat.kind == "llm":
        return LlmMind(i, harness, spec.alias(i, protocol) or "", role=protocol.role(i),
                       max_tokens=max_reply_tokens)
    if seat.kind == "human":
        from coordbench.agents.household.human import HouseholdPresenter
        from coordbench.agents.team.human import human_mind

        return human_mind(resources, i, HouseholdPresenter(), "mecobench", protocol.role(i),
                          episode)
    dials = rule_variant(seat.arg, f"seat agent_{i}")[1] or spec.dials
    return RuleMind(i, comm=protocol.talks, seed=case_seed,
                    faults=Faults(dials, case_seed, i) if dials else None)


def make_case_team(env: HouseholdEnv, task: HouseholdTask, spec: HouseholdSpec,
                   case_seed: int, steps: int, minds: list[Mind] | None = None,
                   harness: Any = None, max_reply_tokens: int | None = None,
                   resources: Any = None, episode: str = "") -> CaseTeam:
    """Return the team `spec` names for one case, its protocol looked up here once: the
    oracle, rule minds (they talk where the protocol lets them), model-driven minds on
    `harness` (a leader's alias where the protocol has one), or the given `minds`."""
    protocol = get_protocol(spec.protocol)
    if spec.agents == "oracle":
        minds = None
    elif minds is None and spec.seats is not None:  # a mixed team: each seat its own mind
        minds = [seat_mind(spec, protocol, i, seat, case_seed, harness, max_reply_tokens,
                           resources, episode) for i, seat in enumerate(spec.seats)]
    elif minds is None and spec.agents == "rule":
        minds = [RuleMind(i, comm=protocol.talks, seed=case_seed,
                          faults=Faults(spec.dials, case_seed, i) if spec.dials else None)
                 for i in range(spec.team)]
    elif minds is None and spec.agents == "llm":
        minds = [LlmMind(i, harness, spec.alias(i, protocol) or "", role=protocol.role(i),
                         max_tokens=max_reply_tokens) for i in range(spec.team)]
    if minds is not None:  # a counterfactual replay's seat taken over (coordbench attribute)
        minds = switch_minds(minds, {"rule": lambda i: RuleMind(
            i, comm=protocol.talks, seed=case_seed)}, "MECoBench")
    else:
        swap_for(spec.team, {}, "MECoBench oracle team")
    return CaseTeam(env, task, spec, protocol, case_seed, steps, minds)


def run_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
             minds: list[Mind] | None = None, images: ImageStore | None = None) -> Trajectory:
    """Play one case synchronously (see `arun_case`); return its trajectory."""
    return asyncio.run(arun_case(task, spec, case_seed, episode_id, minds, images))


class CaseTeam:
    """A MECoBench team on the household episode: each agent observes the case (the text,
    and its rendered views where they are rendered) and the protocol's team decides, or the
    oracle plans for everyone."""

    def __init__(self, env: HouseholdEnv, task: HouseholdTask, spec: HouseholdSpec,
                 protocol: ProtocolSpec, case_seed: int, steps: int,
                 minds: list[Mind] | None) -> None:
        self.env, self.task, self.spec, self.steps = env, task, spec, steps
        self.protocol = protocol
        self.name = spec.agents
        # no minds: the oracle plans for everyone
        self.oracle = OracleTeam(env) if minds is None else None
        self.team = None if minds is None else ProtocolTeam(minds, protocol)
        self.goal_text = task.goal_text(spec.prior)
        self.hints = task.hints(spec.prior, case_seed)
        self.described = task.described(spec.prior)
        self.spots = task.spots(spec.prior)
        self.last: list[Outcome | None] = [None] * env.n
        # the team-level slips of the rule minds' dials (contention, handover_slip)
        self.faults = ([Faults(spec.dials, case_seed, i) for i in range(env.n)]
                       if spec.dials is not None and minds is not None
                       and (spec.dials.contention or spec.dials.handover_slip) else None)

    def reset(self) -> None:
        """Forget the previous step's outcomes (a new episode on the same environment)."""
        self.last = [None] * self.env.n

    async def act(self, view: StepView) -> Turn:
        """Return the step's choices: every agent acts (a failed decision waits)."""
        if self.team is None:
            return Turn([Choice(a) for a in self.oracle.act()])
        env, n = self.env, self.env.n
        obs = [observe(env, i, goal_text=self.goal_text, hints=self.hints,
                       described=self.described, spots=self.spots,
                       steps_left=self.steps - view.t, last=self.last[i]) for i in range(n)]
        for i, o in enumerate(obs):
            o.extra.update({k: v for k, v in (("image", view.images.get(f"agent_{i}")),
                                              ("team_image", view.images.get("team"))) if v})
        decisions, transcript = await self.team.act(obs)
        actions = [d.action for d in decisions]
        if self.faults is not None:
            actions = self._slips(view.t, actions)
        return Turn([Choice(a, None if a else ("protocol_failure", d.error or "no action"),
                            d.raw or None, d.tokens) for a, d in zip(actions, decisions,
                                                                     strict=True)],
                    messages=message_events(view.t,
                                            with_message_cost(transcript, self.spec.dials)))

    def _slips(self, t: int, actions: list[Action | None]) -> list[Action | None]:
        """Return the step's actions after the team-level slips: an agent goes for what a
        teammate grabs or opens (contention), a receiver walks off instead of receiving a
        teammate's handover (handover_slip)."""
        out = list(actions)
        for j, f in enumerate(self.faults or ()):
            mine = out[j]
            if f.dials.contention:
                others = [a for i, a in enumerate(actions) if i != j and a is not None
                          and a.name in self.env.conflicting and isinstance(a.obj, int)
                          and (mine is None or mine.obj != a.obj)]
                if others and f.hit("contention", t):
                    pick = f.pick(others, "contention", t)
                    out[j] = Action(pick.name, obj=pick.obj)
            if f.dials.handover_slip and mine is not None and mine.name in ("receive", "wait") \
                    and any(a is not None and a.name == "handover" and a.to_agent == j
                            for a in actions) and f.hit("handover_slip", t):
                out[j] = Action("walk_to_room", room=self.env.room[j])
        return out

    def executed(self, acting: list[int], records: list[ActionRecord]) -> list[MessageEvent]:
        """Keep each agent's outcome for its next observation; MECoBench agents post no notes."""
        for r in records:
            self.last[r.agent] = Outcome(r.outcome, r.detail, tuple(r.completed))
        return []

    def exhausted(self) -> bool:
        """Return False: a case's only budget is its step budget."""
        return False


async def arun_case(task: HouseholdTask, spec: HouseholdSpec, case_seed: int, episode_id: str,
                    minds: list[Mind] | None = None, images: ImageStore | None = None,
                    max_steps: int | None = None, limits: Limits | None = None,
                    harness: Any = None, max_reply_tokens: int | None = None,
                    resources: Any = None) -> Trajectory:
    """Play one case to success or budget exhaustion; return its trajectory (the team from
    `make_case_team`: `minds`, or those `spec` names, model-driven ones on `harness`).

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
    steps = task.team_steps(n, spec.prior)
    if max_steps is not None:
        steps = min(steps, max_steps)
    team = make_case_team(env, task, spec, case_seed, steps, minds, harness, max_reply_tokens,
                          resources, episode_id)
    protocol = team.protocol
    aliases = {f"agent_{i}": spec.alias(i, protocol) for i in range(n)}
    rec = Recorder(
        suite="mecobench", episode_id=episode_id, task_id=str(task.task_id), seed=case_seed,
        team=[AgentSpec(id=f"agent_{i}", role=protocol.role(i), driver=spec.driver(i))
              for i in range(n)],
        protocol=spec.protocol, policy=spec.agents,
        models={k: v for k, v in aliases.items() if v},
        params={"structure": task.structure, "agents": n, "prior": spec.prior,
                "budget": task.budget(spec.prior), "team_steps": steps,
                "required": {g.key: g.count for g in task.subgoals},
                "goal_classes": sorted({g.obj_class for g in task.subgoals}),
                "required_handovers": task.required_handovers, "source": task.source,
                "conflict_set": spec.conflict_set,
                **({"dials": spec.dials.as_dict()} if spec.dials is not None else {})},
        limits=limits)
    with rec:
        t, reason, _ = await play_household(env, rec, team, steps=steps, images=images,
                                            team_view=protocol.team_view)
    return rec.finish(t, success=env.success(), stop=reason, detail="step budget exhausted")
