"""STAT on the one runner: evaluation conditions, their cases, lockstep play, metrics.

A condition is (config, policy, layouts, seed, episode limit). Episode k of a condition always
uses the same layout and its own random stream (seeded by (seed, k)), so results do not depend
on batching or on which episodes a resumed run still had to play.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.agents.stat.scripted import get_policy, is_checkpoint
from coordbench.core.provenance import file_digest
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import AgentSpec, Conflict, StatStepEvent, Trajectory
from coordbench.envs.stat.config import SELECT0, StatConfig, get_config
from coordbench.envs.stat.layouts import layout_seed, make_layouts
from coordbench.envs.stat.vec import StatVecEnv, steps
from coordbench.errors import ConfigError
from coordbench.metrics.stat import arrays_from_trajectory, episode_metrics
from coordbench.runner import Case, PlayContext, Recorder, condition_values


@dataclass(frozen=True)
class StatEvalSpec:
    """What a STAT evaluation condition is; its fields are recorded in the run manifest."""

    config: str
    policy: str
    layouts: str = "paper"
    seed: int = 0
    episode_limit: int = 700

    def __post_init__(self) -> None:
        get_config(self.config)
        trained_on = getattr(get_policy(self.policy), "config", self.config)
        if trained_on != self.config:
            raise ConfigError(f"checkpoint {self.policy} was trained on {trained_on}, not "
                              f"{self.config}")
        layout_seed(self.layouts, self.seed, 0)

    @property
    def condition(self) -> str:
        """Return the condition's directory name inside a run."""
        policy = (f"{Path(self.policy).stem}-{file_digest(self.policy)}"
                  if is_checkpoint(self.policy) else self.policy)
        return (f"stat_{self.config}_{policy}_{self.layouts}_seed{self.seed}"
                f"_limit{self.episode_limit}")

    def cfg(self) -> StatConfig:
        """Return the environment configuration."""
        return get_config(self.config, episode_limit=self.episode_limit)


class PerEnvRng:
    """One independent random stream per environment of a batch (duck-types Generator.random)."""

    def __init__(self, seeds: list[np.random.SeedSequence]) -> None:
        self.gens = [np.random.default_rng(s) for s in seeds]

    def random(self, shape: tuple[int, ...]) -> np.ndarray:
        """Return uniforms of `shape` (B, ...) with row b drawn from environment b's stream."""
        return np.stack([g.random(shape[1:]) for g in self.gens])


def episode_key(k: int) -> str:
    """Return the file key of episode number k."""
    return f"ep{k:05d}"


def _step_event(t: int, actions: np.ndarray, executed: np.ndarray, rewards: np.ndarray,
                info_b: dict[str, int], completed_task: np.ndarray) -> StatStepEvent:
    conflicts = []
    picks = actions[actions >= SELECT0]
    for a in np.unique(picks):
        who = np.flatnonzero(actions == a)
        if len(who) > 1:
            kept = np.flatnonzero(executed == a)
            conflicts.append(Conflict(target=int(a - SELECT0), agents=who.tolist(),
                                      winner=int(kept[0]) if len(kept) else None))
    return StatStepEvent(
        t=t,
        actions=actions.tolist(),
        executed=executed.tolist(),
        rewards=rewards.tolist(),
        conflicts=conflicts,
        decision_pre=info_b["pre"],
        decision_post=info_b["post"],
        completed=[(int(i), int(j)) for i, j in enumerate(completed_task) if j >= 0],
    )


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
        """Return the spec's fields."""
        return asdict(spec)

    def cases(self, spec: StatEvalSpec, limit: int | None = None) -> list[Case]:
        """Return episodes 0..limit-1 (default 100)."""
        episodes = self.default_episodes if limit is None else limit
        if episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {episodes}")
        return [Case(episode_key(k), k) for k in range(episodes)]

    def unit_size(self, spec: StatEvalSpec) -> int:
        """Return the lockstep batch."""
        return self.batch

    def play(self, spec: StatEvalSpec, cases: list[Case], ctx: PlayContext
             ) -> Iterator[tuple[Case, Trajectory]]:
        """Yield (case, trajectory) as each episode ends, `batch` episodes in lockstep."""
        cfg = spec.cfg()
        policy = get_policy(spec.policy)
        team = [AgentSpec(id=f"agent_{i}", driver=spec.policy) for i in range(cfg.agents)]
        for start in range(0, len(cases), self.batch):
            chunk = cases[start:start + self.batch]
            ks = [c.data for c in chunk]
            # learned policies (and greedy_obs) read observations; the other scripted
            # allocators read the state directly
            env = StatVecEnv(cfg, len(chunk), auto_reset=False,
                             compute_obs=is_checkpoint(spec.policy)
                             or getattr(policy, "reads_obs", False))
            layouts = make_layouts(cfg, spec.layouts, spec.seed, ks)
            env.reset(layouts)
            rng = PerEnvRng([np.random.SeedSequence([spec.seed, k]) for k in ks])
            recs = [Recorder(
                suite="stat", episode_id=f"{spec.condition}/{c.key}", task_id=cfg.name,
                seed=layout_seed(spec.layouts, spec.seed, c.data), team=team,
                policy=spec.policy,
                params={"agents": cfg.agents, "tasks": cfg.tasks, "width": cfg.width,
                        "height": cfg.height, "episode_limit": cfg.episode_limit,
                        "layouts": spec.layouts, "episode": c.data, "policy_seed": spec.seed,
                        "task_positions": layouts[b].tolist()})
                for b, c in enumerate(chunk)]
            for was_active, t, actions, _, info in steps(env, partial(_checked, policy, rng)):
                for b in np.flatnonzero(was_active):
                    recs[b].emit(_step_event(
                        int(t[b]), actions[b], info.final_actions[b], info.agent_rewards[b],
                        {"pre": int(info.decision_pre[b]), "post": int(info.decision_post[b])},
                        info.completed_task[b]))
                    if info.terminated[b] or info.truncated[b]:
                        yield chunk[b], recs[b].finish(int(env.state.t[b]),
                                                       success=bool(info.terminated[b]))

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return the STAT diagnostics of one episode."""
        return episode_metrics(arrays_from_trajectory(trajectory))


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
