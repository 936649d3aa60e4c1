"""Failure attribution in the physical family (docs/attribution.md): plain replays reproduce
saved CoBot episodes, the one-shot injected let-go (`scripted:expert+fail_at=T`) is
attributed to its robot and step, the clean scripted expert takes a robot over (from the
start, mid-task, in a model-driven team), and unknown references are refused in one line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.agents.physical.llm import Decision
from coordbench.agents.physical.seats import SeatPolicies
from coordbench.agents.physical.skills import WAIT, Choice
from coordbench.agents.team.counterfactual import Swap, swapped
from coordbench.attribution.episode import Question, attribute
from coordbench.attribution.replay import Replayer, first_difference
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.errors import ConfigError
from coordbench.suites.physical.counterfactual import spec_of
from coordbench.suites.physical.episode import arun_skill_episode, run
from coordbench.suites.physical.suite import SUITE, make_policy
from tests.cli_errors import error_line

T = 150  # CoCarry, seed 1: both lift at ~112 and carry until ~256, so T is mid-carry
INJECTED = "agent_0=scripted:expert+fail_at=150,agent_1=expert"


def _eval(out: Path, *args: str) -> RunDir:
    res = CliRunner().invoke(app, ["physical", "eval", "--task", "CoCarry", "--rollouts", "1",
                                   "--out", str(out), *args])
    assert res.exit_code == 0, res.output
    return RunDir.open(out)


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory) -> RunDir:
    return _eval(tmp_path_factory.mktemp("phys") / "expert", "--policy", "expert")


@pytest.fixture(scope="module")
def injected_run(tmp_path_factory) -> RunDir:
    return _eval(tmp_path_factory.mktemp("phys") / "injected", "--team", INJECTED)


def _replayer(run: RunDir) -> tuple[Replayer, object]:
    (cond,) = run.conditions
    return Replayer(run, cond, "seed0001"), run.load_episode(cond, "seed0001")


def test_a_plain_replay_reproduces_the_saved_expert_episode(expert_run):
    rep, recorded = _replayer(expert_run)
    assert spec_of(dict(expert_run.conditions[rep.condition])) == rep.spec
    assert SUITE.condition(rep.spec) == rep.condition
    assert recorded.end.success
    assert first_difference(recorded, rep.play()) is None
    # the expert taking over a robot the clean expert plays changes nothing, from any step
    for step in (0, 120, 300):
        assert first_difference(recorded, rep.play(Swap(1, step, "expert"))) is None


def test_the_injected_let_go_fails_the_episode_and_is_attributed_to_its_robot_and_step(
        injected_run):
    rep, recorded = _replayer(injected_run)
    assert [a.driver for a in recorded.header.team] == ["scripted:expert+fail_at=150",
                                                       "scripted:expert"]
    assert not recorded.end.success
    assert first_difference(recorded, rep.play()) is None
    # the failure obeys the clean reference: turned off from T it never happens, from T + 1
    # it has happened
    assert rep.play(Swap(0, T, "clean")).end.success
    assert not rep.play(Swap(0, T + 1, "clean")).end.success
    got = attribute(rep, recorded, Question())
    assert [(r["seat"], r["reference"]) for r in got["responsible"]] == [("agent_0", "clean")]
    assert abs(got["responsible"][0]["step"] - T) <= 2
    assert got["responsible"][0]["blame"] == 1.0 and got["calls"] == 0


def test_the_expert_takes_a_failing_or_noisy_robot_over(injected_run):
    rep, _ = _replayer(injected_run)
    assert rep.play(Swap(0, 0, "expert")).end.success
    # a half-done task: the robot holds its end of the lifted basket, mid-carry
    assert rep.play(Swap(0, T - 30, "expert")).end.success
    # a noisy giver lifts slower than the shadowing expert, which already holds its offer
    # height when it takes over: it restarts from the robot (without: the bottle is held
    # out too low, the taker waits forever)
    noisy = [ExpertPolicy(1.0), ExpertPolicy(0.0)]
    with swapped(Swap(0, 140, "expert")):
        (tr,) = run("Handover", SeatPolicies(noisy, ["a", "b"]), [1], poses=False)[0]
    assert tr.end.success


class _IdleGiver:
    """Skill choices without a model: robot 0 only ever waits, the others follow their
    controllers' suggestions; it records whom it was asked for, and when."""

    name = "per_robot"

    def __init__(self) -> None:
        self.asked: list[tuple[float, int]] = []

    async def decide(self, views, need, limit_s):
        self.asked += [(views[i].sensing.t, i) for i in need]
        return {i: Decision(Choice(WAIT, 5.0) if i == 0 else
                            Choice(views[i].skills.suggestion)) for i in need}


def _skill_episode(swap: Swap | None) -> tuple[object, _IdleGiver]:
    ctl = _IdleGiver()
    with swapped(swap):
        tr = asyncio.run(arun_skill_episode("Handover", 1, "x/seed0001", ctl, alias="idle",
                                            poses=False))
    return tr, ctl


def test_the_expert_takes_a_model_driven_robot_over_and_its_model_is_not_asked_again():
    tr, _ = _skill_episode(None)
    assert not tr.end.success
    tr, ctl = _skill_episode(Swap(0, 100, "expert"))
    assert tr.end.success
    assert all(t < 100 * 0.02 - 1e-9 for t, i in ctl.asked if i == 0)


def test_unknown_references_and_failures_are_one_line(expert_run, tmp_path):
    rep, _ = _replayer(expert_run)
    for swap, needle in ((Swap(0, 5, "rule"), "a physical seat's references are clean, "
                                              "expert"),
                         (Swap(2, 5, "expert"), "seat agent_2: the team has seats")):
        with pytest.raises(ConfigError, match=needle) as e:
            rep.play(swap)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="--reference juggler: choose from") as e:
        Swap(0, 0, "juggler")
    assert "\n" not in str(e.value)
    for arg, needle in (("expert+fail_at=x", "fail_at=x: must be a step"),
                        ("expert+perception=0.1", "a physical expert cannot fail this way")):
        line = error_line(["physical", "eval", "--task", "CoCarry", "--rollouts", "1",
                           "--out", str(tmp_path / "r"), "--team",
                           f"agent_0=scripted:{arg},agent_1=expert"], tmp_path)
        assert needle in line
    with pytest.raises(ConfigError, match="fail_at is a CoBot expert's failure"):
        make_policy("expert+fail_at=3", "CoCarry", "g1")
