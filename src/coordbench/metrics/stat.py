"""STAT coordination diagnostics: pure functions of one episode's per-step arrays.

Source: Cardei, Landers, Doryab, "Coordination Matters" (2026), Section 5 and App. J; the
definitions follow the reconstruction in coordbench's docs/stat.md, which reproduces the
published tables from the released code's logged values. `arrays_from_trajectory` builds the
arrays from a saved trajectory, so every number is recomputable from a run directory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coordbench.core.trajectory import StatStepEvent, Trajectory
from coordbench.envs.stat.config import SELECT0


@dataclass(frozen=True)
class StatEpisodeArrays:
    """Per-step records of one STAT episode (length H = number of joint steps)."""

    n_agents: int
    n_tasks: int
    rewards: np.ndarray  # (H,) team reward per step
    conflicts: np.ndarray  # (H,) K_t: tasks picked by > 1 agent before resolution
    forced_idle: np.ndarray  # (H,) picks replaced by IDLE
    unique_assigned: np.ndarray  # (H,) D_t: distinct tasks among the final picks
    decision_pre: np.ndarray  # (H,) agents with > 1 valid action before the step
    decision_post: np.ndarray  # (H,) the same, counted after the step
    completions: np.ndarray  # (H,) tasks completed in the step

    @property
    def length(self) -> int:
        """Return H."""
        return int(self.rewards.shape[0])


def arrays_from_trajectory(traj: Trajectory) -> StatEpisodeArrays:
    """Return the per-step arrays of a STAT trajectory (its `stat_step` events)."""
    steps: list[StatStepEvent] = traj.steps(StatStepEvent)
    params = traj.header.params
    def col(f):  # noqa: E306
        return np.array([f(e) for e in steps], dtype=np.float64)
    return StatEpisodeArrays(
        n_agents=int(params["agents"]),
        n_tasks=int(params["tasks"]),
        rewards=col(lambda e: sum(e.rewards)),
        conflicts=col(lambda e: len(e.conflicts)),
        forced_idle=col(lambda e: sum(len(c.agents) - (c.winner is not None) for c in e.conflicts)),
        unique_assigned=col(lambda e: len({a for a in e.executed if a >= SELECT0})),
        decision_pre=col(lambda e: e.decision_pre),
        decision_post=col(lambda e: e.decision_post),
        completions=col(lambda e: len(e.completed)),
    )


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else float("nan")


def episode_return(a: StatEpisodeArrays) -> float:
    """Return G = sum_t r_t, the undiscounted team return."""
    return float(a.rewards.sum())


def episode_length(a: StatEpisodeArrays) -> int:
    """Return H, the number of joint steps."""
    return a.length


def tasks_completed(a: StatEpisodeArrays) -> int:
    """Return C = sum_t completions_t."""
    return int(a.completions.sum())


def completion_rate(a: StatEpisodeArrays) -> float:
    """Return C / m; 1.0 means every task was completed (success)."""
    return tasks_completed(a) / a.n_tasks


def total_conflicts(a: StatEpisodeArrays) -> int:
    """Return K = sum_t K_t, K_t = number of tasks picked by > 1 agent before resolution."""
    return int(a.conflicts.sum())


def conflict_rate(a: StatEpisodeArrays) -> float:
    """Return K / H (paper Table 7)."""
    return _ratio(total_conflicts(a), a.length)


def conflicts_per_task(a: StatEpisodeArrays) -> float:
    """Return K / m (paper Table 8)."""
    return total_conflicts(a) / a.n_tasks


def assignment_diversity(a: StatEpisodeArrays) -> float:
    """Return D = (1/H) sum_t D_t, D_t = distinct tasks among final picks at step t.

    For complete episodes every task is picked and retained exactly once, so D = m/H equals
    throughput; it differs only for incomplete episodes.
    """
    return _ratio(a.unique_assigned.sum(), a.length)


def throughput(a: StatEpisodeArrays) -> float:
    """Return rho = C / H, tasks completed per step (paper Table 10 uses m/H)."""
    return _ratio(tasks_completed(a), a.length)


def forced_idle_rate(a: StatEpisodeArrays) -> float:
    """Return F / H, F = sum_t picks replaced by IDLE in conflict resolution."""
    return _ratio(a.forced_idle.sum(), a.length)


def decision_active_fraction(a: StatEpisodeArrays, post: bool = False) -> float:
    """Return (1/H) sum_t DA_t / n; DA_t counted before the step (after it if `post`)."""
    da = a.decision_post if post else a.decision_pre
    return _ratio(da.sum() / a.n_agents, a.length)


def conflicts_per_decision(a: StatEpisodeArrays) -> float:
    """Return K / sum_t DA_t (pre-step count): conflicts per decision opportunity."""
    return _ratio(total_conflicts(a), a.decision_pre.sum())


def diversity_per_decision_agent(a: StatEpisodeArrays, post: bool = False) -> float:
    """Return sum_t D_t / sum_t DA_t, DA counted before the step (after it if `post`).

    The paper's Table 9 is consistent with this ratio, with DA counted after the step for
    DQN/FDQN (Gymnasium wrapper) and before it for the PyMARL methods; coordbench reports both.
    """
    da = a.decision_post if post else a.decision_pre
    return _ratio(a.unique_assigned.sum(), da.sum())


def episode_metrics(a: StatEpisodeArrays) -> dict[str, float]:
    """Return every per-episode diagnostic by its report name."""
    return {
        "return": episode_return(a),
        "length": float(episode_length(a)),
        "completed": float(tasks_completed(a)),
        "success": float(completion_rate(a) == 1.0),
        "conflicts": float(total_conflicts(a)),
        "conflict_rate": conflict_rate(a),
        "conflicts_per_task": conflicts_per_task(a),
        "assignment_diversity": assignment_diversity(a),
        "throughput": throughput(a),
        "forced_idle_rate": forced_idle_rate(a),
        "decision_active_frac": decision_active_fraction(a),
        "decision_active_frac_post": decision_active_fraction(a, post=True),
        "conflicts_per_decision": conflicts_per_decision(a),
        "diversity_per_decision_agent": diversity_per_decision_agent(a),
        "diversity_per_decision_agent_post": diversity_per_decision_agent(a, post=True),
    }


# how each metric's interval is drawn (core.stats.estimate)
KINDS = {"success": "binary", "decision_active_frac": "unit",
         "decision_active_frac_post": "unit", "conflict_rate": "nonneg",
         "forced_idle_rate": "nonneg", "conflicts_per_task": "nonneg",
         "conflicts_per_decision": "nonneg", "throughput": "nonneg", "conflicts": "nonneg",
         # model-driven teams only (suites.stat.suite.model_metrics)
         "protocol_failures": "nonneg", "tokens_per_step": "nonneg"}
# over training seeds each seed's value is an average over episodes: success is a share there
SEED_KINDS = {**KINDS, "success": "unit"}

METRIC_NAMES = tuple(episode_metrics(StatEpisodeArrays(
    1, 1, *(np.zeros(1) for _ in range(7)))).keys())
