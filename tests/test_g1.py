"""The Unitree G1 with Dex3-1 hands, read from where the machine has its model files (the
shared copy of Unitree's files, or a MuJoCo Menagerie layout built here from them), checked,
and built as the paper controls it: a planar base and a position-servoed upper body."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mujoco
import numpy as np
import pytest

from coordbench.envs.physical import g1
from coordbench.errors import ConfigError

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "assets" / "unitree_g1"
UNITREE = SHARED / g1.UNITREE_FILE
pytestmark = pytest.mark.skipif(not UNITREE.is_file(),
                                reason=f"the G1 model files are not at {SHARED}")


@pytest.fixture(autouse=True)
def no_model_env(monkeypatch):
    for var in (g1.ENV_VAR, "MENAGERIE_ROOT"):
        monkeypatch.delenv(var, raising=False)


def menagerie_layout(root: Path) -> Path:
    """Return a Menagerie-style folder (unitree_g1/g1_with_hands.xml, meshes under assets/)
    built from the shared files."""
    folder = root / "unitree_g1"
    folder.mkdir(parents=True)
    (folder / "assets").symlink_to(SHARED / "meshes")
    text = UNITREE.read_text().replace('meshdir="meshes"', 'meshdir="assets"')
    (folder / "g1_with_hands.xml").write_text(text)
    return root


def test_the_model_is_found_by_flag_variable_or_menagerie_and_else_one_line(tmp_path,
                                                                          monkeypatch):
    assert g1.resolve_model(UNITREE) == UNITREE
    assert g1.resolve_model(SHARED) == UNITREE  # a folder holding the file
    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    assert g1.resolve_model() == UNITREE
    monkeypatch.delenv(g1.ENV_VAR)
    root = menagerie_layout(tmp_path / "menagerie")
    monkeypatch.setenv("MENAGERIE_ROOT", str(root))
    found = g1.resolve_model()
    assert found == root / "unitree_g1" / "g1_with_hands.xml"
    assert g1.robot_spec(found).compile().nu == 3 + len(g1.UPPER_JOINTS)
    monkeypatch.delenv("MENAGERIE_ROOT")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mujoco_menagerie" else real(name, *a))
    with pytest.raises(ConfigError) as e:
        g1.resolve_model()
    line = str(e.value)
    assert "--g1-model" in line and g1.ENV_VAR in line and "mujoco-menagerie" in line
    assert "\n" not in line
    with pytest.raises(ConfigError, match="does not exist"):
        g1.resolve_model(tmp_path / "nope.xml")


def test_a_file_that_is_not_a_g1_with_hands_names_what_it_lacks(tmp_path):
    arm = tmp_path / "arm.xml"
    arm.write_text('<mujoco><worldbody><body name="b"><joint name="waist_yaw_joint"/>'
                   '<geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(ConfigError, match=r"lacks 42 joint\(s\), e.g. left_hip_pitch_joint"):
        g1.check_model(arm)
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody>")
    with pytest.raises(ConfigError, match="cannot be read"):
        g1.check_model(broken)


def test_two_robots_on_planar_bases_drive_and_never_touch_themselves():
    scene = mujoco.MjSpec()
    scene.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1])
    g1.add_robots(scene, UNITREE, [(0.0, 0.0, 0.0), (1.2, 0.0, np.pi)])
    m = scene.compile()
    d = mujoco.MjData(m)
    # per robot: 3 base servos (velocity) + waist 3, arms 14, hands 14 (position)
    assert m.nu == 2 * (3 + 31) and m.nq == 2 * (3 + 31)
    d.ctrl[m.actuator("robot0/base_x").id] = 0.4
    for _ in range(500):
        mujoco.mj_step(m, d)
        for c in d.contact[:d.ncon]:
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            n1, n2 = m.body(b1).name, m.body(b2).name
            assert n1.split("/")[0] != n2.split("/")[0] or "/" not in n1, (n1, n2)
    assert np.isfinite(d.qpos).all()
    x0 = d.qpos[m.joint("robot0/base_x").qposadr[0]]
    x1 = d.qpos[m.joint("robot1/base_x").qposadr[0]]
    assert 0.2 < x0 < 0.45 and abs(x1) < 0.02  # 1 s at 0.4 m/s; the other stands still
    assert len(g1.model_sha256(UNITREE)) == 64


def _eval(out: Path, *extra: str):
    from typer.testing import CliRunner

    from coordbench.cli import app

    return CliRunner().invoke(app, ["physical", "eval", "--task", "CoCarry", "--embodiment",
                                    "g1", "--g1-model", str(SHARED), "--out", str(out),
                                    "--json", *extra])


def test_g1_cocarry_experts_carry_the_basket_shelf_to_shelf_and_the_header_names_the_robot(
        tmp_path, monkeypatch):
    import json

    from coordbench.core.rundir import RunDir

    res = _eval(tmp_path / "g1", "--rollouts", "3")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)["CoCarry"]
    assert got["success"]["mean"] == 1.0 and got["success"]["n"] == 3
    run = RunDir.open(tmp_path / "g1")
    (cond,) = run.conditions
    assert cond == "physical_CoCarry_g1_expert_main"
    assert run.conditions[cond]["embodiment"] == "g1"
    traj = run.load_episode(cond, "seed0001")
    p = traj.header.params
    assert p["embodiment"] == "g1" and p["action_dim"] == 34
    assert p["robot_model"] == g1.UNITREE_FILE
    assert p["robot_model_sha256"] == g1.model_sha256(UNITREE)
    # a rerun with more rollouts plays only the new seed: the first three stay as written
    folder = tmp_path / "g1" / "episodes" / cond
    written = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.jsonl")}
    res = _eval(tmp_path / "g1", "--rollouts", "4")
    assert res.exit_code == 0, res.output
    now = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.jsonl")}
    assert len(now) == 4 and all(now[name] == t for name, t in written.items())
    # drawn again from the recorded poses: the video from the meshes, the viewer's picture
    # with each palm by forward kinematics
    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    from coordbench.suites.physical.video import render_video, video_frames
    from coordbench.viewer.replay.physical import picture

    info = render_video(traj, tmp_path / "g1.mp4", width=96, height=64, camera="ego1")
    assert video_frames(info.path) == (info.frames, 96, 64) and info.frames > 20
    pic = picture(run, cond, traj)
    first, last = pic["states"][0]["robots"][0], pic["states"][-1]["robots"][0]
    assert len(pic["states"]) == info.frames and 0.8 < first[5] < 1.2  # palm height (m)
    assert abs(first[3] - last[3]) + abs(first[4] - last[4]) > 0.5  # the carry moved it
    other = tmp_path / "other" / "g1"
    other.mkdir(parents=True)
    (other / "meshes").symlink_to(SHARED / "meshes")
    (other / g1.UNITREE_FILE).write_text(UNITREE.read_text() + "\n<!-- edited -->\n")
    monkeypatch.setenv(g1.ENV_VAR, str(other))
    with pytest.raises(ConfigError, match="recorded with a G1 model of sha256"):
        render_video(traj, tmp_path / "x.mp4", width=96, height=64)
    # the CoBot's runs never share the folder
    from typer.testing import CliRunner

    from coordbench.cli import app

    res = CliRunner().invoke(app, ["physical", "eval", "--task", "CoCarry", "--rollouts", "1",
                                   "--out", str(tmp_path / "g1")])
    assert "holds g1 runs" in str(res.exception) and res.exit_code != 0


def test_without_model_files_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from coordbench.cli import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mujoco_menagerie" else real(name, *a))
    res = CliRunner().invoke(app, ["physical", "eval", "--task", "CoCarry", "--embodiment",
                                   "g1", "--rollouts", "1", "--out", str(tmp_path / "x")])
    line = str(res.exception)
    assert isinstance(res.exception, ConfigError) and "\n" not in line
    assert "--g1-model" in line and g1.ENV_VAR in line and "mujoco-menagerie" in line
    assert not (tmp_path / "x").exists()
    res = _eval(tmp_path / "y", "--task", "Pouring")  # a task the G1 does not play yet
    assert isinstance(res.exception, ConfigError) and "no G1 version yet" in str(res.exception)
    assert not (tmp_path / "y").exists()


def test_g1_poses_replay_the_simulated_scene_and_the_palms_follow_ik():
    from coordbench.envs.physical import poses as pose
    from coordbench.envs.physical.embodiment import make_env
    from coordbench.envs.physical.g1_ik import ArmIK

    env = make_env("CoCarry", "g1", UNITREE)
    env.reset(5)
    experts = [env.task.expert(env, i, np.random.default_rng([5, i]), 0.0) for i in range(2)]
    lay = pose.pose_layout(env)
    for _ in range(120):
        env.step(np.stack([e.act(env.sense(i), 0.02) for i, e in enumerate(experts)]))
    mujoco.mj_forward(env.model, env.data)  # a step leaves xpos where the step began
    robots, bodies, joints = pose.sample(env.data, lay)
    xpos = env.data.xpos.copy()
    twin = make_env("CoCarry", "g1", UNITREE)
    twin.reset(5)
    pose.apply(twin.model, twin.data, lay, robots, bodies, joints)
    assert np.allclose(twin.data.xpos, xpos, atol=1e-9)
    # the base sample is the world pose: x, y of the pelvis, yaw the heading
    assert np.allclose(robots[:, :2], env.data.xpos[env.chassis][:, :2], atol=1e-9)
    ik = ArmIK(UNITREE, "left")
    q, err = np.zeros(7), 1.0
    for _ in range(10):
        q, err = ik.solve(q, np.array([0.35, 0.15, 0.9]), np.eye(3), np.zeros(3))
    assert err < 1e-3


@pytest.mark.parametrize("task", ["TableAlign", "BigTable"])
def test_g1_carry_teams_lift_carry_and_place_by_the_bar_handles(task, monkeypatch):
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    trajs, _ = run(task, ExpertPolicy(0.0), [1, 2], embodiment="g1", poses=False)
    assert [t.end.success for t in trajs] == [True, True]
    assert trajs[0].header.params["n_robots"] == (3 if task == "BigTable" else 2)


def test_g1_move_house_opens_the_door_by_its_bar_and_carries_the_table_through(monkeypatch):
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.core.trajectory import PhysicalPhaseEvent
    from coordbench.envs.physical.embodiment import make_env
    from coordbench.envs.physical.tasks.move_house import OPEN, door_angle
    from coordbench.suites.physical.episode import run

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    (t,), _ = run("MoveHouse", ExpertPolicy(0.0), [2], embodiment="g1", poses=False)
    assert t.end.success and t.header.params["n_robots"] == 3
    assert [e.phase for e in t.steps(PhysicalPhaseEvent)] == [1, 2, 3]
    env = make_env("MoveHouse", "g1", UNITREE)
    env.reset(2)
    assert door_angle(env.sense(0).extras[0]) < 0.01 < OPEN  # closed at the start
    bodies = [env.model.body(env.model.geom_bodyid[g]).name for g in range(env.model.ngeom)]
    # the opener holds with its right hand alone (fingers, then palm or thumb); a carrier
    # with both hands
    opener = env._touch_groups(bodies, "robot0/", 0)
    assert all("right" in bodies[g] for grp in opener for g in grp)
    carrier = env._touch_groups(bodies, "robot1/", 1)
    assert {("left" in bodies[g]) for g in carrier[0]} == {True}
    assert {("right" in bodies[g]) for g in carrier[1]} == {True}


def test_g1_cart_service_pushes_the_trolley_by_its_bar_then_serves_the_basket(monkeypatch):
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.core.trajectory import PhysicalPhaseEvent
    from coordbench.suites.physical.episode import run

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    (t,), _ = run("CartService", ExpertPolicy(0.0), [3], embodiment="g1", poses=False)
    assert t.end.success
    # parked, then lifted off the deck, then set down on the table
    steps = [(e.phase, e.t) for e in t.steps(PhysicalPhaseEvent)]
    assert [p for p, _ in steps] == [1, 2, 3] and steps[0][1] < steps[1][1] < steps[2][1]


def test_g1_handover_passes_the_basket_hand_to_hand_by_its_bar(monkeypatch):
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    from coordbench.core.trajectory import PhysicalPhaseEvent

    trajs, _ = run("Handover", ExpertPolicy(0.5), [3, 4], embodiment="g1", poses=False)
    for t in trajs:  # the giver lifted it, both held it, the taker alone, then set it down
        assert t.end.success
        at = [e.t for e in t.steps(PhysicalPhaseEvent)]
        assert [e.phase for e in t.steps(PhysicalPhaseEvent)] == [1, 2, 3]
        assert at[0] < at[1] < at[2]
    from coordbench.envs.physical.embodiment import make_env

    env = make_env("Handover", "g1", UNITREE)
    # one hand holds: its fingers and its palm or thumb, not the other hand
    groups = [[env.model.body(env.model.geom_bodyid[g]).name for g in grp]
              for grp in env._touch_groups([env.model.body(env.model.geom_bodyid[g]).name
                                            for g in range(env.model.ngeom)], "robot0/")]
    assert all("right_hand" in b or "right_wrist" in b for grp in groups for b in grp)
    assert any("index" in b for b in groups[0]) and any("thumb" in b for b in groups[1])


def test_g1_demonstrations_and_a_policy_trained_on_them_stay_with_the_g1(tmp_path,
                                                                         monkeypatch):
    import json

    from typer.testing import CliRunner

    from coordbench.cli import app
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.suites.physical.suite import make_policy

    pytest.importorskip("torch")
    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    runner = CliRunner()
    res = runner.invoke(app, ["physical", "demos", "--task", "CoCarry", "--embodiment", "g1",
                              "--n", "2", "--out", str(tmp_path / "demos"), "--json"])
    assert res.exit_code == 0, res.output
    meta = json.loads(res.stdout)["CoCarry"]
    assert meta["embodiment"] == "g1" and meta["action_dim"] == 34
    demo = load_demos(tmp_path / "demos" / "CoCarry_g1_train.npz")
    assert demo["actions"].shape[1:] == (2, 34) and demo["obs"].shape[-1] == 87
    res = runner.invoke(app, ["physical", "train", "--task", "CoCarry", "--embodiment", "g1",
                              "--demos", str(tmp_path / "demos"), "--steps", "5",
                              "--rollouts", "0", "--out", str(tmp_path / "bc.pt"), "--json"])
    assert res.exit_code == 0, res.output
    policy = make_policy(str(tmp_path / "bc.pt"), "CoCarry", "g1")
    assert policy.cfg.embodiment == "g1"
    with pytest.raises(ConfigError, match="trained on g1 robots, not cobot"):
        make_policy(str(tmp_path / "bc.pt"), "CoCarry", "cobot")


def test_a_model_picking_the_g1_skills_its_controller_suggests_carries_the_basket(
        tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from coordbench.cli import app
    from coordbench.core.rundir import RunDir
    from coordbench.core.trajectory import ModelCallEvent, PhysicalPhaseEvent
    from coordbench.llm.loopback import ScriptedServer
    from tests.test_physical_llm import follow_reply, models_file

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    prompts = []

    def reply(body):
        prompts.append(body["messages"])
        return follow_reply(body)

    with ScriptedServer(reply) as server:
        res = CliRunner().invoke(app, [
            "physical", "eval", "--task", "CoCarry", "--embodiment", "g1", "--policy", "llm",
            "--model", "scripted", "--models", str(models_file(tmp_path, server.base_url)),
            "--rollouts", "1", "--no-cache", "--out", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout.strip().splitlines()[-1])["CoCarry"]
    assert got["success"]["mean"] == 1.0 and got["protocol_failures"]["mean"] == 0
    system, user = prompts[0][0]["content"], prompts[0][-1]["content"]
    assert "Unitree G1 humanoids" in system and "left palm at" in user
    rd = RunDir.open(tmp_path / "run")
    (cond,) = rd.conditions
    assert cond == "physical_CoCarry_g1_llm-scripted-per_robot_main"
    (tr,) = rd.load_episodes(cond)
    assert tr.header.params["embodiment"] == "g1" and tr.steps(ModelCallEvent)
    assert [e.phase for e in tr.steps(PhysicalPhaseEvent)] == [1, 2, 3]


def test_the_cohub_study_on_the_g1_plays_its_tasks_with_g1_policies(tmp_path, monkeypatch):
    from coordbench.envs.physical.tasks import G1_TASKS
    from coordbench.reproduce import cohub
    from coordbench.reproduce.paper import options_of, out_dir, paper
    from tests.cli_errors import error_line

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    values = {"models": None, "repeats": 1, "quick": True, "limit": None, "max_steps": None,
              "regime": None, "methods": None, "seeds": None, "steps": None, "tasks": None,
              "instances": None, "offline_agents": "rule", "embodiment": "g1",
              "g1_model": None, "cost_limit": None, "workers": 1, "out": None}
    options = options_of(paper("cohub"), values, ())
    assert options.embodiment == "g1"
    assert out_dir(paper("cohub"), options, None).name == "reproduce-cohub-g1-quick"
    s = cohub.settings(options)
    assert s.tasks and set(s.tasks) <= set(G1_TASKS) and "BigTable" not in s.ablation
    specs = [spec for _, spec, _ in cohub.plan(options, tmp_path)]
    assert {spec.embodiment for spec in specs} == {"g1"}
    assert all(spec.demos.endswith("_g1_train.npz") for spec in specs if spec.demos)
    cfg = cohub._config(cohub.policies(options)[0], s, options.embodiment)
    assert cfg.embodiment == "g1" and cfg.action_dim == 34
    # the other studies take no embodiment
    line = error_line(["reproduce", "stat", "--quick", "--embodiment", "g1"], tmp_path)
    assert "--embodiment sets the CoHuB study's robots" in line


def test_a_g1_joint_target_stays_near_its_joint_and_random_arms_stay_stable():
    from coordbench.envs.physical.embodiment import make_env
    from coordbench.envs.physical.g1_env import TARGET_REACH

    env = make_env("CoCarry", "g1", UNITREE)
    env.reset(1)
    rng = np.random.default_rng(0)
    for _ in range(150):
        q = env.data.qpos[env.qadr[:, 3:]].copy()
        env.step(rng.uniform(env.action_low, env.action_high, size=(env.n, 34)))
        ctrl = env.data.ctrl[env.act_ids[:, 3:]]
        assert np.all(np.abs(ctrl - q) <= TARGET_REACH + 1e-9)
    assert env.unstable_at is None  # an untrained policy's flailing: no blow-up


def test_the_viewer_draws_a_g1_episode_without_the_model_files(tmp_path, monkeypatch):
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run
    from coordbench.viewer.replay import physical as picture_of

    monkeypatch.setenv(g1.ENV_VAR, str(UNITREE))
    (traj,), _ = run("CoCarry", ExpertPolicy(0.0), [1], embodiment="g1", budget=30)
    monkeypatch.delenv(g1.ENV_VAR)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mujoco_menagerie" else real(name, *a))
    pic = picture_of.picture(type("Run", (), {"path": tmp_path})(), "c", traj)
    assert pic["states"] and "palms are drawn at the bases" in pic["replay"]["reason"]
    robot = pic["states"][0]["robots"][0]
    assert robot[3:5] == robot[0:2]  # the palm at the base
