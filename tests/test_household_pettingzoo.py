"""Household and construct tasks as a PettingZoo ParallelEnv, and the learned team trained on
it (menu PPO) playing in the construct suite beside the other planners."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.envs.household.menu import N_FEATURES, construct_nodes
from coordbench.envs.household.pettingzoo_env import HouseholdParallelEnv
from coordbench.errors import ActionError
from coordbench.suites.constructs.episode import load_instance
from coordbench.suites.constructs.instances import select
from coordbench.suites.mecobench.instances import load_suite
from tests.cli_errors import error_line


def _construct_eps(construct: str, team: int, k: int = 6):
    out = []
    for raw in select("rep240", construct, team)[:k]:
        task, info = load_instance(raw, "x")
        out.append((task, construct_nodes(info)))
    return out


@pytest.fixture(scope="module")
def household_tasks():
    return load_suite("v1")


@pytest.mark.parametrize("structure", ["parallel", "sequential"])
def test_household_family_passes_the_parallel_api_test(household_tasks, structure):
    tasks = [t for t in household_tasks if t.structure == structure][:4]
    parallel_api_test(HouseholdParallelEnv([(t, None) for t in tasks], 2), num_cycles=150)


@pytest.mark.parametrize("construct", ["D1", "D2", "D3", "D4"])
def test_construct_families_pass_the_parallel_api_test(construct):
    env = HouseholdParallelEnv(_construct_eps(construct, 2), 2, conflict_set="with_close",
                               household=False)
    parallel_api_test(env, num_cycles=150)


def test_masked_play_is_never_refused_for_reach_or_role_and_rewards_add_up():
    env = HouseholdParallelEnv(_construct_eps("D1", 2), 2, seed=3, conflict_set="with_close",
                               household=False, step_cost=0.0)
    rng = random.Random(0)
    for _ in range(12):
        obs, _ = env.reset()
        total = 0.0
        while env.agents:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]).tolist()))
                    for a in env.agents}
            obs, rew, _, _, info = env.step(acts)
            total += rew["agent_0"]
            assert not {i["outcome"] for i in info.values()} & {"too_far", "illegal_skill"}
            for a in obs:
                assert obs[a]["observation"].shape == (env.size, N_FEATURES)
                assert 0.0 <= obs[a]["observation"].min() <= obs[a]["observation"].max() <= 1
        # without shaping or step cost the team's return is the final completion rate
        assert total == pytest.approx(env.env.completion_rate())


def test_roles_are_masked_on_d4():
    env = HouseholdParallelEnv(_construct_eps("D4", 3), 3, conflict_set="with_close",
                               household=False)
    rng = random.Random(1)
    for _ in range(6):
        obs, _ = env.reset()
        while env.agents:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]).tolist()))
                    for a in env.agents}
            obs, _, _, _, info = env.step(acts)
            assert all(i["outcome"] != "illegal_skill" for i in info.values())


def test_bad_actions_are_one_clear_error():
    env = HouseholdParallelEnv(_construct_eps("D1", 2, 1), 2, household=False)
    env.reset()
    with pytest.raises(ActionError, match="no action for agent_1"):
        env.step({"agent_0": 0})
    with pytest.raises(ActionError, match="is not in 0.."):
        env.step({"agent_0": 0, "agent_1": env.size})
    while env.agents:
        env.step({a: 0 for a in env.agents})
    with pytest.raises(ActionError, match="call reset"):
        env.step({"agent_0": 0, "agent_1": 0})


def test_menu_ppo_learns_one_instance():
    from coordbench.learn import menu_ppo

    eps = _construct_eps("D1", 2, 1)
    cfg = menu_ppo.MenuPPOConfig(steps=4096, eval_every=4096, num_envs=8, rollout=64)
    net, res = menu_ppo.train(cfg, eps, eps, 2)
    assert res["final"]["success"] == 1.0 and res["final"]["completion"] == 1.0
    before = menu_ppo.evaluate(menu_ppo.EntryScorer(cfg.hidden), eps, 2, "with_close", False)
    assert before["success"] == 0.0  # the untrained network does not solve it


def test_train_then_play_beside_the_other_planners(tmp_path):
    res = CliRunner().invoke(app, ["constructs", "train", "--construct", "D1", "--team", "2",
                                   "--steps", "2048", "--out", str(tmp_path / "m"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert {"success", "completion", "train_s", "checkpoint"} <= set(out)
    assert out["success"]["n"] == out["test_instances"] == 20 and out["train_instances"] == 55
    ckpt = out["checkpoint"]
    assert json.loads((tmp_path / "m" / "learned_D1_team2_seed0.json").read_text())["curve"]
    run = tmp_path / "run"
    res = CliRunner().invoke(app, ["constructs", "run", "--subset", "rep240", "--construct",
                                   "D1", "--team", "2", "--limit", "4", "--agents", "learned",
                                   "--checkpoint", ckpt, "--out", str(run), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["instances"] == 4
    manifest = json.loads((run / "manifest.json").read_text())
    (cond, spec), = manifest["conditions"].items()
    assert "_learned-learned_D1_team2_seed0-" in cond and spec["checkpoint"] == ckpt
    assert spec["planner"] == "decentralized"


@pytest.mark.parametrize(("args", "needle"), [
    (["--agents", "learned"], "--agents learned needs --checkpoint"),
    (["--agents", "rule", "--checkpoint", "x.pt"], "--agents learned needs --checkpoint"),
    (["--agents", "learned", "--checkpoint", "missing.pt"], "does not exist"),
    (["--agents", "learned", "--checkpoint", "{bad}"], "is not a learned team's checkpoint"),
    (["--agents", "learned", "--checkpoint", "{bad}", "--planner", "central"],
     "needs --planner decentralized"),
])
def test_bad_learned_input_is_one_line(args, needle, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    args = [a.replace("{bad}", str(bad)) for a in args]
    assert needle in error_line(["constructs", "run", "--limit", "1", "--out",
                                 str(tmp_path / "r"), *args], tmp_path)
    assert not (tmp_path / "r").exists()


def test_shared_feature_cache_changes_no_feature(household_tasks):
    from coordbench.envs.household.menu import entry_features, observe_entries

    tasks = [t for t in household_tasks if t.structure == "sequential"][:3]
    env = HouseholdParallelEnv([(t, None) for t in tasks], 2, seed=2)
    rng = random.Random(2)
    for _ in range(3):
        obs, _ = env.reset()
        while env.agents:
            for i in range(2):
                cached, _ = observe_entries(env.env, env.goals, i, env.menus[i], 0.3, env.size)
                alone = [entry_features(env.env, env.goals, i, act, 0.3)
                         for act in env.menus[i]]
                assert np.array_equal(cached[:len(alone)], np.stack(alone))
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]).tolist()))
                    for a in env.agents}
            obs, *_ = env.step(acts)


@pytest.mark.parametrize("family", ["household", "D1"])
def test_batched_engine_passes_the_api_test_and_plays_exactly_as_the_python_one(
        household_tasks, family):
    if family == "household":
        eps, n, kw = [(t, None) for t in household_tasks[:6]], 2, {}
    else:
        eps, n, kw = _construct_eps("D1", 3), 3, {"conflict_set": "with_close",
                                                  "household": False}
    parallel_api_test(HouseholdParallelEnv(eps, n, engine="batched", **kw), num_cycles=100)
    envs = [HouseholdParallelEnv(eps, n, seed=4, engine=e, shaping=0.5, **kw)
            for e in ("python", "batched")]
    rng = random.Random(2)
    conflicts = 0
    for _ in range(8):
        (obs_p, info_p), (obs_b, info_b) = (e.reset() for e in envs)
        assert info_p == info_b
        while envs[0].agents:
            for a in envs[0].possible_agents:
                np.testing.assert_array_equal(obs_p[a]["observation"], obs_b[a]["observation"])
                np.testing.assert_array_equal(obs_p[a]["action_mask"], obs_b[a]["action_mask"])
            # mostly masked choices, some anything (refusals), often the same object
            acts = {a: int(rng.choice(np.flatnonzero(obs_p[a]["action_mask"]).tolist()))
                    if rng.random() < 0.85 else rng.randrange(envs[0].size)
                    for a in envs[0].agents}
            out_p, out_b = envs[0].step(acts), envs[1].step(acts)
            (obs_p, *rest_p), (obs_b, *rest_b) = out_p, out_b
            assert rest_p == rest_b
            conflicts += sum(i["outcome"] == "conflict_lost" for i in rest_p[-1].values())
            assert envs[0].agents == envs[1].agents
    assert envs[1].env is None
    if family == "D1":
        assert conflicts > 0  # the conflict winners were drawn alike
    with pytest.raises(ValueError, match="engine must be python or batched"):
        HouseholdParallelEnv(eps, n, engine="gpu")
