"""STAT evaluation: run a scripted policy on numbered layouts, record trajectories, summarize.

A condition is (config, policy, layouts, seed, episode limit). Episode k of a condition always
uses the same layout and its own random stream (seeded by (seed, k)), so results do not depend
on batching or on which episodes a resumed run still had to play.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from coordbench.agents.stat_policies import get_policy, is_checkpoint
from coordbench.core.provenance import file_digest, git_sha, version
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.core.trajectory import (
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    StatStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.envs.stat.config import SELECT0, StatConfig, get_config
from coordbench.envs.stat.layouts import layout_seed, make_layouts
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.errors import ConfigError
from coordbench.metrics.stat import arrays_from_trajectory, episode_metrics


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


def run_episodes(spec: StatEvalSpec, episodes: list[int], *, batch: int = 128,
                 on_episode: Callable[[int, Trajectory], None]) -> None:
    """Play episodes `episodes` of `spec`; call `on_episode(k, trajectory)` as each one ends."""
    cfg = spec.cfg()
    policy = get_policy(spec.policy)
    team = [AgentSpec(id=f"agent_{i}", driver=spec.policy) for i in range(cfg.agents)]
    for start in range(0, len(episodes), batch):
        chunk = episodes[start:start + batch]
        # learned policies read observations; scripted allocators read the state directly
        env = StatVecEnv(cfg, len(chunk), auto_reset=False,
                         compute_obs=is_checkpoint(spec.policy))
        layouts = make_layouts(cfg, spec.layouts, spec.seed, chunk)
        env.reset(layouts)
        rng = PerEnvRng([np.random.SeedSequence([spec.seed, k]) for k in chunk])
        events: list[list] = [[] for _ in chunk]
        while env.active.any():
            was_active = env.active.copy()
            t = env.state.t.copy()
            actions = env.check_actions(policy(env, rng)).copy()
            _, _, _, info = env.step(actions)
            for b in np.flatnonzero(was_active):
                events[b].append(_step_event(
                    int(t[b]), actions[b], info.final_actions[b], info.agent_rewards[b],
                    {"pre": int(info.decision_pre[b]), "post": int(info.decision_post[b])},
                    info.completed_task[b]))
                if info.terminated[b] or info.truncated[b]:
                    success = bool(info.terminated[b])
                    events[b].append(EpisodeEndEvent(
                        t=int(env.state.t[b]), success=success,
                        termination="success" if success else "truncated"))
                    k = chunk[b]
                    header = TrajectoryHeader(
                        episode_id=f"{spec.condition}/{episode_key(k)}",
                        suite="stat", task_id=cfg.name,
                        seed=layout_seed(spec.layouts, spec.seed, k), team=team,
                        policy=spec.policy, coordbench_version=version(), git_sha=git_sha(),
                        params={"agents": cfg.agents, "tasks": cfg.tasks, "width": cfg.width,
                                "height": cfg.height, "episode_limit": cfg.episode_limit,
                                "layouts": spec.layouts, "episode": k, "policy_seed": spec.seed,
                                "task_positions": layouts[b].tolist()})
                    on_episode(k, Trajectory(header=header, events=events[b]))
                    events[b] = []


def run_condition(run: RunDir, spec: StatEvalSpec, episodes: int, *, batch: int = 128,
                  progress: Callable[[int], None] | None = None) -> int:
    """Play the episodes 0..episodes-1 of `spec` missing from `run`; return how many were played."""
    if episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}")
    run.register(spec.condition, asdict(spec))
    todo = [k for k in range(episodes) if not run.has_episode(spec.condition, episode_key(k))]
    if progress:
        progress(episodes - len(todo))

    def save(k: int, traj: Trajectory) -> None:
        run.write_episode(spec.condition, episode_key(k), traj)
        if progress:
            progress(1)

    run_episodes(spec, todo, batch=batch, on_episode=save)
    return len(todo)


def condition_metrics(run: RunDir, condition: str, episodes: int | None = None
                      ) -> dict[str, list[float]]:
    """Return {metric: per-episode values} recomputed from the saved trajectories.

    With `episodes`, only episodes 0..episodes-1 are used (a run may hold more).
    """
    keys = run.episode_keys(condition)
    if episodes is not None:
        wanted = {episode_key(k) for k in range(episodes)}
        keys = [k for k in keys if k in wanted]
    values: dict[str, list[float]] = {}
    for key in keys:
        for name, v in episode_metrics(arrays_from_trajectory(run.load_episode(condition, key))
                                       ).items():
            values.setdefault(name, []).append(v)
    return values


def summarize(values: dict[str, list[float]]) -> dict[str, Estimate]:
    """Return {metric: mean with 95% CI over episodes}."""
    return {name: mean_ci(v) for name, v in values.items()}
