"""Physical imitation learning: observation history, chunk ensembling, the joint policy,
the DAgger labeller and the `physical train` contract."""

import json
import subprocess
import sys

import numpy as np
import pytest

from coordbench.agents.physical.expert import RESYNC_STEPS, ExpertPolicy
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import ConfigError
from coordbench.learn.imitation import (
    LearnedPolicy,
    Trainer,
    concat_episodes,
    default_config,
    load_nets,
    load_policy,
    obs_features,
    stacked_obs,
)
from coordbench.suites.physical.demos import make_demos
from coordbench.suites.physical.episode import run
from coordbench.suites.physical.learning import (
    DAGGER_SEED0,
    ShadowPolicy,
    dagger_rounds,
    train_policy,
)


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    make_demos("CoCarry", 3, out)
    return out


def _data(demos):
    from coordbench.envs.physical.demo_files import load_demos

    return load_demos(demos / "CoCarry_train.npz")


def test_history_stacks_past_observations_within_each_episode():
    cfg = default_config("CoCarry", "bc", 2, history=2, history_every=3)
    obs = np.arange(10, dtype=np.float32)[:, None, None] * np.ones((10, 2, 4), np.float32)
    starts = np.array([0, 4, 10])
    out = stacked_obs(cfg, obs, starts)
    assert out.shape == (10, 2, 3, 4)
    # row 9 (episode 2 began at row 4): now, 3 and 6 steps back, the latter clamped to row 4
    assert out[9, 0, :, 0].tolist() == [9, 6, 4]
    assert out[2, 1, :, 0].tolist() == [2, 0, 0]  # episode 1 began at row 0
    assert out[4, 0, :, 0].tolist() == [4, 4, 4]  # never reaches into the previous episode


def test_the_policy_stacks_the_same_history_at_test_time(demos):
    cfg = default_config("CoCarry", "bc", 2, history=2, history_every=3, steps=2, batch=8,
                         hidden=16)
    tr = Trainer(cfg, _data(demos))
    pol = tr.policy()
    env = PhysicalEnv(get_task("CoCarry"))
    env.reset(5)
    pol.reset([env])
    seen = []
    for _ in range(8):
        pol.act([env])
        seen.append(env.local_obs())
        env.step(np.zeros((2, 9)))
    state = pol._state(env)
    assert state.shape == (2, 3, 37)
    # the newest observation is the one taken before the last step; lags 3 and 6 before it
    assert np.array_equal(state[:, 0], seen[-1]) and np.array_equal(state[:, 1], seen[-4])
    assert np.array_equal(state[:, 2], seen[-7])


def test_temporal_ensembling_weights_older_chunks_more():
    cfg = default_config("CoCarry", "bc", 2, chunk=3, execute=1, ensemble=0.5)
    pol = LearnedPolicy(cfg, [], "x")
    pol.queue = {1: []}

    class Env:
        pass

    env = Env()
    pol.queue = {id(env): []}
    chunks = [np.full((2, 3, 9), v, dtype=float) for v in (0.0, 10.0, 20.0, 30.0)]
    for k in range(3):
        chunks[k][:, :, 0] = np.arange(3) + 100 * k  # the step each chunk predicts for
    first = pol._ensembled(env, chunks[0])
    assert np.allclose(first, chunks[0][:, 0])
    second = pol._ensembled(env, chunks[1])
    w = np.exp(-0.5 * np.arange(2))
    w /= w.sum()
    assert np.allclose(second[:, 0], w[0] * 1 + w[1] * 100)  # chunk 0's step 1, chunk 1's 0
    pol._ensembled(env, chunks[2])
    fourth = pol._ensembled(env, chunks[3])  # chunk 0 has run out (3 steps)
    assert len(pol.queue[id(env)]) == 3
    w = np.exp(-0.5 * np.arange(3))
    w /= w.sum()
    assert np.allclose(fourth[:, 1], w @ np.array([10.0, 20.0, 30.0]))


def test_joint_policy_is_one_network_acting_for_every_robot(tmp_path, demos):
    cfg = default_config("CoCarry", "joint", 2, steps=3, batch=8, hidden=32)
    assert (cfg.scope, cfg.sharing, cfg.chunk, cfg.execute) == ("global", "joint", 20, 1)
    assert cfg.ensemble == 0.1  # the measured recipe: a query every step, ensembled
    train_policy(cfg, demos, tmp_path / "j.pt")
    pol = load_policy(tmp_path / "j.pt")
    assert len(pol.nets) == 1 and pol.nets[0].head.out_features == 20 * 18
    trs, recs = run("CoCarry", pol, [1, 2], budget=25, record=True)
    acts = np.stack(recs[0].actions)
    assert acts.shape == (25, 2, 9) and np.isfinite(acts).all()
    # the two robots' actions come from different output slots, not one copied row
    assert not np.allclose(acts[:, 0], acts[:, 1])
    with pytest.raises(ConfigError, match="--algo joint"):
        default_config("CoCarry", "joint", 2, scope="local")
    with pytest.raises(ConfigError, match="state observations only"):
        default_config("CoCarry", "joint", 2, obs="image")


@pytest.mark.parametrize("n", [2, 3])
def test_global_observation_puts_the_robots_own_row_first(n):
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(4, n, 40)).astype(np.float32)
    shared = default_config("CoCarry", "bc", n, scope="global", sharing="shared")
    rows = [obs_features(shared, obs, r) for r in range(n)]
    width = rows[0].shape[1] // n
    for r in range(n):
        # own observation first, then the others in turn: inputs differ between robots, so one
        # shared network can tell them apart
        np.testing.assert_array_equal(rows[r][:, :width], obs_features(
            default_config("CoCarry", "bc", n), obs, r))
        np.testing.assert_array_equal(np.sort(rows[r], axis=1), np.sort(rows[0], axis=1))
    assert not np.array_equal(rows[0], rows[1])
    # robot order (old checkpoints) and the joint network: the same input for every robot
    fixed = default_config("CoCarry", "bc", n, scope="global", global_order="fixed")
    joint = default_config("CoCarry", "joint", n)
    for cfg in (fixed, joint):
        assert all(np.array_equal(obs_features(cfg, obs, r), obs_features(cfg, obs, 0))
                   for r in range(n))


def test_checkpoints_without_an_order_keep_robot_order(tmp_path, demos):
    import torch

    cfg = default_config("CoCarry", "bc", 2, scope="global", steps=2, batch=8, hidden=16)
    train_policy(cfg, demos, tmp_path / "g.pt")
    assert load_nets(tmp_path / "g.pt")[0].global_order == "own_first"
    blob = torch.load(tmp_path / "g.pt", weights_only=True)
    del blob["config"]["global_order"]
    torch.save(blob, tmp_path / "old.pt")
    assert load_nets(tmp_path / "old.pt")[0].global_order == "fixed"


@pytest.mark.parametrize("algo", ["act", "dp"])
def test_act_and_dp_defaults_are_the_ensembled_recipe_and_old_files_keep_theirs(
        tmp_path, demos, algo):
    import torch

    cfg = default_config("CoCarry", algo, 2)
    # queried every step, ACT's temporal ensemble; the steps the recipe was measured at
    assert (cfg.execute, cfg.ensemble) == (1, 0.1) and cfg.steps in (3000, 5000)
    assert (cfg.pre_norm, cfg.dp_target) == (True, "sample")
    # chunks asked for open loop are executed open loop
    assert default_config("CoCarry", algo, 2, execute=8).ensemble == 0.0
    # a file written before these fields: post-LN transformers, a noise-predicting denoiser
    old_kind = default_config("CoCarry", algo, 2, steps=2, batch=8, hidden=16,
                              pre_norm=False, dp_target="epsilon")
    train_policy(old_kind, demos, tmp_path / "p.pt")
    blob = torch.load(tmp_path / "p.pt", weights_only=True)
    del blob["config"]["pre_norm"], blob["config"]["dp_target"]
    torch.save(blob, tmp_path / "old.pt")
    old, nets = load_nets(tmp_path / "old.pt")
    assert (old.pre_norm, old.dp_target) == (False, "epsilon")
    assert nets[0].cfg.dp_target == "epsilon"
    if algo == "act":
        assert not nets[0].decoder.layers[0].norm_first and nets[0].decoder.norm is None


def test_the_dagger_labeller_resyncs_when_the_learner_already_holds():
    env = PhysicalEnv(get_task("CoCarry"))
    env.reset(3)
    driver = ExpertPolicy(0.0)
    driver.reset([env])
    while env.phase < 1:  # the expert drives until both hold the basket up
        env.step(driver.act([env])[0])
    labeller = ExpertPolicy(0.0, resync=True)
    labeller.reset([env])  # a fresh phase machine: it thinks it still has to reach
    assert [e.stage for e in labeller.experts[id(env)]] == ["reach", "reach"]
    hold = driver.act([env])[0]
    for _ in range(RESYNC_STEPS + 1):
        labeller.act([env])
        env.step(hold)
    assert all(e.stage != "reach" for e in labeller.experts[id(env)])
    assert (labeller.label(env)[:, 8] >= 0.5).all()  # it labels keeping the grip closed
    plain = ExpertPolicy(0.0)  # without resync the phase machine stays out of step
    plain.reset([env])
    for _ in range(RESYNC_STEPS + 1):
        plain.act([env])
        env.step(hold)
    assert [e.stage for e in plain.experts[id(env)]] == ["reach", "reach"]


def test_dagger_adds_labelled_learner_rollouts(demos):
    cfg = default_config("CoCarry", "bc", 2, steps=2, batch=8, hidden=16, dagger=1,
                         dagger_episodes=2, dagger_steps=2)
    data = _data(demos)
    tr = Trainer(cfg, data)
    tr.fit(2)
    rounds = dagger_rounds(cfg, tr)
    assert len(rounds) == 1 and rounds[0]["rows"] == len(data["actions"]) + rounds[0]["rows_added"]
    added = tr.data["seeds"][len(data["seeds"]):]
    assert added.tolist() == [DAGGER_SEED0, DAGGER_SEED0 + 1]
    assert tr.data["episode_start"][-1] == rounds[0]["rows"]
    # the new rows carry the expert's labels, not the learner's actions
    new = slice(len(data["actions"]), None)
    assert not np.allclose(tr.data["actions"][new], tr.data["executed"][new])


def test_concat_episodes_offsets():
    a = {"obs": np.zeros((3, 2, 1)), "actions": np.zeros((3, 2, 9)), "seeds": np.array([1]),
         "episode_start": np.array([0, 3])}
    b = {"obs": np.ones((5, 2, 1)), "actions": np.ones((5, 2, 9)), "seeds": np.array([7, 8]),
         "episode_start": np.array([0, 2, 5])}
    c = concat_episodes(a, b)
    assert c["episode_start"].tolist() == [0, 3, 5, 8] and c["seeds"].tolist() == [1, 7, 8]
    assert c["obs"].shape == (8, 2, 1)


def test_shadow_policy_acts_as_the_learner(demos):
    cfg = default_config("CoCarry", "bc", 2, steps=2, batch=8, hidden=16)
    tr = Trainer(cfg, _data(demos))
    learner = tr.policy()
    shadow = ShadowPolicy(tr.policy(), ExpertPolicy(0.0, resync=True))
    a = run("CoCarry", learner, [4], budget=10, record=True)[1][0]
    b = run("CoCarry", shadow, [4], budget=10, record=True)[1][0]
    assert np.array_equal(np.stack(a.executed), np.stack(b.executed))
    assert not np.allclose(np.stack(b.actions), np.stack(b.executed))


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_train_records_demos_trains_and_evaluates(tmp_path):
    res = cli("physical", "train", "--task", "CoCarry", "--algo", "bc", "--n-demos", "2",
              "--steps", "3", "--chunk", "4", "--execute", "2", "--sharing", "shared_id",
              "--rollouts", "2", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out["success"]) == {"mean", "ci95", "n", "lo", "hi"} and out["success"]["n"] == 2
    assert set(out["phases"]) == {"p1", "p2", "p3"} and out["train_s"] > 0
    assert out["demo_episodes"] == 2 and out["agent_id"] is True
    assert (tmp_path / "runs/demos/n2/CoCarry_train.npz").is_file()
    assert (tmp_path / "runs/demos/n2/CoCarry_val.npz").is_file()
    ckpt = tmp_path / out["checkpoint"]
    assert ckpt.is_file() and ckpt.name == "CoCarry_bc_state_local_shared_id_seed0.pt"
    # the evaluation is a condition of the run directory, as `physical eval` writes it
    assert (tmp_path / out["eval_run"]).is_dir()


def test_train_on_images_records_frames_first(tmp_path):
    res = cli("physical", "train", "--task", "CoCarry", "--algo", "act", "--obs", "image",
              "--n-demos", "1", "--steps", "2", "--rollouts", "1", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["success"]["n"] == 1 and out["obs"] == "image"
    with np.load(tmp_path / "runs/demos/n1_img64/CoCarry_train.npz") as d:
        assert d["frames"].shape[-3:] == (64, 64, 3) and d["frames"].dtype == np.uint8
    # state demonstrations of the same count stay a folder of their own
    assert not (tmp_path / "runs/demos/n1").exists()


@pytest.mark.parametrize("args,msg", [
    (["--demos", "{tmp}", "--n-demos", "3"], "give --demos DIR or --n-demos N, not both"),
    (["--sharing", "team"], "--sharing must be one of separate, shared, shared_id"),
    (["--algo", "joint", "--scope", "local"], "--algo joint is one network"),
    (["--algo", "joint", "--sharing", "shared"], "--algo joint is one network"),
    (["--history", "2", "--obs", "image"], "--history applies to state observations only"),
    (["--chunk", "4", "--execute", "5"], "--execute must be >= 1 and <= --chunk"),
    (["--dagger", "-1"], "--dagger must be >= 0"),
    (["--ensemble", "-1"], "--ensemble must be >= 0"),
    (["--n-demos", "0"], "--n-demos must be >= 1"),
    (["--rollouts", "1", "--eval-out", "{tmp}/file.txt/run"], "--eval-out"),
])
def test_train_bad_input_is_one_line(tmp_path, args, msg):
    from tests.cli_errors import error_line

    (tmp_path / "file.txt").write_text("a file, not a folder")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = error_line(["physical", "train", "--task", "CoCarry", "--rollouts", "0",
                       "--n-demos" if "--n-demos" not in args and "--demos" not in args
                       else "--steps", "1", *args], tmp_path)
    assert msg in line


def test_a_carrier_releases_only_once_its_torso_is_down():
    from dataclasses import replace

    from coordbench.envs.physical.operators import LOWERED, CarryExpert

    env = PhysicalEnv(get_task("CoCarry"))
    env.reset(2)
    ex = CarryExpert(np.random.default_rng(0), 0.0)
    ex.stage, ex.lift, ex.t_stage = "lower", 0.0, 5.0  # its target is down, long ago
    s = env.sense(0)
    up = replace(s, joints=np.r_[0.1, s.joints[1:]])
    assert ex.act(up, 0.02)[8] == 1.0 and ex.stage == "lower"  # still held up: keep it
    down = replace(s, joints=np.r_[LOWERED / 2, s.joints[1:]])
    ex.act(down, 0.02)
    assert ex.stage == "release"
