"""STAT on the one runner: evaluation conditions, their cases, lockstep play, metrics.

A condition is (config, policy, layouts, seed, episode limit). Episode k of a condition always
uses the same layout and its own random stream (seeded by (seed, k)), so results do not depend
on batching or on which episodes a resumed run still had to play.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.agents.stat.human import StatPresenter
from coordbench.agents.stat.llm import StatLlmMind, check_protocol
from coordbench.agents.stat.rule import STAT_RULE_DIALS, StatRuleMind
from coordbench.agents.stat.scripted import get_policy, is_checkpoint
from coordbench.agents.stat.seats import SeatPolicies, SeatPolicyMind
from coordbench.agents.team.claims import checked_variant, rule_variant
from coordbench.agents.team.counterfactual import swap_for, switch_minds
from coordbench.agents.team.dials import (
    Dials,
    Faults,
    check_applicable,
    dials_from,
    dials_suffix,
)
from coordbench.agents.team.human import human_mind
from coordbench.agents.team.protocols import get_protocol
from coordbench.agents.team.seats import Seat, has_model, team_label
from coordbench.core.provenance import file_digest
from coordbench.core.rundir import RunDir, safe_name
from coordbench.core.trajectory import (
    AgentSpec,
    ModelCallEvent,
    StatStepEvent,
    Trajectory,
)
from coordbench.envs.stat.config import StatConfig, get_config
from coordbench.envs.stat.layouts import layout_seed, make_layouts
from coordbench.envs.stat.vec import PerEnvRng, StatVecEnv, steps
from coordbench.errors import ConfigError
from coordbench.llm.client import harness_for
from coordbench.metrics.stat import arrays_from_trajectory, episode_metrics
from coordbench.runner import (
    Case,
    ModelResources,
    PlayContext,
    Recorder,
    condition_values,
    play_concurrently,
)

from .episode import arun_team_episode, header_params, step_event

LLM = "llm"  # the policy name of a model-driven team
RULE = "rule"  # the policy name of a rule-based team under a household protocol
TEAMS = (LLM, RULE)  # policies played as one mind per agent under a protocol
SEATS = "seats"  # the policy name of a team of per-seat allocators and learned policies
MIND_KINDS = ("llm", "rule", "human")  # seats played by a mind under the protocol
SEAT_KINDS = (*MIND_KINDS, "scripted", "learned")


def dial_key(spec: Any, episode: int) -> int | str:
    """Return what an episode's dial draws are keyed on: its layout, and its seed where the
    seed is not 0 (a layout kind may ignore the seed; seed 0 keeps the key runs made before
    the seed counted were drawn with)."""
    layout = layout_seed(spec.layouts, spec.seed, episode)
    return layout if spec.seed == 0 else f"{spec.seed}/{layout}"


@dataclass(frozen=True)
class StatEvalSpec:
    """What a STAT evaluation condition is; its fields are recorded in the run manifest."""

    config: str
    policy: str
    layouts: str = "paper"
    seed: int = 0
    episode_limit: int = 700
    model: str | None = None  # policy "llm": the model alias of every agent
    protocol: str = "none"  # policies llm and rule: how the team talks (STAT_PROTOCOLS)
    # policy rule: injected failures of the minds (agents.team.dials); None: none, nothing recorded
    dials: Dials | None = None
    # a mixed team: each seat's mind (agents.team.seats; llm:ALIAS or rule); None: every seat is
    # the policy's
    seats: tuple[Seat, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dials", dials_from(self.dials))
        if self.seats is not None:
            seats = tuple(s if isinstance(s, Seat) else Seat(**s) for s in self.seats)
            object.__setattr__(self, "seats", seats)
            self._check_seats(seats)
        if self.dials is not None and self.policy != RULE:
            raise ConfigError(f"--dial is for --policy rule, not {self.policy}")
        check_applicable(self.dials, STAT_RULE_DIALS, "STAT rule minds (they keep no memory, "
                                                      "claim no subgoal and never misparse)")
        get_config(self.config)
        if self.policy == SEATS:
            if self.seats is None:
                raise ConfigError(f"--policy {SEATS} plays a team spec: give --team")
            if self.protocol != "none":
                raise ConfigError(f"--protocol {self.protocol} needs a team of minds that "
                                  "talk; allocators and learned policies do not")
        elif self.policy in TEAMS:
            if self.policy == LLM and not self.model and self.seats is None:
                raise ConfigError("--policy llm needs --model ALIAS")
            if self.policy == RULE and self.model:
                raise ConfigError("--model is for --policy llm, not rule")
            check_protocol(self.protocol)
        else:
            if self.protocol != "none":
                raise ConfigError(f"--protocol {self.protocol} needs a team of minds that "
                                  "talk: --policy rule, or --policy llm --model ALIAS")
            if self.model:
                raise ConfigError(f"--model is for --policy llm, not {self.policy}")
            trained_on = getattr(get_policy(self.policy), "config", self.config)
            if trained_on != self.config:
                raise ConfigError(f"checkpoint {self.policy} was trained on {trained_on}, "
                                  f"not {self.config}")
        layout_seed(self.layouts, self.seed, 0)

    def _check_seats(self, seats: tuple[Seat, ...]) -> None:
        bad = [x for x in seats if x.kind not in SEAT_KINDS]
        if bad:
            raise ConfigError(f"a STAT seat is one of {', '.join(SEAT_KINDS)}, not "
                              f"{bad[0].kind}")
        if len(seats) != get_config(self.config).agents:
            raise ConfigError(f"--team names {len(seats)} seats; {self.config} has "
                              f"{get_config(self.config).agents} agents")
        if self.model:
            raise ConfigError("--team names each seat's model: drop --model")
        minds = any(x.kind in MIND_KINDS for x in seats)
        if minds and self.policy not in TEAMS:
            raise ConfigError(f"--team seats minds: it needs --policy rule or llm, not "
                              f"{self.policy}")
        if not minds and self.policy != SEATS:
            raise ConfigError(f"a team of allocators and learned policies is --policy "
                              f"{SEATS}, not {self.policy}")
        for i, x in enumerate(seats):
            if x.kind == "rule":
                checked_variant(x.arg, f"seat agent_{i}", STAT_RULE_DIALS,
                                 "STAT rule minds (they keep no memory, claim no subgoal "
                                 "and never misparse)")
            if x.kind == "learned" and not is_checkpoint(str(x.arg)):
                raise ConfigError(f"seat agent_{i}: learned:{x.arg} is not a checkpoint file "
                                  "(*.pt of `stat train`)")
        policies = {i: get_policy(name) for i, name in self.seat_policies().items()}
        for i, pol in policies.items():
            trained_on = getattr(pol, "config", self.config)
            if trained_on != self.config:
                raise ConfigError(f"seat agent_{i}: checkpoint {seats[i].arg} was trained on "
                                  f"{trained_on}, not {self.config}")
        bins = {getattr(pol, "num_bins", None) for pol in policies.values()} - {None}
        if len(bins) > 1:
            raise ConfigError(f"the team's checkpoints read different observations "
                              f"({', '.join(f'{b} distance bins' for b in sorted(bins))}): "
                              "they cannot share one environment")

    def seat_policies(self) -> dict[int, str]:
        """Return {seat: STAT policy} of the seats an allocator or learned policy plays."""
        return {i: str(x.arg) for i, x in enumerate(self.seats or ())
                if x.kind in ("scripted", "learned")}

    @property
    def condition(self) -> str:
        """Return the condition's directory name inside a run."""
        if self.seats is not None:
            label = team_label([Seat(x.kind, f"{Path(str(x.arg)).stem}-{file_digest(x.arg)}")
                                if x.kind == "learned" else x for x in self.seats])
            policy = safe_name(f"team-{label}-{self.protocol}")
        elif self.policy == LLM:
            policy = safe_name(f"llm-{self.model}-{self.protocol}")
        elif self.policy == RULE:
            policy = f"rule-{self.protocol}"
        else:
            policy = (f"{Path(self.policy).stem}-{file_digest(self.policy)}"
                      if is_checkpoint(self.policy) else self.policy)
        return (f"stat_{self.config}_{policy}_{self.layouts}_seed{self.seed}"
                f"_limit{self.episode_limit}" + dials_suffix(self.dials))

    def cfg(self) -> StatConfig:
        """Return the environment configuration (with a checkpoint's distance bins where it
        was trained on a richer observation than the paper's)."""
        cfg = get_config(self.config, episode_limit=self.episode_limit)
        if self.seats is not None:
            bins = next((getattr(get_policy(p), "num_bins", None)
                         for p in self.seat_policies().values()), None)
        else:
            bins = None if self.policy in TEAMS else getattr(get_policy(self.policy),
                                                             "num_bins", None)
        return cfg if bins in (None, cfg.num_bins) else dataclasses.replace(cfg, num_bins=bins)


def episode_key(k: int) -> str:
    """Return the file key of episode number k."""
    return f"ep{k:05d}"


class StatSuite:
    """STAT on the one runner: a case is an evaluation episode (its layout and its random
    stream follow from the condition and the episode number), played in lockstep batches."""

    name = "stat"
    headline = ("return", "length", "conflict_rate", "throughput", "decision_active_frac",
                "diversity_per_decision_agent")
    default_episodes = 100  # the paper's evaluation layouts
    batch = 128

    def condition(self, spec: StatEvalSpec) -> str:
        """Return the condition's directory name."""
        return spec.condition

    def manifest(self, spec: StatEvalSpec) -> dict[str, Any]:
        """Return the spec's fields (the team's protocol only for a team of minds, its model
        only for a model-driven one, its dials only where there are any, so that scripted and
        checkpoint conditions keep their manifests)."""
        fields = asdict(spec)
        if spec.policy != LLM:
            del fields["model"]
        if spec.policy not in TEAMS:
            del fields["protocol"]
        if spec.dials is None:
            del fields["dials"]
        if spec.seats is None:
            del fields["seats"]
        return fields

    def cases(self, spec: StatEvalSpec, limit: int | None = None) -> list[Case]:
        """Return episodes 0..limit-1 (default 100)."""
        episodes = self.default_episodes if limit is None else limit
        if episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {episodes}")
        return [Case(episode_key(k), k) for k in range(episodes)]

    def unit_size(self, spec: StatEvalSpec) -> int:
        """Return the lockstep batch (model-driven teams: enough to keep calls in flight)."""
        return 8 if spec.policy in TEAMS else self.batch

    def play(self, spec: StatEvalSpec, cases: list[Case], ctx: PlayContext
             ) -> Iterator[tuple[Case, Trajectory]] | AsyncIterator[tuple[Case, Trajectory]]:
        """Yield (case, trajectory) as each episode ends: `batch` episodes in lockstep, or,
        for a model-driven team, episodes played concurrently."""
        if spec.policy in TEAMS:
            return self._play_team(spec, cases, ctx)
        return self._play_batched(spec, cases, ctx)

    def seat_minds(self, spec: StatEvalSpec, k: int, res: ModelResources,
                   episode: str = "") -> list[Any]:
        """Return one mind per seat of episode `k` of a team of minds: a model's, a rule
        mind (its variant's convention and dials, else the team's dials), a person's (from
        `res.seats`), or a silent stand-in that plays an allocator's or learned policy's
        pick (`SeatPolicyMind`)."""
        proto = get_protocol(spec.protocol)
        key = dial_key(spec, k)
        seats = spec.seats or tuple(Seat(spec.policy, spec.model) if spec.policy == LLM
                                    else Seat(RULE) for _ in range(spec.cfg().agents))
        harness = harness_for(res.harness) if has_model(seats) else None
        minds: list[Any] = []
        for i, seat in enumerate(seats):
            if seat.kind == "llm":
                minds.append(StatLlmMind(i, harness, str(seat.arg), role=proto.role(i),
                                         max_tokens=res.max_reply_tokens))
            elif seat.kind == "rule":
                convention, own = rule_variant(seat.arg, f"seat agent_{i}")
                dials = own if own is not None else spec.dials
                minds.append(StatRuleMind(i, role=proto.role(i), convention=convention,
                                          faults=Faults(dials, key, i) if dials else None))
            elif seat.kind == "human":
                minds.append(human_mind(res, i, StatPresenter(), "stat", proto.role(i),
                                        episode))
            else:
                minds.append(SeatPolicyMind(i, role=proto.role(i)))
        # a counterfactual replay's seat taken over (coordbench attribute): a rule mind, or
        # the per-step Hungarian seat (its pick comes through the observation)
        return switch_minds(minds, {
            "rule": lambda i: StatRuleMind(i, role=proto.role(i)),
            "hungarian": lambda i: SeatPolicyMind(i, role=proto.role(i))}, "STAT")

    def _play_team(self, spec: StatEvalSpec, cases: list[Case], ctx: PlayContext
                   ) -> AsyncIterator[tuple[Case, Trajectory]]:
        res = ctx.resources or ModelResources()

        async def one(case: Case) -> Trajectory:
            episode = f"{spec.condition}/{case.key}"
            return await arun_team_episode(spec, case.data, episode,
                                           self.seat_minds(spec, case.data, res, episode),
                                           ctx.limits)

        return play_concurrently(cases, one, ctx)

    def _play_batched(self, spec: StatEvalSpec, cases: list[Case], ctx: PlayContext
                      ) -> Iterator[tuple[Case, Trajectory]]:
        cfg = spec.cfg()
        if spec.seats is not None:
            policy = SeatPolicies(spec.seat_policies())
            team = [AgentSpec(id=f"agent_{i}", driver=x.driver) for i, x in enumerate(spec.seats)]
        else:
            policy = get_policy(spec.policy)
            team = [AgentSpec(id=f"agent_{i}", driver=spec.policy) for i in range(cfg.agents)]
        policy = taken_over(policy, cfg.agents)
        for start in range(0, len(cases), self.batch):
            chunk = cases[start:start + self.batch]
            ks = [c.data for c in chunk]
            # learned policies (and the *_obs allocators) read observations; the other scripted
            # allocators read the state directly
            env = StatVecEnv(cfg, len(chunk), auto_reset=False,
                             compute_obs=is_checkpoint(spec.policy)
                             or bool(getattr(policy, "reads_obs", False)))
            layouts = make_layouts(cfg, spec.layouts, spec.seed, ks)
            env.reset(layouts)
            rng = PerEnvRng([np.random.SeedSequence([spec.seed, k]) for k in ks])
            recs = [Recorder(
                suite="stat", episode_id=f"{spec.condition}/{c.key}", task_id=cfg.name,
                seed=layout_seed(spec.layouts, spec.seed, c.data), team=team,
                policy=spec.policy,
                params=header_params(spec, c.data, layouts[b]))
                for b, c in enumerate(chunk)]
            for was_active, t, actions, _, info in steps(env, partial(_checked, policy, rng)):
                for b in np.flatnonzero(was_active):
                    recs[b].emit(step_event(
                        int(t[b]), actions[b], info.final_actions[b], info.agent_rewards[b],
                        {"pre": int(info.decision_pre[b]), "post": int(info.decision_post[b])},
                        info.completed_task[b]))
                    if info.terminated[b] or info.truncated[b]:
                        yield chunk[b], recs[b].finish(int(env.state.t[b]),
                                                       success=bool(info.terminated[b]))

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return the STAT diagnostics of one episode; a model-driven team's also count its
        protocol failures and model tokens per team step."""
        out: dict[str, float | None] = dict(episode_metrics(arrays_from_trajectory(trajectory)))
        if trajectory.header.models:
            out.update(model_metrics(trajectory))
        return out


def taken_over(policy: Any, agents: int) -> Any:
    """Return `policy` with a counterfactual replay's seat (`coordbench attribute`) played
    by the per-step Hungarian assignment from its step on (the policy itself outside a
    replay); an allocator's seat has no mind for another reference to take over."""
    swap = swap_for(agents, {"hungarian": None}, "STAT allocator team")
    if swap is None:
        return policy
    reference = get_policy("hungarian")

    def joint(env: Any, rng: Any) -> np.ndarray:
        out = np.array(policy(env, rng), copy=True)
        rows = np.asarray(env.state.t) >= swap.step
        if rows.any():
            out[rows, swap.seat] = np.asarray(reference(env, rng))[rows, swap.seat]
        return out

    joint.reads_obs = bool(getattr(policy, "reads_obs", False))  # type: ignore[attr-defined]
    return joint


def model_metrics(trajectory: Trajectory) -> dict[str, float]:
    """Return `protocol_failures` (model replies, in any phase, that could not be used: no
    task, a task that is not free, an unreadable assignment or board) and `tokens_per_step`
    (prompt + completion tokens of every call / team steps)."""
    calls = trajectory.steps(ModelCallEvent)
    steps = len(trajectory.steps(StatStepEvent))
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    return {"protocol_failures": float(sum(c.parse_status == "failed" for c in calls)),
            "tokens_per_step": tokens / steps if steps else 0.0}


def _checked(policy, rng, env: StatVecEnv) -> np.ndarray:
    return env.check_actions(policy(env, rng)).copy()


SUITE = StatSuite()


def condition_metrics(run: RunDir, condition: str, episodes: int | None = None
                      ) -> dict[str, list[float]]:
    """Return {metric: per-episode values} recomputed from the saved trajectories.

    With `episodes`, only episodes 0..episodes-1 are used (a run may hold more).
    """
    keys = run.episode_keys(condition)
    if episodes is not None:
        wanted = {episode_key(k) for k in range(episodes)}
        keys = [k for k in keys if k in wanted]
    return condition_values(run, condition, SUITE.metrics, keys)


def plan_items(p: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items, progress labels) of the default benchmark's STAT section: each
    configuration under each scripted policy."""
    items = [(SUITE, StatEvalSpec(c, pol, p["layouts"], p["seed"]), p["episodes"])
             for c in p["configs"] for pol in p["policies"]]
    return items, [f"{c} {pol}" for c in p["configs"] for pol in p["policies"]]


def api_condition(options: dict[str, Any]) -> tuple[StatSuite, StatEvalSpec, int | None]:
    """Return (suite, spec, episodes) from `coordbench.evaluate("stat", ...)`'s options."""
    limit = options.pop("episodes", 100)
    return SUITE, StatEvalSpec(**options), limit
