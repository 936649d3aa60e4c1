"""Each STAT diagnostic on a hand-made trajectory with a known answer."""

import math

import pytest

from coordbench.core.trajectory import (
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    StatStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics import stat as M


def hand_made() -> Trajectory:
    """2 agents, 2 tasks, 4 steps.

    t0: both pick task 0 (conflict, agent 1 loses), DA_pre 2, DA_post 1
    t1: agent 0 moves, agent 1 picks task 1; DA_pre 1, DA_post 0
    t2: both execute... agent 0 completes task 0 (reward 33)
    t3: agent 1 completes task 1 (reward 36)
    """
    header = TrajectoryHeader(
        episode_id="x/ep00000", suite="stat", task_id="2A-2T-4x4", seed=0,
        team=[AgentSpec(id="agent_0", driver="hand"), AgentSpec(id="agent_1", driver="hand")],
        policy="hand", coordbench_version="test", params={"agents": 2, "tasks": 2})
    ev = [
        StatStepEvent(t=0, actions=[3, 3], executed=[3, 0], rewards=[-1, -1],
                      conflicts=[Conflict(target=0, agents=[0, 1], winner=0)],
                      decision_pre=2, decision_post=1),
        StatStepEvent(t=1, actions=[1, 4], executed=[1, 4], rewards=[-1, -1],
                      decision_pre=1, decision_post=0),
        StatStepEvent(t=2, actions=[2, 2], executed=[2, 2], rewards=[33.0, -1],
                      decision_pre=0, decision_post=0, completed=[(0, 0)]),
        StatStepEvent(t=3, actions=[0, 2], executed=[0, 2], rewards=[0.0, 36.0],
                      decision_pre=0, decision_post=0, completed=[(1, 1)]),
        EpisodeEndEvent(t=4, termination="success", success=True),
    ]
    return Trajectory(header=header, events=ev)


def test_every_stat_diagnostic():
    a = M.arrays_from_trajectory(hand_made())
    assert M.episode_return(a) == 64.0
    assert M.episode_length(a) == 4
    assert M.tasks_completed(a) == 2 and M.completion_rate(a) == 1.0
    assert M.total_conflicts(a) == 1
    assert M.conflict_rate(a) == 0.25
    assert M.conflicts_per_task(a) == 0.5
    assert M.assignment_diversity(a) == 0.5  # D_t = 1, 1, 0, 0
    assert M.throughput(a) == 0.5
    assert M.forced_idle_rate(a) == 0.25
    assert M.decision_active_fraction(a) == pytest.approx((2 + 1) / 2 / 4)
    assert M.decision_active_fraction(a, post=True) == pytest.approx(1 / 2 / 4)
    assert M.conflicts_per_decision(a) == pytest.approx(1 / 3)
    assert M.diversity_per_decision_agent(a) == pytest.approx(2 / 3)
    assert M.diversity_per_decision_agent(a, post=True) == 2.0
    metrics = M.episode_metrics(a)
    assert set(metrics) == set(M.METRIC_NAMES) and metrics["success"] == 1.0


def test_undefined_ratios_are_nan_not_zero():
    t = hand_made()
    steps = [e.model_copy(update={"decision_pre": 0, "decision_post": 0}) for e in t.events[:-1]]
    a = M.arrays_from_trajectory(Trajectory(header=t.header, events=[*steps, t.events[-1]]))
    assert math.isnan(M.conflicts_per_decision(a))
    assert math.isnan(M.diversity_per_decision_agent(a))
