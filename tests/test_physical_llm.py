"""Model-driven physical robots: skills run by the scripted experts' controllers, the model
picking them, end to end through `physical eval --policy llm` against a loopback
OpenAI-compatible server started here (127.0.0.1)."""

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.agents.physical.llm import parse_skill, parse_team
from coordbench.agents.physical.skills import (
    STAGES,
    WAIT,
    Choice,
    SkillRobot,
    describe,
    skill_name,
    skills_of,
)
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import (
    EpisodeEndEvent,
    MessageEvent,
    ModelCallEvent,
    PhysicalPhaseEvent,
    PhysicalPosesEvent,
)
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import TASKS, get_task
from coordbench.llm.loopback import ScriptedServer
from coordbench.metrics.profile import physical_profile
from coordbench.suites.physical.episode import run
from tests.cli_errors import error_line

runner = CliRunner()
SUGGESTS = re.compile(r"The controller suggests: (\w+)")


def follow_reply(body):
    """A scripted model that picks what the controller suggests: for one robot, or for every
    robot of a team prompt ("## Robot i" blocks)."""
    user = str(body["messages"][-1]["content"])
    blocks = re.findall(r"## Robot (\d+).*?The controller suggests: (\w+)", user, re.S)
    if blocks:
        return json.dumps({f"robot{i}": {"skill": s} for i, s in blocks})
    return json.dumps({"skill": SUGGESTS.search(user).group(1)})


def garbage_reply(body):
    """Never a skill: text without a skill name, or JSON naming one no robot has."""
    return "%%% 42 ???" if len(str(body["messages"])) % 2 else '{"skill": "fly"}'


def models_file(tmp_path, base_url):
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                 "    max_retries: 0\n    timeout_s: 5\n")
    return f


def physical_llm(tmp_path, server, *extra, task="Handover", rollouts=1):
    return runner.invoke(app, ["physical", "eval", "--task", task, "--policy", "llm",
                               "--model", "scripted",
                               "--models", str(models_file(tmp_path, server.base_url)),
                               "--rollouts", str(rollouts), "--no-cache",
                               "--out", str(tmp_path / "run"), "--json", *extra])


@pytest.mark.parametrize("controller", ["per_robot", "team"])
def test_a_model_following_the_controller_completes_the_task(tmp_path, controller):
    with ScriptedServer(follow_reply) as server:
        res = physical_llm(tmp_path, server, "--controller", controller)
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout.strip().splitlines()[-1])["Handover"]
    assert got["success"]["mean"] == 1.0 and got["phases"]["p3"]["mean"] == 1.0
    assert got["model_calls"]["mean"] > 0 and got["tokens"]["mean"] > 0
    assert got["protocol_failures"]["mean"] == 0 and got["errored"] == 0
    rd = RunDir.open(tmp_path / "run")
    (cond,) = rd.conditions
    assert cond == f"physical_Handover_llm-scripted-{controller}_main"
    assert rd.conditions[cond]["model"] == "scripted"
    assert rd.conditions[cond]["controller"] == controller
    (tr,) = rd.load_episodes(cond)
    assert tr.header.models == {"robot0": "scripted", "robot1": "scripted"}
    assert tr.header.params["controller"] == controller
    calls = tr.steps(ModelCallEvent)
    assert all(c.phase == "skill" and c.parse_status == "ok" for c in calls)
    skills = tr.steps(MessageEvent)
    assert skills and all(m.phase == "skill" and m.recipients == [] for m in skills)
    notes = [json.loads(m.content) for m in skills]
    assert all(n["skill"] == n["suggested"] for n in notes)
    assert {n["skill"] for n in notes} >= {"reach", "grasp", "lift", "offer", "wait_partner"}
    assert tr.steps(PhysicalPosesEvent)
    # following every suggestion is the scripted expert, step for step
    (expert,) = run("Handover", ExpertPolicy(0.0), [1], poses=False)[0]
    assert [(e.t, e.phase) for e in tr.steps(PhysicalPhaseEvent)] == [
        (e.t, e.phase) for e in expert.steps(PhysicalPhaseEvent)]
    assert tr.end.t == expert.end.t and tr.end.termination == "success"
    # skill choices are recorded decisions, not communication
    assert physical_profile(tr)["comm_per_unit"] == 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"| Handover | llm scripted ({controller}) | 1 |" in report


def test_unusable_replies_are_protocol_failures_and_the_episode_runs_out(tmp_path):
    with ScriptedServer(garbage_reply) as server:
        res = physical_llm(tmp_path, server)
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout.strip().splitlines()[-1])["Handover"]
    assert got["success"]["mean"] == 0.0 and got["phases"]["p1"]["mean"] == 0.0
    assert got["protocol_failures"]["mean"] == got["model_calls"]["mean"] > 0
    rd = RunDir.open(tmp_path / "run")
    (tr,) = rd.load_episodes(next(iter(rd.conditions)))
    assert tr.end.termination == "truncated" and tr.end.t == get_task("Handover").limit
    failed = tr.steps(ModelCallEvent)
    assert all(c.parse_status == "failed" and c.parse_error for c in failed)
    assert any("unknown skill 'fly'" in c.parse_error for c in failed)
    assert any(c.parse_error == "the reply names no skill" for c in failed)
    notes = [json.loads(m.content) for m in tr.steps(MessageEvent)]
    # every robot waits half a second after each unusable reply, then is asked again
    assert all(n["skill"] == WAIT and n["seconds"] == 0.5 and n["fallback"] for n in notes)
    per_robot = len(failed) / 2
    assert per_robot == pytest.approx(get_task("Handover").limit * CONTROL_DT / 0.5, abs=1)


@pytest.mark.parametrize("fault", [500, "reset"])
def test_a_failing_provider_errors_the_episode(tmp_path, fault):
    with ScriptedServer(follow_reply, faults=[fault] * 20) as server:
        res = physical_llm(tmp_path, server)
    assert res.exit_code == 3, res.output
    rd = RunDir.open(tmp_path / "run")
    (cond,) = rd.conditions
    assert rd.episode_keys(cond) == [] and rd.errored_keys(cond) == ["seed0001"]
    text = (tmp_path / "run" / "errors" / cond / "seed0001.jsonl").read_text()
    end = EpisodeEndEvent.model_validate_json(text.strip().splitlines()[-1])
    assert end.termination == "error" and end.detail.startswith("provider failure: ")


def test_cli_errors_are_one_line(tmp_path):
    line = error_line(["physical", "eval", "--task", "Handover", "--policy", "llm",
                       "--rollouts", "1", "--out", str(tmp_path / "a")], tmp_path)
    assert "--policy llm needs --model ALIAS" in line
    line = error_line(["physical", "eval", "--task", "Handover", "--model", "gpt",
                       "--rollouts", "1", "--out", str(tmp_path / "b")], tmp_path)
    assert "--model is for --policy llm, not expert" in line
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("args,message", [
    (["--controller", "team"], "--controller is for --policy llm, not expert"),
    (["--policy", "llm", "--model", "m", "--controller", "mob"], "unknown --controller 'mob'"),
    (["--policy", "llm", "--model", "m", "--phase-level"], "no phase-level evaluation"),
])
def test_bad_team_options(tmp_path, args, message):
    from coordbench.errors import CoordbenchError

    res = runner.invoke(app, ["physical", "eval", "--task", "Handover", "--rollouts", "1",
                              "--out", str(tmp_path / "r"), *args])
    assert isinstance(res.exception, CoordbenchError), repr(res.exception)
    assert message in str(res.exception) and "\n" not in str(res.exception)


def test_every_stage_an_expert_visits_is_one_of_its_skills():
    """The skill table matches the phase machines: a nominal episode of every task visits
    only listed stages, and they are offered under their skill names."""
    for name in TASKS:
        env = PhysicalEnv(get_task(name))
        env.reset(1)
        experts = [env.task.expert(env, i, np.random.default_rng(i), 0.0) for i in range(env.n)]
        seen = [{ex.stage} for ex in experts]
        while not env.done:
            env.step(np.stack([ex.act(env.sense(i), CONTROL_DT)
                               for i, ex in enumerate(experts)]))
            for i, ex in enumerate(experts):
                seen[i].add(ex.stage)
        assert env.phase == 3, name
        for ex, stages in zip(experts, seen, strict=True):
            assert {skill_name(s) for s in stages} <= set(skills_of(ex)), (name, stages)
            assert skills_of(ex)[-1] == WAIT
            assert all(describe(ex, k) for k in skills_of(ex))  # every skill is explained
    assert "wait" not in {skill_name(s) for table in STAGES.values() for s in table}


def test_wait_holds_still_and_an_out_of_order_stage_starts_from_the_robot():
    env = PhysicalEnv(get_task("Handover"))
    env.reset(1)
    robots = [SkillRobot(env.task.expert(env, i, np.random.default_rng(i), 0.0))
              for i in range(env.n)]
    for i, r in enumerate(robots):
        r.start(Choice("reach"), env.sense(i))
    for _ in range(40):
        env.step(np.stack([r.act(env.sense(i)) for i, r in enumerate(robots)]))
    r = robots[0]
    reaching = r.last.copy()
    r.start(Choice(WAIT, 0.5), env.sense(0))
    held = [r.act(env.sense(0)) for _ in range(25)]
    assert all((a[:3] == 0).all() and (a[3:] == reaching[3:]).all() for a in held)
    assert r.running is None and r.ended == "wait: 0.5 s over"
    assert r.suggestion == "reach"  # the machine is where the wait found it
    ex, k = r.expert, r.expert.k
    s = env.sense(0)
    r.start(Choice("lift"), s)  # not the machine's next stage: restart from the robot's pose
    assert (ex.stage, ex.t_stage, ex.k) == ("lift", 0.0, k + 1)
    assert ex.lift == s.joints[0] and ex.arm == (s.joints[1], s.joints[2])
    with pytest.raises(ValueError):
        r.start(Choice("carry"), s)  # not a giver's skill


def test_replies_are_read_as_skills():
    skills = ("reach", "grasp", "wait_partner", "wait")
    assert parse_skill('{"skill": "Grasp"}', skills).choice == Choice("grasp")
    assert parse_skill('```json\n{"action": "wait", "seconds": 9}\n```',
                       skills).choice == Choice(WAIT, 5.0)
    assert parse_skill('{"skill": "wait", "seconds": "0.01"}', skills).choice == Choice(WAIT,
                                                                                       0.2)
    assert parse_skill('{"skill": "wait"}', skills).choice == Choice(WAIT, 1.0)
    assert parse_skill('{"skill": "Reach the handle"}', skills).choice == Choice("reach")
    assert parse_skill("I will wait_partner now.", skills).choice == Choice("wait_partner")
    assert parse_skill("Better wait 2 s first.", skills).choice == Choice(WAIT, 2.0)
    for bad in ("", "no idea", '{"skill": 3}', '{"skill": "lift"}', '{"speed": 1}'):
        got = parse_skill(bad, skills)
        assert got.choice is None and got.error, bad
    team = parse_team('{"robot0": {"skill": "reach"}, "1": "wait", "robot 2": {"skill": "x"}}',
                      {0: skills, 1: skills, 2: skills, 3: skills})
    assert team[0].choice == Choice("reach") and team[1].choice == Choice(WAIT, 1.0)
    assert team[2].error.startswith("unknown skill") and team[3].error == "no skill for robot 3"
    lines = parse_team("robot 0: grasp\nrobot 1: wait 3 seconds", {0: skills, 1: skills})
    assert lines[0].choice == Choice("grasp") and lines[1].choice == Choice(WAIT, 3.0)


def test_a_mixed_physical_team_a_model_beside_a_scripted_robot(tmp_path):
    with ScriptedServer(follow_reply) as server:
        res = runner.invoke(app, [
            "physical", "eval", "--task", "Handover", "--policy", "llm", "--team",
            "agent_0=llm:scripted,agent_1=scripted:expert", "--models",
            str(models_file(tmp_path, server.base_url)), "--rollouts", "1", "--no-cache",
            "--out", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout.strip().splitlines()[-1])["Handover"]
    assert got["success"]["mean"] == 1.0
    rd = RunDir.open(tmp_path / "run")
    (cond,) = rd.conditions
    assert cond == "physical_Handover_team-llm-scripted+scripted-expert-per_robot_main"
    assert rd.conditions[cond]["seats"] == [{"kind": "llm", "arg": "scripted"},
                                            {"kind": "scripted", "arg": "expert"}]
    (tr,) = rd.load_episodes(cond)
    assert [a.driver for a in tr.header.team] == ["llm:scripted", "scripted:expert"]
    assert tr.header.models == {"robot0": "scripted"}
    assert {c.agent for c in tr.steps(ModelCallEvent)} == {0}  # only the model's seat calls
    # the model follows its controller and the scripted robot is the controller: the expert
    (expert,) = run("Handover", ExpertPolicy(0.0), [1], poses=False)[0]
    assert tr.end.t == expert.end.t and tr.end.termination == "success"


@pytest.mark.parametrize(("team", "extra", "needle"), [
    ("agent_0=llm:scripted,agent_1=scripted:expert,agent_2=llm:scripted", [],
     "names 3 seats; Handover has 2 robots"),
    ("agent_0=llm:scripted,agent_1=scripted:juggler", [], "scripted:expert"),
    ("agent_0=scripted:expert,agent_1=scripted:expert", [], "no llm seat"),
    ("agent_0=llm:scripted,agent_1=rule", [], "a physical seat is one of llm, scripted"),
    ("agent_0=llm:scripted,agent_1=scripted:expert", ["--controller", "team"],
     "--controller per_robot"),
    ("agent_0=llm:scripted,agent_1=scripted:expert", ["--model", "scripted"],
     "drop --model"),
    ("3", [], "--team 3: Handover has 2 robots"),
])
def test_bad_physical_teams_are_one_line(team, extra, needle, tmp_path):
    from coordbench.errors import ConfigError

    models = models_file(tmp_path, "http://127.0.0.1:9/v1")
    res = runner.invoke(app, ["physical", "eval", "--task", "Handover", "--policy", "llm",
                              "--team", team, "--models", str(models), *extra, "--out",
                              str(tmp_path / "r")])
    assert isinstance(res.exception, ConfigError), res.output
    line = str(res.exception)
    assert needle in line and "\n" not in line, line
    assert not (tmp_path / "r").exists()
