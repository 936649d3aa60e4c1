"""Failure attribution from the log: the baselines (random, last agent), the log a judge reads,
the reply parsers, and the Who&When-style judges against a scripted loopback model server."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from coordbench.attribution.baselines import (
    Guess,
    family_of,
    last_agent,
    log_entries,
    random_guess,
    seats_of,
    step_numbers,
    steps_of,
    timeline,
)
from coordbench.attribution.judge import judge, parse_answer, parse_yes, seat_of
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    StatStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.errors import ConfigError
from coordbench.llm.client import ModelHarness
from coordbench.llm.loopback import ScriptedServer
from coordbench.llm.registry import ModelSpec, Registry


def _header(suite: str, seats: list[str], **params) -> TrajectoryHeader:
    return TrajectoryHeader(episode_id=f"{suite}/ep0", suite=suite, task_id="t0", seed=0,
                            team=[AgentSpec(id=s, driver="rule") for s in seats],
                            params=params, coordbench_version="test")


def _act(agent: int, action: str, outcome: str = "ok", **args) -> ActionRecord:
    return ActionRecord(agent=agent, action=action, args=args, outcome=outcome,
                        obj_class="cupcake" if "obj" in args else None)


def household() -> Trajectory:
    """Three agents, five steps: agent_2 acts last at step 3; step 4 is all waiting."""
    steps = [
        [_act(0, "walk_to_room", room=5), _act(1, "grab", obj=27), _act(2, "wait")],
        [_act(0, "grab", "conflict_lost", obj=30), _act(1, "walk", obj=9),
         _act(2, "grab", obj=30)],
        [_act(0, "wait"), _act(1, "put_on", obj=27, target=9), _act(2, "receive")],
        [_act(0, "done"), _act(1, "none", "protocol_failure"), _act(2, "open", obj=12)],
        [_act(0, "wait"), _act(1, "wait"), _act(2, "done")],
    ]
    events = []
    for t, actions in enumerate(steps):
        if t == 1:
            events.append(MessageEvent(t=1, phase="broadcast", sender=0,
                                       content="I take 30\nthen the cake"))
            events.append(ModelCallEvent(t=1, agent=0, role="agent", phase="act", model="m",
                                         request_hash="h"))
        events.append(HouseholdStepEvent(t=t, actions=actions, satisfied={"on_cupcake_9": 0},
                                         completion=0.0))
    events.append(EpisodeEndEvent(t=5, termination="truncated", success=False))
    return Trajectory(header=_header("mecobench", ["agent_0", "agent_1", "agent_2"],
                                     required={"on_cupcake_9": 1}, team_steps=5),
                      events=events)


def stat() -> Trajectory:
    """Two agents; both select task 1 at step 0 and agent_1 loses; agent_0 idles last."""
    events = [
        StatStepEvent(t=0, actions=[4, 4], executed=[4, 0], rewards=[-1, -1],
                      conflicts=[Conflict(target=1, agents=[0, 1], winner=0)],
                      decision_pre=2, decision_post=1),
        StatStepEvent(t=1, actions=[1, 3], executed=[1, 3], rewards=[-1, -1],
                      decision_pre=1, decision_post=0),
        StatStepEvent(t=2, actions=[2, 0], executed=[2, 0], rewards=[30, -1],
                      decision_pre=0, decision_post=0, completed=[(0, 1)]),
        StatStepEvent(t=3, actions=[0, 0], executed=[0, 0], rewards=[0, -1],
                      decision_pre=0, decision_post=0),
        EpisodeEndEvent(t=4, termination="truncated", success=False),
    ]
    return Trajectory(header=_header("stat", ["agent_0", "agent_1"], tasks=2,
                                     episode_limit=4), events=events)


def physical(skills: bool = True) -> Trajectory:
    """Two robots: skill decisions at steps 0 and 120 (robot1 last), a drop at step 300."""
    events = []
    if skills:
        events += [
            MessageEvent(t=0, phase="skill", sender=0, recipients=[],
                         content=json.dumps({"skill": "reach", "suggested": "reach",
                                             "after": None})),
            MessageEvent(t=120, phase="skill", sender=1, recipients=[],
                         content=json.dumps({"skill": "wait", "seconds": 0.5,
                                             "suggested": "lift",
                                             "after": "reach: done"})),
        ]
    events += [PhysicalPhaseEvent(t=125, phase=1, name="pick", collaborative=False),
               PhysicalCouplingEvent(t=300, kind="drop", robots=[0]),
               EpisodeEndEvent(t=499, termination="truncated", success=False)]
    return Trajectory(header=_header("physical", ["robot0", "robot1"], until_phase=3),
                      events=events)


# -- baselines and the log --------------------------------------------------------------------

def test_household_baselines_and_log():
    tr = household()
    assert family_of(tr) == "household"
    assert (steps_of(tr), seats_of(tr), step_numbers(tr)) == (5, 3, [0, 1, 2, 3, 4])
    # step 4 is all waiting and done; at step 3 agent_1's reply failed, agent_2 opened
    assert last_agent(tr) == Guess(2, 3)
    lines = timeline(tr)
    assert lines[0] == "step 0, agent_0: walk_to_room(room=5) -> ok"
    assert "step 0, agent_1: grab(obj=27:cupcake) -> ok" in lines
    assert "step 1, agent_0 -> all (broadcast): I take 30 then the cake" in lines
    assert "step 1, agent_0: grab(obj=30:cupcake) -> conflict_lost" in lines
    # one line per (step, agent), the message, and how it ended; no model call lines
    assert len(lines) == 5 * 3 + 1 + 1
    assert lines[-1] == "end after 5 steps: truncated; subgoals met: on_cupcake_9 0/1"
    assert lines.index("step 1, agent_0 -> all (broadcast): I take 30 then the cake") \
        < lines.index("step 1, agent_0: grab(obj=30:cupcake) -> conflict_lost")
    assert [e.seat for e in log_entries(tr)[:3]] == [0, 1, 2]
    assert timeline(tr) == lines  # a pure function of the trajectory


def test_random_guess_is_seeded_uniform_and_in_range():
    tr = household()
    assert random_guess(tr, 3) == random_guess(tr, 3)
    draws = [random_guess(tr, s) for s in range(300)]
    assert {g.seat for g in draws} == {0, 1, 2}
    assert {g.step for g in draws} == {0, 1, 2, 3, 4}
    assert all(g.calls == g.tokens == 0 for g in draws)
    # the episode id enters the seed: another episode, other draws
    other = tr.model_copy(update={"header": tr.header.model_copy(
        update={"episode_id": "mecobench/ep1"})})
    assert [random_guess(other, s) for s in range(20)] != draws[:20]
    empty = Trajectory(header=_header("stat", []), events=[])
    assert random_guess(empty, 0) == Guess(None, None)
    assert last_agent(empty) == Guess(None, None)


def test_stat_baselines_and_log():
    tr = stat()
    assert family_of(tr) == "stat" and steps_of(tr) == 4 and seats_of(tr) == 2
    assert last_agent(tr) == Guess(0, 2)  # step 3 is all idle; agent_1 idles at step 2
    lines = timeline(tr)
    assert lines[:2] == ["step 0, agent_0: select(task=1) -> ok",
                         "step 0, agent_1: select(task=1) -> conflict_lost to agent_0 (idled)"]
    assert "step 2, agent_0: execute -> ok; completed task 1" in lines
    assert lines[-1] == "end after 4 steps: truncated; tasks completed: 1 of 2"


def test_physical_baselines_and_log():
    tr = physical()
    assert family_of(tr) == "physical" and steps_of(tr) == 500 and seats_of(tr) == 2
    assert last_agent(tr) == Guess(1, 120)  # the last robot to start a skill
    assert timeline(tr) == [
        "step 0, robot0: starts reach (suggested: reach)",
        "step 120, robot1: starts wait 0.5 s (suggested: lift); previous skill reach: done",
        "step 125: phase 1 (pick) completed",
        "step 300, robot0: drop: lost hold of the lifted object",
        "end after 500 steps: truncated; phases completed: 1 of 3"]
    assert last_agent(physical(skills=False)) == Guess(0, 300)  # no skills: the last event
    assert 0 <= random_guess(tr, 0).step < 500


def test_baselines_on_a_real_household_episode():
    from coordbench.envs.household.task import load_tasks
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
    from coordbench.suites.mecobench.instances import SEQUENTIAL_EXAMPLES

    task = load_tasks(SEQUENTIAL_EXAMPLES)[0]
    tr = run_case(task, HouseholdSpec("sequential", 2, "broadcast"), 0, "real")
    steps = tr.steps(HouseholdStepEvent)
    assert steps_of(tr) == len(steps) > 0 and seats_of(tr) == 2
    lines = timeline(tr)
    n_messages = sum(1 for e in tr.events if e.type == "message")
    assert len(lines) == sum(len(e.actions) for e in steps) + n_messages + 1
    assert all(re.match(r"step \d+, agent_[01]( ->|:) ", line) for line in lines[:-1])
    seat, step = last_agent(tr).seat, last_agent(tr).step
    assert step in step_numbers(tr) and seat in (0, 1)
    acted = [a for a in steps[step].actions if a.agent == seat]
    assert acted and acted[0].action not in ("wait", "done", "receive", "none")
    assert random_guess(tr, 0).step in step_numbers(tr)


# -- the parsers ------------------------------------------------------------------------------

NAMES = ["agent_0", "agent_1", "agent_2"]


@pytest.mark.parametrize("reply,want", [
    ("Agent Name: agent_1\nStep Number: 12\nReason: it grabbed the wrong cup", (1, 12)),
    ("**Agent Name:** Agent_2\n**Step Number:** 3\n**Reason:** ...", (2, 3)),
    ("agent name = agent_0\nstep number = 0", (0, 0)),
    ('```json\n{"agent": "agent_1", "step": 3, "reason": "x"}\n```', (1, 3)),
    ('{"Agent Name": "agent 2", "Step Number": "7"}', (2, 7)),
    ('{"responsible_agent": 1, "decisive_step": 4}', (1, 4)),
    ("<think>maybe agent_0 at step 1</think>Agent Name: agent_2\nStep Number: 5", (2, 5)),
    ("The decisive mistake is agent_1's grab at step 4.", (1, 4)),
    ("Agent Name: agent_1 (it never handed the cup over)\nStep Number: 9", (1, 9)),
    ("Agent Name: agent_7\nStep Number: 2", (None, 2)),  # not a seat of this team
    # an empty field is empty: the next line's words are not its value
    ("1. Yes\n2. Agent Name:\n3. Reason: agent_2 dropped it", (None, None)),
    ("Agent Name: nobody\nStep Number: -1", (None, None)),
    ("I cannot tell from this log.", (None, None)),
    ("", (None, None)),
])
def test_parse_answer_reads_every_reply_shape(reply, want):
    assert parse_answer(reply, NAMES) == want


def test_seat_names_match_whole_names():
    names = [f"agent_{i}" for i in range(11)]
    assert seat_of("agent_10", names) == 10 and seat_of("agent_1", names) == 1
    assert seat_of("the mistake was agent_10's", names) == 10
    assert seat_of("Robot #1", ["robot0", "robot1"]) == 1
    assert seat_of("robot1", ["robot0", "robot1"]) == 1
    assert seat_of(True, names) is None and seat_of(11, names) is None
    assert parse_answer("Agent Name: robot1\nStep Number: 240", ["robot0", "robot1"]) \
        == (1, 240)


@pytest.mark.parametrize("reply,want", [
    ("1. Yes.\n2. Agent Name: agent_1\n3. Reason: x", True),
    ("1. No.\n2. Agent Name:\n3. Reason: fine", False),
    ("**Yes** - agent_0 dropped it", True),
    ("Answer: no", False),
    ("1. **No**", False),
    ('{"decisive_error": "yes", "agent": "agent_1"}', True),
    ('{"error": false}', False),
    ("<think>yes? no?</think>\nNo, this step is fine.", False),
    ("Perhaps; it is hard to say.", None),
    ("Nothing here. Yes, later.", None),
])
def test_parse_yes(reply, want):
    assert parse_yes(reply) is want


# -- the judges against a loopback server -----------------------------------------------------

def _harness(url: str) -> ModelHarness:
    spec = ModelSpec(alias="judge", base_url=url, model="judge-model", max_retries=0,
                     timeout_s=10)
    return ModelHarness(Registry({"judge": spec}))


def _user(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_all_at_once_makes_one_call_on_the_whole_log():
    tr = household()
    with ScriptedServer(lambda body: "Agent Name: agent_1\nStep Number: 3\nReason: x") \
            as server:
        got = asyncio.run(judge(tr, _harness(server.base_url), "judge", "all_at_once"))
        requests = list(server.requests)
    assert (got.seat, got.step, got.calls) == (1, 3, 1) and got.tokens > 0
    assert len(requests) == 1
    prompt = _user(requests[0])
    assert "\n".join(timeline(tr)) in prompt  # the whole log, the end line included
    assert "on_cupcake_9 x1" in prompt and "agent_0, agent_1, agent_2" in prompt
    assert "Agent Name:" in prompt and "Step Number:" in prompt


def test_all_at_once_without_an_answer():
    tr = household()
    with ScriptedServer(lambda body: "no idea") as server:
        got = asyncio.run(judge(tr, _harness(server.base_url), "judge", "all_at_once"))
    assert (got.seat, got.step, got.calls) == (None, None, 1)
    with ScriptedServer(lambda body: "x", faults=[400]) as server:  # a refused request
        got = asyncio.run(judge(tr, _harness(server.base_url), "judge", "all_at_once"))
    assert got == Guess(None, None, 1, 0)


def _step_of(body: dict) -> int:
    return int(re.search(r"up to and including step (\d+)", _user(body)).group(1))


def test_step_by_step_stops_at_the_first_yes():
    tr = household()

    def reply(body):
        step = _step_of(body)
        if step == 3:
            return "1. Yes.\n2. Agent Name: agent_1\n3. Reason: it failed to act"
        return "1. Yes" if step == 4 else "1. No.\n2. Agent Name:\n3. Reason: fine"

    with ScriptedServer(reply) as server:
        got = asyncio.run(judge(tr, _harness(server.base_url), "judge", "step_by_step"))
        requests = list(server.requests)
    assert (got.seat, got.step, got.calls) == (1, 3, 4) and got.tokens > 0
    assert [_step_of(b) for b in requests] == [0, 1, 2, 3]  # stopped at the first yes
    # each call sees the log up to its step only (and how the episode ended)
    first = _user(requests[0])
    assert "step 0, agent_2: wait() -> ok" in first and "step 1," not in first
    assert "truncated" in first
    assert "step 3, agent_2: open(obj=12:cupcake) -> ok" in _user(requests[3])


def test_step_by_step_counts_its_calls_and_obeys_the_cap():
    tr = household()
    with ScriptedServer(lambda body: "1. No") as server:
        harness = _harness(server.base_url)
        never = asyncio.run(judge(tr, harness, "judge", "step_by_step"))
        capped = asyncio.run(judge(tr, harness, "judge", "step_by_step", max_calls=2))
        n = len(server.requests)
    assert (never.seat, never.step, never.calls) == (None, None, 5)
    assert (capped.seat, capped.step, capped.calls) == (None, None, 2)
    assert n == 7
    # a yes that names nobody: the one agent with lines at that step (physical: robot1)
    with ScriptedServer(lambda body: "1. Yes" if _step_of(body) == 120 else "1. No") \
            as server:
        got = asyncio.run(judge(physical(), _harness(server.base_url), "judge",
                                "step_by_step"))
    assert (got.seat, got.step, got.calls) == (1, 120, 2)


def test_unknown_method_is_a_config_error():
    with pytest.raises(ConfigError, match="step_by_step"):
        asyncio.run(judge(household(), _harness("http://127.0.0.1:9/v1"), "judge", "binary"))
