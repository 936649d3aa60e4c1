"""PettingZoo and Gymnasium wrappers pass their libraries' API tests and keep the semantics."""

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

from coordbench.envs.stat.gym_env import StatGymEnv
from coordbench.envs.stat.layouts import paper_layout
from coordbench.envs.stat.pettingzoo_env import StatParallelEnv


def test_pettingzoo_parallel_api():
    parallel_api_test(StatParallelEnv("3A-6T-5x3", seed=1), num_cycles=300)
    parallel_api_test(StatParallelEnv("5A-12T-10x6", layouts="paper"), num_cycles=100)


def test_gymnasium_api():
    check_env(StatGymEnv("3A-6T-5x3"), skip_render_check=True)
    env = gym.make("coordbench/STAT-v0", config="5A-25T-50x30")
    obs, _ = env.reset(seed=0)
    assert obs["obs"].shape == (180,) and obs["agent_masks"].shape == (5, 28)


def test_paper_reset_seed_matches_released_layouts_and_episode_plays_out():
    env = StatParallelEnv("3A-6T-5x3", layouts="paper")
    obs, _ = env.reset(seed=1003)
    np.testing.assert_array_equal(env._env.vec.state.task_pos[0],
                                  paper_layout(env.cfg, 1003))
    total = 0.0
    while env.agents:
        acts = {a: int(np.flatnonzero(obs[a]["action_mask"])[0]) for a in env.agents}
        obs, rew, term, trunc, infos = env.step(acts)
        total += rew["agent_0"]
        assert rew["agent_0"] == sum(i["agent_reward"] for i in infos.values())
    assert infos["agent_0"]["tasks_completed"] == 6 and total > 150
