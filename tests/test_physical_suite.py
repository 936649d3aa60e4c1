"""Physical suite: demonstrations, evaluation protocols, baselines and the CLI contract."""

import json
import subprocess
import sys

import numpy as np
import pytest

from coordbench.core.rundir import RunDir
from coordbench.envs.physical.demo_files import load_demos
from coordbench.learn.imitation import (
    PolicyCheckpointError,
    default_config,
    load_nets,
)
from coordbench.report.physical_report import main_summary, phase_summary
from coordbench.suites.physical.demos import make_demos
from coordbench.suites.physical.episode import run
from coordbench.suites.physical.learning import train_policy
from coordbench.suites.physical.suite import (
    evaluate_main,
    evaluate_phases,
)


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    make_demos("CoCarry", 3, out, images=True, size=32)
    return out


def test_demonstrations_hold_states_actions_observations_and_frames(demos):
    meta = json.loads((demos / "CoCarry_meta.json").read_text())
    assert meta["episodes"] == {"train": 2, "val": 1} and meta["attempts"] >= 3
    d = load_demos(demos / "CoCarry_train.npz")
    t = d["episode_start"][-1]
    assert d["states"].shape[0] == t and d["actions"].shape == (t, 2, 9)
    assert d["obs"].shape == (t, 2, 37) and d["phase"][-1] == 2  # phase before the last step
    assert d["executed"].shape == (t, 2, 9)
    # labels are the clean expert actions; executed ones carry the recovery perturbation
    assert 0 < np.abs(d["executed"] - d["actions"]).mean() < 0.05
    assert d["frames"].shape[1:] == (2, 32, 32, 3) and len(d["frames"]) == len(d["frame_index"])
    assert (np.diff(d["phase_steps"], axis=1) > 0).all()


def test_replaying_a_demonstration_reproduces_it(demos):
    """Restore the recorded state at phase 2's start and replay the executed actions: the
    recorded phase-3 step comes out exactly."""
    from coordbench.envs.physical.env import PhysicalEnv
    from coordbench.envs.physical.tasks import get_task

    d = load_demos(demos / "CoCarry_train.npz")
    env = PhysicalEnv(get_task("CoCarry"))
    env.reset(int(d["seeds"][0]))
    s1 = int(d["phase_steps"][0, 0])
    env.set_state(d["states"][s1], s1, 1)
    for r in range(s1, int(d["episode_start"][1])):
        env.step(d["executed"][r])
        if env.phase == 3:
            break
    assert env.phase == 3 and env.steps == d["phase_steps"][0, 2]


def test_main_and_phase_level_evaluation_resume(tmp_path, demos):
    run_dir = RunDir.create_or_open(tmp_path / "run")
    trs = evaluate_main("CoCarry", "expert", 3, run_dir)
    s = main_summary(trs)
    assert s["success"].mean == 1.0 and s["phases"]["p2"].n == 3
    again = evaluate_main("CoCarry", "expert", 3, run_dir)  # resumed: nothing replayed
    assert [t.to_jsonl() for t in again] == [t.to_jsonl() for t in trs]
    by_phase = evaluate_phases("CoCarry", "expert", demos / "CoCarry_train.npz", run_dir,
                               per_phase=2)
    ps = phase_summary("CoCarry", by_phase)
    assert ps["collaborative"].n == 4 and ps["non_collaborative"].n == 2
    assert ps["phases"]["p3"].mean == 1.0
    assert by_phase[2][0].header.params["start_phase"] == 1


@pytest.mark.parametrize("algo,obs,scope,sharing", [
    ("bc", "state", "local", "separate"), ("act", "state", "global", "shared"),
    ("dp", "state", "local", "shared"), ("bc", "image", "local", "separate"),
    ("act", "image", "global", "separate")])
def test_baselines_train_save_load_and_act(tmp_path, demos, algo, obs, scope, sharing):
    cfg = default_config("CoCarry", algo, 2, obs=obs, scope=scope, sharing=sharing,
                         agent_id=sharing == "shared", steps=3, batch=8, hidden=32)
    res = train_policy(cfg, demos, tmp_path / "p.pt")
    assert np.isfinite(res["train_loss"]) and res["val_loss"] is not None
    cfg2, nets = load_nets(tmp_path / "p.pt")
    assert cfg2 == cfg and len(nets) == (2 if sharing == "separate" else 1)
    from coordbench.learn.imitation import load_policy

    trs, recs = run("CoCarry", load_policy(tmp_path / "p.pt"), [1, 2], budget=12, record=True)
    acts = np.stack(recs[0].actions)
    assert acts.shape == (12, 2, 9) and np.isfinite(acts).all()
    assert all(t.end.t == 12 for t in trs)


def test_bad_checkpoints_and_options(tmp_path, demos):
    with pytest.raises(PolicyCheckpointError, match="does not exist"):
        load_nets(tmp_path / "nope.pt")
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    with pytest.raises(PolicyCheckpointError, match="corrupt"):
        load_nets(tmp_path / "bad.pt")
    from coordbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--algo must be one of bc, act, dp"):
        default_config("CoCarry", "gail", 2)
    with pytest.raises(ConfigError, match="--agent-id applies to shared"):
        default_config("CoCarry", "bc", 2, agent_id=True)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=600)


def test_cli_contract(tmp_path, demos):
    res = cli("physical", "eval", "--task", "BigTable", "--policy", "expert", "--rollouts", "2",
              "--out", str(tmp_path / "ev"), "--json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert set(payload["BigTable"]["success"]) == {"mean", "ci95", "n", "lo", "hi"}
    assert set(payload["BigTable"]["phases"]) == {"p1", "p2", "p3"}
    res = cli("physical", "train", "--task", "CoCarry", "--algo", "bc", "--steps", "2",
              "--demos", str(demos), "--out", str(tmp_path / "bc.pt"), "--rollouts", "0",
              "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["checkpoint"] == str(tmp_path / "bc.pt")
    res = cli("physical", "eval", "--task", "BigTable", "--policy", str(tmp_path / "bc.pt"),
              "--rollouts", "1", "--out", str(tmp_path / "ev2"))
    assert res.returncode == 2 and "trained on CoCarry, not BigTable" in res.stderr
    for args, msg in [(("physical", "eval", "--task", "Juggle"), "unknown physical task"),
                      (("physical", "train", "--task", "CoCarry", "--obs", "depth",
                        "--demos", str(demos)), "--obs must be one of"),
                      (("physical", "train", "--task", "CoCarry", "--demos",
                        str(tmp_path / "none")), "no such demonstrations folder")]:
        res = cli(*args)
        assert res.returncode == 2 and msg in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1


def test_a_retrained_checkpoint_is_never_resumed_as_the_old_one(tmp_path, demos):
    run_dir = RunDir.create_or_open(tmp_path / "run")
    path = tmp_path / "p.pt"
    for seed in (0, 1):
        train_policy(default_config("CoCarry", "bc", 2, steps=2, batch=4, hidden=16,
                                    seed=seed), demos, path)
        evaluate_main("CoCarry", str(path), 1, run_dir)
    assert len(run_dir.conditions) == 2
