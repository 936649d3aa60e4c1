"""Physical replay: poses recorded at 10 Hz, decoded as arrays, drawn into a video."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import (
    AgentSpec,
    EpisodeEndEvent,
    PhysicalPosesEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.envs.physical import poses as pose
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import ConfigError, CoordbenchError, RunDirError
from coordbench.suites.physical.episode import POSE_EVERY, POSE_UNIT, run
from coordbench.suites.physical.replay import recorded_poses
from coordbench.suites.physical.video import video_frames

cli = CliRunner()


def _simulate(task: str, seed: int, steps: int):
    """Step the expert alone (no recorder) and keep every step's pose sample and body poses."""
    env, scratch = PhysicalEnv(get_task(task)), PhysicalEnv(get_task(task))
    env.reset(seed)
    scratch.reset(seed)
    policy = ExpertPolicy(0.0)
    policy.reset([env])
    lay = pose.pose_layout(env)

    def where() -> np.ndarray:
        # after mj_step the bodies' world poses are those of the last substep's start; the
        # exact state's own kinematics come from a forward pass on a copy
        scratch.set_state(env.get_state(), 0, 0)
        return scratch.data.xpos.copy()

    samples, xpos = [pose.sample(env.data, lay)], [where()]
    for _ in range(steps):
        env.step(policy.act([env])[0])
        samples.append(pose.sample(env.data, lay))
        xpos.append(where())
    return lay, samples, xpos


# Pouring has three free bodies, MoveHouse three robots and a door hinge
@pytest.mark.parametrize("task", ["Pouring", "MoveHouse"])
def test_a_replayed_pose_sequence_equals_the_simulated_one_at_the_recorded_steps(task):
    budget = 63  # not a multiple of POSE_EVERY: the last step is sampled off the grid
    tr = run(task, ExpertPolicy(0.0), [3], budget=budget)[0][0]
    # through the file format, as a viewer reads it
    p = recorded_poses(Trajectory.from_jsonl(tr.to_jsonl()))
    assert list(p.steps) == [*range(0, budget, POSE_EVERY), budget]
    assert np.allclose(p.t, p.steps * 0.02) and p.every == POSE_EVERY
    lay, samples, xpos = _simulate(task, 3, budget)
    assert tuple(p.bodies) == lay.bodies and tuple(p.joints) == lay.joints
    for k, step in enumerate(p.steps):
        robots, bodies, joints = samples[step]
        # equal to the simulated pose quantized to the recording unit, exactly
        np.testing.assert_array_equal(p.robots[k], np.rint(robots / POSE_UNIT) * POSE_UNIT)
        for b, name in enumerate(lay.bodies):
            np.testing.assert_array_equal(p.bodies[name][k],
                                          np.rint(bodies[b] / POSE_UNIT) * POSE_UNIT)
        for j, name in enumerate(lay.joints):
            assert p.joints[name][k] == np.rint(joints[j] / POSE_UNIT) * POSE_UNIT
    # replayed into a fresh scene: the same configuration, every body where it was simulated
    env = PhysicalEnv(get_task(task))
    env.reset(3)
    for k, step in enumerate(p.steps):
        pose.apply(env.model, env.data, lay, p.robots[k],
                   np.array([b[k] for b in p.bodies.values()]),
                   np.array([j[k] for j in p.joints.values()]))
        again = pose.sample(env.data, lay)
        np.testing.assert_allclose(again[0], p.robots[k], atol=1e-12)
        # the recording unit, 1e-4 rad, over about 1.5 m of base, arm and fingers
        np.testing.assert_allclose(env.data.xpos, xpos[step], atol=5e-4)


def test_old_trajectories_without_poses_still_load_and_say_so():
    tr = run("CoCarry", ExpertPolicy(0.0), [1], budget=10, poses=False)[0][0]
    assert not tr.steps(PhysicalPosesEvent)
    lines = tr.to_jsonl().splitlines()
    head = json.loads(lines[0])
    head["schema_version"] = "1.4"
    old = Trajectory.from_jsonl("\n".join([json.dumps(head), *lines[1:]]))
    with pytest.raises(RunDirError, match="has no recorded poses .*schema 1.4"):
        recorded_poses(old)


def _fake_run_with_other_episodes(path):
    """A physical episode with poses, the same one without them, and a STAT episode."""
    res = cli.invoke(app, ["physical", "eval", "--task", "Handover", "--policy", "expert",
                           "--rollouts", "2", "--out", str(path), "--json"])
    assert res.exit_code == 0, res.output
    run_dir = RunDir.open(path)
    cond = "physical_Handover_expert_main"
    # seed0002 as written before schema 1.5: no physical_poses line
    src = run_dir.episode_path(cond, "seed0002")
    kept = [ln for ln in src.read_text().splitlines() if '"physical_poses"' not in ln]
    src.write_text("\n".join(kept) + "\n")
    run_dir.register("stat_fake", {"suite": "stat"})
    header = TrajectoryHeader(episode_id="stat_fake/ep0", suite="stat", task_id="3A-6T-5x3",
                              seed=0, team=[AgentSpec(id="a0", driver="greedy")],
                              coordbench_version="0")
    run_dir.write_episode("stat_fake", "ep0", Trajectory(
        header=header, events=[EpisodeEndEvent(t=1, termination="success", success=True)]))
    return cond


def test_render_writes_one_frame_per_recorded_step_and_bad_input_is_one_line(tmp_path):
    cond = _fake_run_with_other_episodes(tmp_path / "run")
    out = tmp_path / "v" / "seed1.mp4"
    res = cli.invoke(app, ["physical", "render", str(tmp_path / "run"), "--episode",
                           f"{cond}/seed0001", "--out", str(out), "--width", "160",
                           "--height", "120", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    traj = RunDir.open(tmp_path / "run").load_episode(cond, "seed0001")
    k = len(recorded_poses(traj))
    assert info["frames"] == k and info["fps"] == 10 and k > 40
    assert video_frames(out) == (k, 160, 120)  # read back from the file
    # a bare key that one condition has; another camera
    res = cli.invoke(app, ["physical", "render", str(tmp_path / "run"), "--episode",
                           "seed0001", "--out", str(tmp_path / "ego.mp4"), "--camera", "ego1",
                           "--width", "64", "--height", "48"])
    assert res.exit_code == 0, res.output
    assert video_frames(tmp_path / "ego.mp4") == (k, 64, 48)
    for episode, kind, msg in [
            ("seed0009", ConfigError, "no episode 'seed0009' in .*give CONDITION/KEY"),
            (f"{cond}/seed0003", ConfigError, "no episode"),
            ("stat_fake/ep0", ConfigError, "is a stat episode, not a physical one"),
            (f"{cond}/seed0002", RunDirError, "has no recorded poses")]:
        res = cli.invoke(app, ["physical", "render", str(tmp_path / "run"), "--episode",
                               episode, "--out", str(tmp_path / "bad.mp4")])
        assert isinstance(res.exception, kind), (episode, res.exception)
        assert "\n" not in str(res.exception)
        assert re.search(msg, str(res.exception)), (episode, res.exception)
    for args, msg in [(["--camera", "ego2"], "--camera must be one of overview, global, "
                                             "ego0, ego1"),
                      (["--width", "161"], "must be even")]:
        res = cli.invoke(app, ["physical", "render", str(tmp_path / "run"), "--episode",
                               f"{cond}/seed0001", "--out", str(tmp_path / "bad.mp4"), *args])
        assert isinstance(res.exception, CoordbenchError) and msg in str(res.exception)
    assert not (tmp_path / "bad.mp4").exists()
    # through the installed entry point: exit 2 and one line
    proc = subprocess.run([sys.executable, "-m", "coordbench", "physical", "render",
                           str(tmp_path / "run"), "--episode", "stat_fake/ep0", "--out",
                           str(tmp_path / "bad.mp4")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "not a physical one" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
