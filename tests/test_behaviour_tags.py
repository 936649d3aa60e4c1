"""Behaviour tags: each rule on hand-written messages, and the with/without table."""

import pytest

from coordbench.analyses.household import tag_table
from coordbench.core.trajectory import (
    AgentSpec,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics.behaviour import TAGS, episode_tags, tag_message


@pytest.mark.parametrize("text,tag", [
    ("I will search the kitchen next.", "Info-Plan"),
    ("I'm in the bedroom now.", "Info-Loc"),
    ("I found two cupcakes on the desk.", "Info-Obj"),
    ("Agent 1, please grab the wine from the fridge.", "Act-Del"),
    ("Agent 1 should search the bathroom, I take the kitchen.", "Task-Assign"),
    ("Are you at door 371?", "Coord-Q"),
    ("Actually the apple is not there any more.", "Correct."),
    ("AT 206; CLAIM 471:pudding; SEEN 467:cupcake@73", "Info-Plan"),
    ("ASSIGN 1 FETCH 471", "Task-Assign"),
])
def test_each_rule(text, tag):
    assert tag in tag_message(text)


def test_plain_text_gets_no_tag():
    assert tag_message("ok") == set()


def traj(messages, success):
    header = TrajectoryHeader(episode_id="x", suite="mecobench", task_id="t", seed=0,
                              team=[AgentSpec(id="a", driver="d")], coordbench_version="t",
                              params={"agents": 1, "budget": 4})
    events = [MessageEvent(t=0, phase="broadcast", sender=0, content=m) for m in messages]
    events.append(HouseholdStepEvent(t=0, actions=[], satisfied={}, completion=float(success)))
    events.append(EpisodeEndEvent(t=1, termination="success" if success else "truncated",
                                  success=success))
    return Trajectory(header=header, events=events)


def test_table_with_and_without():
    trajs = [traj(["I will grab it", "Are you ready?"], True), traj(["I will go"], True),
             traj(["ok"], False), traj(["Where are you?"], False)]
    assert episode_tags(trajs[0])["Info-Plan"] == 1
    rows = {r["tag"]: r for r in tag_table(trajs)}
    assert set(rows) == set(TAGS)
    plan = rows["Info-Plan"]
    assert plan["episodes_with"] == 2 and plan["share"] == 0.5
    assert plan["SR_with"] == 1.0 and plan["SR_without"] == 0.0 and plan["delta_SR"] == 1.0
    assert rows["Correct."]["SR_with"] is None and rows["Correct."]["delta_SR"] is None
