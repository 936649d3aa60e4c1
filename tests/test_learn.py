"""STAT learners: every method trains (smoke), and QMIX learns to beat random valid play."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.stats import welch_test
from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.layouts import paper_layout
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.learn.core import Replay, evaluate, masked_argmax, train
from coordbench.learn.registry import METHODS, make, paper_config


@pytest.mark.parametrize("algo", sorted(METHODS))
def test_every_method_trains_and_evaluates(algo):
    tc = paper_config("3A-6T-5x3", algo, total_steps=3_000, eval_every=1_500,
                      learning_starts=500, num_envs=16, eval_episodes=5)
    res = train(tc, make(tc))
    assert res["updates"] > 0 and len(res["curve"]) == 3
    assert 100 < res["final_return"] < 250 and res["final"]["success"] == 1.0


def test_masked_argmax_never_picks_an_invalid_action():
    q = torch.tensor([[[5.0, 1.0, 0.0, 9.0]]])
    mask = torch.tensor([[[False, True, True, False]]])
    assert masked_argmax(q, mask).item() == 1


def test_replay_wraps_and_samples():
    buf = Replay(5, 3, 2, 4)
    for k in range(3):
        buf.add(np.full((2, 3), k, np.float32), np.ones((2, 2, 4), bool),
                np.zeros((2, 2), np.int64), np.full(2, k, np.float32),
                np.zeros((2, 3), np.float32), np.ones((2, 2, 4), bool), np.zeros(2, np.float32))
    assert len(buf) == 5 and buf.full
    assert buf.rewards.tolist() == [2.0, 0.0, 1.0, 1.0, 2.0]  # the 6th transition wrapped
    batch = buf.sample(7, np.random.default_rng(0))
    assert batch["obs"].shape == (7, 3) and set(batch["rewards"].tolist()) <= {0.0, 1.0, 2.0}


def random_returns(cfg, seeds):
    env = StatVecEnv(cfg, len(seeds), auto_reset=False, compute_obs=False)
    env.reset(np.stack([paper_layout(cfg, s) for s in seeds]))
    rng = np.random.default_rng(1)
    total = np.zeros(len(seeds))
    while env.active.any():
        total += env.step(env.random_valid_actions(rng))[2]
    return total


def test_qmix_learns_to_beat_random_valid_play():
    cfg = get_config("3A-6T-5x3")
    tc = paper_config("3A-6T-5x3", "qmix", total_steps=120_000, eval_every=60_000, utd=8.0)
    method = make(tc)
    train(tc, method)
    seeds = list(range(200, 300))
    env = StatVecEnv(cfg, len(seeds), auto_reset=False)
    obs, masks = env.reset(np.stack([paper_layout(cfg, s) for s in seeds]))
    learned = np.zeros(len(seeds))
    while env.active.any():
        with torch.no_grad():
            act = masked_argmax(method.q_values(torch.from_numpy(obs)),
                                torch.from_numpy(masks)).numpy()
        obs, masks, r, _ = env.step(act)
        learned += r
    rand = random_returns(cfg, seeds)
    w = welch_test(learned, rand)
    assert w.diff > 0.5 and w.p < 0.01, (learned.mean(), rand.mean(), w)
    assert evaluate(method, cfg, 0, 5)["return"] > 200


def test_train_cli_json_and_resume(tmp_path):
    args = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "vdn", "--steps", "2000",
            "--seeds", "0-1", "--num-envs", "16", "--eval-every", "1000", "--workers", "1",
            "--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(payload["final_return"]) == {"mean", "ci95", "n"}
    assert payload["final_return"]["n"] == 2 and "conflict_rate" in payload
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["vdn_3A-6T-5x3_seed0.json", "vdn_3A-6T-5x3_seed1.json"]
    again = CliRunner().invoke(app, args)  # resumed: nothing retrained, same numbers
    assert json.loads(again.stdout.strip().splitlines()[-1]) == payload
