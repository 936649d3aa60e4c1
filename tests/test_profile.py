"""The coordination profile: each family's definitions on hand-built episodes, its
properties on random ones, and `coordbench profile` over real runs of every family."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    PhysicalPhaseEvent,
    PhysicalPosesEvent,
    StatStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics.profile import KEYS, MEASURES, dol, episode_profile
from tests.cli_errors import error_line

pytestmark = pytest.mark.xdist_group("small_runs")


def _traj(suite: str, n: int, events: list, params: dict, task: str = "t") -> Trajectory:
    header = TrajectoryHeader(
        episode_id=f"{suite}/ep", suite=suite, task_id=task, seed=0,
        team=[AgentSpec(id=f"agent_{i}", driver="x") for i in range(n)],
        params=params, coordbench_version="test")
    end = EpisodeEndEvent(t=len(events), termination="success", success=True)
    return Trajectory(header=header, events=[*events, end])


def test_dol_formula():
    assert dol([3, 3, 3]) == pytest.approx(1.0)
    assert dol([6, 0, 0]) == pytest.approx(0.0)
    # (1 - (0.75^2 + 0.25^2)) / (1 - 1/2) = 0.75
    assert dol([3, 1]) == pytest.approx(0.75)
    assert dol([5]) is None and dol([0, 0]) is None


def test_stat_profile_by_hand():
    steps = [
        # agents 0 and 1 both pick task 3 (1 duplicate); 3 agents could choose
        StatStepEvent(t=0, actions=[3, 3, 4], executed=[3, 0, 4], rewards=[0, 0, 0],
                      conflicts=[Conflict(target=3, agents=[0, 1], winner=0)],
                      decision_pre=3, decision_post=1),
        StatStepEvent(t=1, actions=[1, 0, 2], executed=[1, 0, 2], rewards=[0, 0, 1],
                      decision_pre=1, decision_post=0, completed=[(2, 1)]),
        StatStepEvent(t=2, actions=[2, 0, 0], executed=[2, 0, 0], rewards=[1, 0, 0],
                      decision_pre=0, decision_post=0, completed=[(0, 0)]),
    ]
    talk = MessageEvent(t=0, phase="broadcast", sender=0, content="mine: 3")
    call = ModelCallEvent(t=0, agent=0, role="agent", phase="act", model="m",
                          request_hash="h", prompt_tokens=90, completion_tokens=10)
    tr = _traj("stat", 3, [steps[0], talk, call, *steps[1:]], {"agents": 3, "tasks": 4})
    p = episode_profile(tr)
    assert set(p) == set(KEYS)
    assert p["redundancy"] == pytest.approx(1 / 4)  # 1 duplicate over 3 + 1 + 0 decisions
    # IDLE chosen 0 + 1 + 2 of 9 (agent 1's lost conflict at t=0 was an attempt, not idling)
    assert p["idle_share"] == pytest.approx(3 / 9)
    assert p["division_of_labour"] == pytest.approx(dol([1, 0, 1]))
    assert p["handoff_failure"] is None
    assert p["comm_per_unit"] == pytest.approx(1 / 2)
    assert p["tokens_per_unit"] == pytest.approx(100 / 2)
    assert p["progress_per_step"] == pytest.approx((2 / 4) / 3)


def _act(agent, action, outcome="ok", completed=(), **args):
    return ActionRecord(agent=agent, action=action, args=args, outcome=outcome,
                        completed=list(completed))


def test_household_profile_by_hand():
    steps = [
        HouseholdStepEvent(t=0, actions=[_act(0, "grab", obj=5), _act(1, "grab", "conflict_lost",
                                                                      obj=5),
                                         _act(2, "wait")],
                           conflicts=[Conflict(target=5, agents=[0, 1], winner=0)],
                           satisfied={}, completion=0.0),
        HouseholdStepEvent(t=1, actions=[_act(0, "put_on", completed=["a"], obj=5, target=9),
                                         _act(1, "grab", "held_by_other", obj=5),
                                         _act(2, "receive")],
                           satisfied={"a": 1}, completion=0.5),
        HouseholdStepEvent(t=2, actions=[_act(0, "handover", "too_far", obj=6, to_agent=2),
                                         _act(1, "put_on", completed=["a"], obj=7, target=9),
                                         _act(2, "receive")],
                           satisfied={"a": 2}, completion=1.0),
    ]
    msgs = [MessageEvent(t=0, phase="broadcast", sender=i, content="hi") for i in range(3)]
    tr = _traj("mecobench", 3, [*msgs, *steps], {"agents": 3, "structure": "parallel"})
    p = episode_profile(tr)
    assert p["redundancy"] == pytest.approx(2 / 9)  # one extra in a conflict + held_by_other
    # idle: agent 2 in every step (wait, then receives nobody handed anything to)
    assert p["idle_share"] == pytest.approx(3 / 9)
    assert p["division_of_labour"] == pytest.approx(dol([1, 1, 0]))
    assert p["handoff_failure"] == pytest.approx(1.0)
    assert p["comm_per_unit"] == pytest.approx(3 / 2)
    assert p["tokens_per_unit"] is None
    assert p["progress_per_step"] == pytest.approx(1.0 / 3)
    seq = _traj("mecobench", 3, steps, {"agents": 3, "structure": "sequential"})
    assert episode_profile(seq)["division_of_labour"] is None  # MECoBench's rule


def test_receive_counts_as_work_when_a_handover_lands():
    step = HouseholdStepEvent(t=0, actions=[_act(0, "handover", obj=6, to_agent=1),
                                            _act(1, "receive")],
                              satisfied={}, completion=0.0)
    p = episode_profile(_traj("mecobench", 2, [step], {"agents": 2}))
    assert p["idle_share"] == 0.0 and p["handoff_failure"] == 0.0


def test_construct_profile_by_hand():
    steps = [
        HouseholdStepEvent(t=0, actions=[_act(0, "put_on", obj=1, target=20),
                                         _act(1, "put_on", "buffer_full", obj=2, target=20)],
                           satisfied={}, completion=0.25),
        # a central planner chose only agent 0: agent 1 recorded nothing (idle)
        HouseholdStepEvent(t=1, actions=[_act(0, "open", obj=30)], satisfied={},
                           completion=0.5),
    ]
    tr = _traj("constructs", 2, steps, {"agents": 2, "construct": {"buffers": [20]}})
    p = episode_profile(tr)
    assert p["redundancy"] == 0.0
    assert p["idle_share"] == pytest.approx(1 / 4)
    assert p["division_of_labour"] == pytest.approx(0.0)  # agent 0 did both successful skills
    assert p["handoff_failure"] == pytest.approx(1 / 2)  # one of two buffer puts refused
    assert p["comm_per_unit"] == 0.0
    assert p["progress_per_step"] == pytest.approx(0.5 / 2)


def test_physical_profile_by_hand():
    # 3 samples every 5 steps: robot 0 moves 2 mm in the first interval only, robot 1 never
    still, moved = [0] * 10, [20] + [0] * 9
    poses = PhysicalPosesEvent(t=10, every=5, unit=1e-4, steps=[0, 5, 10],
                               robots=[[still, still], [moved, still], [still, still]])
    phases = [PhysicalPhaseEvent(t=4, phase=1, name="pick", collaborative=False)]
    tr = _traj("physical", 2, [*phases, poses], {"n_robots": 2, "until_phase": 3},
               task="Handover")
    p = episode_profile(tr)
    assert p["redundancy"] is None and p["division_of_labour"] is None
    assert p["idle_share"] == pytest.approx(3 / 4)
    assert p["handoff_failure"] == 1.0  # picked, never exchanged
    assert p["progress_per_step"] == pytest.approx((1 / 3) / 2)
    other = _traj("physical", 2, phases, {"n_robots": 2}, task="CoCarry")
    q = episode_profile(other)
    assert q["handoff_failure"] is None and q["idle_share"] is None  # no hand-off, no poses


def test_unknown_suite_is_refused():
    with pytest.raises(ValueError, match="no coordination profile"):
        episode_profile(_traj("stat_train", 1, [], {}))


@st.composite
def stat_episodes(draw):
    n = draw(st.integers(1, 5))
    tasks = draw(st.integers(1, 6))
    steps = []
    for t in range(draw(st.integers(1, 12))):
        executed = draw(st.lists(st.integers(0, 2 + tasks), min_size=n, max_size=n))
        chosen = [a for a in executed if a >= 3]
        pickers = draw(st.lists(st.sampled_from(range(n)), unique=True, max_size=n))
        conflicts = ([Conflict(target=3, agents=sorted(pickers), winner=pickers[0])]
                     if len(pickers) > 1 else [])
        done = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, tasks - 1)),
                             max_size=2))
        steps.append(StatStepEvent(t=t, actions=executed, executed=executed, rewards=[0.0] * n,
                                   conflicts=conflicts, decision_pre=max(len(pickers),
                                                                         len(chosen)),
                                   decision_post=0, completed=done))
    return _traj("stat", n, steps, {"agents": n, "tasks": tasks})


@settings(max_examples=60, deadline=None)
@given(stat_episodes(), st.randoms())
def test_profile_properties(tr, rnd):
    p = episode_profile(tr)
    for k in ("idle_share", "division_of_labour"):
        assert p[k] is None or 0.0 <= p[k] <= 1.0 + 1e-12
    assert p["redundancy"] is None or 0.0 <= p["redundancy"] <= 1.0
    # renaming the agents changes nothing: the measures are about the team
    n = len(tr.header.team)
    perm = list(range(n))
    rnd.shuffle(perm)
    steps = [StatStepEvent(t=e.t, actions=[e.actions[perm.index(i)] for i in range(n)],
                           executed=[e.executed[perm.index(i)] for i in range(n)],
                           rewards=e.rewards, decision_pre=e.decision_pre,
                           decision_post=e.decision_post,
                           conflicts=[Conflict(target=c.target,
                                               agents=sorted(perm[a] for a in c.agents),
                                               winner=perm[c.winner]) for c in e.conflicts],
                           completed=[(perm[a], k) for a, k in e.completed])
             for e in tr.steps(StatStepEvent)]
    q = episode_profile(_traj("stat", n, steps, dict(tr.header.params)))
    for k in KEYS:
        assert (p[k] is None) == (q[k] is None)
        if p[k] is not None:
            assert q[k] == pytest.approx(p[k])


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_profile_command_over_every_family(small_runs):
    res = _cli("profile", str(small_runs["run"]), "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert {r["suite"] for r in rows} == {"stat", "mecobench", "constructs", "physical"}
    for r in rows:
        assert {"suite", "condition", *MEASURES} <= set(r)
        for k in MEASURES:
            assert r[k] is None or set(r[k]) == {"mean", "ci95", "n", "lo", "hi"}
            assert r[k] is None or r[k]["n"] >= 1
    by = {r["condition"]: r for r in rows}
    conds = small_runs["conds"]
    assert by[conds["stat"]]["handoff_failure"] is None
    assert by[conds["stat"]]["redundancy"]["n"] == 3
    assert by[conds["physical"]]["redundancy"] is None
    assert by[conds["physical"]]["handoff_failure"] == {"mean": 0.0, "ci95": None, "n": 1,
                                                        "lo": None, "hi": None}
    # a model team's tokens per unit: n/a exactly where it completed nothing
    run = RunDir.open(small_runs["run"])
    for traj in run.load_episodes(conds["llm"]):
        p = episode_profile(traj)
        done = sum(len(a.completed) for e in traj.steps(HouseholdStepEvent) for a in e.actions)
        assert traj.steps(ModelCallEvent)
        assert (p["tokens_per_unit"] is None) == (done == 0)
        assert p["tokens_per_unit"] is None or p["tokens_per_unit"] > 0
    assert by[conds["mecobench"]]["tokens_per_unit"] is None
    # the markdown, CSV and HTML forms carry the same rows
    md = _cli("profile", str(small_runs["run"])).stdout
    assert sum(line.startswith("| ") for line in md.splitlines()) == len(rows) + 1
    table = list(csv.DictReader(io.StringIO(_cli("profile", str(small_runs["run"]),
                                                 "--format", "csv").stdout)))
    assert {(r["condition"], r["measure"]) for r in table} == {
        (r["condition"], k) for r in rows for k in KEYS if r[k] is not None}
    page = _cli("profile", str(small_runs["run"]), "--format", "html").stdout
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == len(rows) + 1


def test_profile_command_on_a_damaged_run(small_runs):
    res = _cli("profile", str(small_runs["bad"]), "--json")
    assert res.exit_code == 0
    assert "could not be read and are left out" in res.stderr
    rows = json.loads(res.stdout)
    assert {r["suite"] for r in rows} == {"stat", "mecobench", "constructs", "physical"}


def test_profile_bad_input_is_one_line(small_runs, tmp_path):
    cases = [([str(small_runs["run"]), "--format", "xlsx"], "--format must be one of md, csv"),
             (["/nonexistent/run"], "does not exist"),
             ([str(tmp_path)], "not a coordbench run directory"),
             ([str(small_runs["run"]), "--out", str(tmp_path)], "is a folder")]
    for args, needle in cases:
        assert needle in error_line(["profile", *args], tmp_path)
