"""Each household metric on a hand-made trajectory with a known answer."""

import pytest

from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics import household as H


def rec(agent, action, outcome="ok", obj=None, cls=None, completed=(), tokens=0):
    return ActionRecord(agent=agent, action=action, args={"obj": obj} if obj else {},
                        obj_class=cls, outcome=outcome, completed=list(completed), tokens=tokens)


def episode(structure="parallel", success=True) -> Trajectory:
    """2 agents, budget 8 (4 team steps), 2 subgoal instances.

    t0: both grab cupcake 5 (conflict: agent 1 wins) ; CR 0
    t1: agent 0 grabs a towel (wrong class), agent 1 hands over (fails: too far); CR 0
    t2: agent 1 puts the cupcake (completes a), agent 0 says done (hallucinated); CR 0.5
    t3: agent 0 puts pudding (completes b); CR 1.0
    """
    header = TrajectoryHeader(
        episode_id="x", suite="mecobench", task_id="t", seed=0,
        team=[AgentSpec(id="agent_0", driver="h"), AgentSpec(id="agent_1", driver="h")],
        coordbench_version="test",
        params={"agents": 2, "budget": 8, "structure": structure,
                "goal_classes": ["cupcake", "pudding"]})
    steps = [
        HouseholdStepEvent(t=0, actions=[rec(0, "grab", "conflict_lost", 5, "cupcake"),
                                         rec(1, "grab", "ok", 5, "cupcake", tokens=30)],
                           conflicts=[Conflict(target=5, agents=[0, 1], winner=1)],
                           satisfied={"a": 0, "b": 0}, completion=0.0),
        HouseholdStepEvent(t=1, actions=[rec(0, "grab", "ok", 9, "towel"),
                                         rec(1, "handover", "too_far", 5, "cupcake")],
                           satisfied={"a": 0, "b": 0}, completion=0.0),
        HouseholdStepEvent(t=2, actions=[rec(0, "done"),
                                         rec(1, "put_on", "ok", 5, "cupcake", ["a"])],
                           satisfied={"a": 1, "b": 0}, completion=0.5),
        HouseholdStepEvent(t=3, actions=[rec(0, "put_on", "ok", 7, "pudding", ["b"]),
                                         rec(1, "walk", "out_of_zone")],
                           satisfied={"a": 1, "b": 1}, completion=1.0),
    ]
    msg = MessageEvent(t=0, phase="broadcast", sender=0, content="hi", tokens=10)
    end = EpisodeEndEvent(t=4, termination="success" if success else "truncated",
                          success=success)
    return Trajectory(header=header, events=[msg, *steps, end])


def test_success_completion_and_auc():
    tr = episode()
    assert H.success(tr) == 1.0 and H.completion_rate(tr) == 1.0
    # e = 1..8 -> team steps 1,1,2,2,3,3,4,4 -> CR 0,0,0,0,.5,.5,1,1
    assert H.step_auc(tr) == pytest.approx(3.0 / 8)
    assert H.success(episode(success=False)) == 0.0


def test_tokens_dol_car_hfr():
    tr = episode()
    assert H.tokens_per_step(tr) == pytest.approx(40 / 8)
    assert H.division_of_labor(tr) == pytest.approx(1.0)  # one completion each
    assert H.conflict_action_rate(tr) == pytest.approx(2 / 8)
    assert H.handover_failure_rate(tr) == 1.0


def test_spatial_errors_and_failure_modes():
    assert H.spatial_error_rate(episode()) is None  # parallel tasks have no zones
    assert H.spatial_error_rate(episode("sequential")) == pytest.approx(1 / 8)
    assert H.out_of_zone_rate(episode("sequential")) == pytest.approx(1 / 8)
    # a grab and a put refused out of zone are not moves: the paper's spatial error counts
    # attempts to move outside the region (walks to an object, a room or a door), so 2 of 10
    # actions here; the earlier variant counted all 4 refusals
    tr = episode("sequential")
    extra = HouseholdStepEvent(t=4, actions=[rec(0, "grab", "out_of_zone", 3),
                                             rec(1, "walk_to_room", "out_of_zone")],
                               satisfied={"a": 1, "b": 1}, completion=1.0)
    more = HouseholdStepEvent(t=5, actions=[rec(0, "put_in", "out_of_zone", 3)],
                              satisfied={"a": 1, "b": 1}, completion=1.0)
    tr = tr.model_copy(update={"events": [*tr.events[:-1], extra, more, tr.events[-1]]})
    assert H.spatial_error_rate(tr) == pytest.approx(2 / 11)
    assert H.out_of_zone_rate(tr) == pytest.approx(4 / 11)
    tr = episode()
    assert H.duplicate_grabs(tr) == 1
    assert H.wrong_class_grabs(tr) == 1
    assert H.hallucinated_completion(tr) is True
    m = H.episode_metrics(tr)
    assert m["HFR"] == 1.0 and m["steps"] == 4.0


def test_not_applicable_cases():
    tr = episode()
    steps = [e for e in tr.events if isinstance(e, HouseholdStepEvent)]
    no_handover = [s.model_copy(update={"actions": [a for a in s.actions
                                                    if a.action != "handover"]})
                   for s in steps]
    t2 = Trajectory(header=tr.header, events=[*no_handover, tr.events[-1]])
    assert H.handover_failure_rate(t2) is None
    solo = tr.header.model_copy(update={"params": {**tr.header.params, "agents": 1}})
    assert H.division_of_labor(Trajectory(header=solo, events=tr.events)) is None
