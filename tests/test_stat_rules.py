"""Hand-built STAT situations with known outcomes, one per rule of docs/stat.md."""

import math
import random

import numpy as np
import pytest

from coordbench.envs.stat.config import EXECUTE, IDLE, MOVE, SELECT0, StatConfig, get_config
from coordbench.envs.stat.layouts import paper_eval_seed, paper_layout
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.errors import ActionError, ConfigError


def make(tasks, agents=1, width=10.0, height=10.0, limit=700):
    cfg = StatConfig(agents, len(tasks), width, height, episode_limit=limit)
    env = StatVecEnv(cfg, 1, auto_reset=False)
    env.reset(np.array([tasks], dtype=float))
    return env


def act(env, *actions):
    obs, masks, reward, info = env.step(np.array([actions], dtype=np.int64))
    return float(reward[0]), info, masks[0]


def test_select_moves_one_step_then_three_executes_pay():
    env = make([(3.0, 0.0)])
    r, _, masks = act(env, SELECT0)  # select + first unit of movement: at x=1
    assert r == -1.0 and env.state.pos[0, 0].tolist() == [1.0, 0.0]
    assert masks[0].tolist() == [False, True, False, False]  # only MOVE
    r, _, masks = act(env, MOVE)  # x = 2
    r, _, masks = act(env, MOVE)  # snaps onto the task (x = 3): arrival
    assert env.state.pos[0, 0].tolist() == [3.0, 0.0]
    assert masks[0].tolist() == [False, False, True, False]  # only EXECUTE
    assert act(env, EXECUTE)[0] == -1.0
    assert act(env, EXECUTE)[0] == -1.0
    r, info, masks = act(env, EXECUTE)  # third EXECUTE pays: t=5, k=1
    assert r == pytest.approx(30.0 * 1.1)
    assert info.terminated[0] and env.state.t[0] == 6


def test_arrival_radius_is_half_a_unit():
    env = make([(1.4, 0.0)])
    act(env, SELECT0)  # at x = 1.0, 0.4 away: arrived without reaching the task
    assert env.state.pos[0, 0, 0] == 1.0
    assert env.state.counter[0, 0] == 2
    _, _, masks = act(env, EXECUTE)
    assert masks[0, EXECUTE]


def test_completion_reward_decays_with_time_and_grows_with_k():
    env = make([(0.2, 0.0), (0.0, 0.2)], agents=2)
    act(env, SELECT0, SELECT0 + 1)
    for _ in range(2):
        act(env, EXECUTE, EXECUTE)
    r, info, _ = act(env, EXECUTE, EXECUTE)  # t = 3 < 10: no decay; k = 1 then 2
    assert info.agent_rewards[0].tolist() == pytest.approx([30 * 1.1, 30 * 1.2])
    assert r == pytest.approx(30 * 1.1 + 30 * 1.2)


def test_time_decay_in_the_reward():
    env = make([(15.0, 0.0)], width=20)
    act(env, SELECT0)
    while env.state.target[0, 0] >= 0 and env.state.pos[0, 0, 0] < 14.6:
        act(env, MOVE)
    rewards = [act(env, EXECUTE)[0] for _ in range(3)]
    t = int(env.state.t[0]) - 1  # step index of the paying EXECUTE
    assert rewards[-1] == pytest.approx((30 - 0.5 * (t // 10)) * 1.1)


def test_idle_pays_zero_once_every_task_is_selected():
    env = make([(5.0, 0.0)], agents=2)
    r, info, masks = act(env, SELECT0, IDLE)  # agent 0 has just taken the only task
    assert info.agent_rewards[0].tolist() == [-1.0, 0.0]
    assert masks[1].tolist() == [True, False, False, False]


def test_conflict_goes_to_the_closest_then_lowest_index():
    env = make([(4.0, 0.0), (9.0, 0.0)], agents=3)
    r, info, _ = act(env, SELECT0, SELECT0, SELECT0)  # equidistant: agent 0 wins
    assert info.final_actions[0].tolist() == [SELECT0, IDLE, IDLE]
    assert info.conflicts[0] == 1 and info.forced_idle[0] == 2
    assert info.unique_assigned[0] == 1
    # losers idle with -1 (a task is still free); agent 0 is now closer to nothing else
    assert info.agent_rewards[0].tolist() == [-1.0, -1.0, -1.0]
    r, info, _ = act(env, MOVE, SELECT0 + 1, SELECT0 + 1)
    assert info.final_actions[0].tolist() == [MOVE, SELECT0 + 1, IDLE]
    # agent 2 lost, but agent 1 just took the last free task: IDLE now pays 0
    assert info.agent_rewards[0].tolist() == [-1.0, -1.0, 0.0]


def test_off_mask_actions_are_penalised_like_the_released_code():
    env = make([(5.0, 0.0), (8.0, 0.0)], agents=1)
    r, _, _ = act(env, MOVE)  # no target: invalid move
    assert r == -1.5
    r, _, _ = act(env, EXECUTE)
    assert r == -1.5
    r, _, _ = act(env, IDLE)  # idle while tasks are selectable
    assert r == -1.0
    act(env, SELECT0)
    r, _, _ = act(env, IDLE)  # idle with a target
    assert r == -1.0


def test_invalid_select_while_executing():
    env = make([(0.2, 0.0), (3.0, 0.0)])
    act(env, SELECT0)
    act(env, EXECUTE)  # now executing
    r, _, _ = act(env, SELECT0 + 1)
    assert r == -3.0
    assert env.state.target[0, 0] == 0


def test_off_mask_reselection_steals_a_far_task():
    env = make([(6.0, 0.0)], agents=2)
    act(env, SELECT0, IDLE)  # agent 0 at x=1, 5 from the task
    r, info, _ = act(env, MOVE, SELECT0)  # agent 1 re-selects: agent 0 is > 1 away, loses it
    assert env.state.target[0].tolist() == [-1, 0]
    assert env.state.assignee[0, 0] == 1


def test_actions_out_of_range_raise():
    env = make([(1.0, 1.0)])
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([[4]]))
    # the message names the offending index, whatever the integer type
    for bad, dtype in ((4, np.int64), (-1, np.int64), (9, np.int32), (-2, np.int8)):
        with pytest.raises(ActionError, match=f"action index {bad} out of range"):
            env.step(np.array([[bad]], dtype=dtype))
    assert env.state.t[0] == 0  # nothing was stepped
    with pytest.raises(ActionError, match="shape"):
        env.step(np.array([0, 0]))
    with pytest.raises(ActionError, match="integers"):
        env.step(np.array([[0.5]]))


def test_truncation_at_the_episode_limit():
    env = make([(9.0, 9.0)], limit=3)
    act(env, SELECT0)
    act(env, MOVE)
    _, info, _ = act(env, MOVE)
    assert info.truncated[0] and not info.terminated[0] and not env.active[0]


def test_observation_layout_and_binning():
    cfg = get_config("3A-6T-10x6")
    env = StatVecEnv(cfg, 1, auto_reset=False)
    tasks = [(0.3, 0.0), (0.0, 0.8), (1.9, 0.0), (2.1, 0.0), (9.0, 0.0), (7.0, 5.0)]
    obs, _ = env.reset(np.array([tasks]))
    bins = obs[0, :18].reshape(3, 6)
    # bin width W/5 = 2: 0.3 -> 0, 0.8 -> 1, 1.9 -> 0 (floor(0.95)), 2.1 -> 1, 9 -> 4, 8.6 -> 4
    assert bins[0].tolist() == [0, 1, 0, 1, 4, 4]
    assert obs[0, 18:].tolist() == [0] * 3 + [0] * 6 + [0] * 6
    assert cfg.obs_dim == 33


def test_paper_layout_reproduces_the_global_random_stream():
    cfg = get_config("5A-25T-50x30")
    for seed in (0, 19, 4007):
        random.seed(seed)
        expect = []
        for _ in range(cfg.tasks):
            random.uniform(0, 1)
            expect.append((random.uniform(0, 50), random.uniform(0, 30)))
        assert paper_layout(cfg, seed).tolist() == [list(p) for p in expect]
    assert [paper_eval_seed(k) for k in (0, 19, 20, 99)] == [0, 19, 1000, 4019]


def test_config_names_and_errors():
    cfg = get_config("9A-25T-50x30")
    assert (cfg.agents, cfg.tasks, cfg.width, cfg.height) == (9, 25, 50, 30)
    assert cfg.num_actions == 28 and cfg.obs_dim == 9 * 25 + 9 + 50
    assert get_config("2A-3T-4x4").name == "2A-3T-4x4"
    with pytest.raises(ConfigError, match="unknown STAT config"):
        get_config("5A-25T")
    with pytest.raises(ConfigError, match="batch"):
        StatVecEnv(cfg, 0)
    assert math.isclose(get_config("5A-25T-50x30", episode_limit=50).episode_limit, 50)


@pytest.mark.parametrize("name", ["3A-6T-5x3", "5A-25T-50x30", "3A-12T-10x6"])
def test_binning_at_exact_bin_edges_matches_python(name):
    from coordbench.envs.stat.reference import ReferenceStatEnv

    cfg = get_config(name)
    w = cfg.width / cfg.num_bins
    radii = [0.5, 1.0, w, 2 * w, 3 * w, 4 * w, 0.5 * (1 - 1e-15), w * (1 + 1e-15), 0.3, 9.99]
    rng = np.random.default_rng(0)
    tasks = []
    for j in range(cfg.tasks):
        r = radii[j % len(radii)]
        a = rng.uniform(0, np.pi / 2) if j % 3 else 0.0
        tasks.append((r * np.cos(a), r * np.sin(a)))
    env = StatVecEnv(cfg, 1, auto_reset=False)
    obs, _ = env.reset(np.array([tasks]))
    ref = ReferenceStatEnv(cfg)
    ref.reset(tasks)
    assert obs[0].tolist() == ref.observation()
