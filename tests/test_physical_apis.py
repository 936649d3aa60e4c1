"""The physical suite's standard APIs: the PettingZoo parallel environment and the Gymnasium
environment pass their libraries' API checks on every task and both embodiments, replay the
suite's rollouts step for step (the same observations, phases, last step and success), and
fail on bad arguments with one-line errors. The G1 cases run where the G1 model files are
($COORDBENCH_G1_MODEL, or the shared copy tests/test_g1.py reads)."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test, parallel_seed_test

import coordbench  # noqa: F401  (registers coordbench/Physical-v0)
from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.envs.physical import g1
from coordbench.envs.physical.embodiment import KINDS
from coordbench.envs.physical.gym_env import PhysicalGymEnv
from coordbench.envs.physical.pettingzoo_env import PhysicalParallelEnv
from coordbench.envs.physical.tasks import G1_TASKS, TASKS
from coordbench.errors import ActionError, ConfigError
from coordbench.suites.physical.episode import run
from tests.test_g1 import UNITREE

ROOT = Path(__file__).resolve().parents[1]
G1_MODEL = os.environ.get(g1.ENV_VAR) or (str(UNITREE) if UNITREE.is_file() else None)
needs_g1 = pytest.mark.skipif(G1_MODEL is None, reason=f"no G1 model files: set {g1.ENV_VAR} "
                                                      f"or put them at {UNITREE.parent}")
PHYSICAL = "coordbench/Physical-v0"
# what check_env says of every physical environment, by design: observations are unbounded
# and actions are in physical units (m/s, rad), not normalized
EXPECTED = ("observation space minimum value is -infinity",
            "observation space maximum value is infinity",
            "we recommend using a symmetric and normalized space")


@pytest.fixture
def g1_model(monkeypatch) -> str:
    """The G1 model file, also for the suite's rollouts (which read $COORDBENCH_G1_MODEL)."""
    assert G1_MODEL is not None
    monkeypatch.setenv(g1.ENV_VAR, G1_MODEL)
    return G1_MODEL


def unexpected(caught: list[warnings.WarningMessage]) -> list[str]:
    """Return the warnings a check gave beyond EXPECTED."""
    return [str(w.message) for w in caught
            if not any(e in str(w.message) for e in EXPECTED)]


def checked(env: gym.Env, **kwargs) -> None:
    """Run check_env on `env`; fail on any warning but the expected ones."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, **kwargs)
    assert not unexpected(caught), unexpected(caught)


def passive(env: gym.Env, steps: int) -> None:
    """Play `steps` random steps through gym.make's passive checker; fail on its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.action_space.seed(0)
        obs, _ = env.reset(seed=0)
        for _ in range(steps):
            obs, reward, term, trunc, info = env.step(env.action_space.sample())
            assert obs in env.observation_space and set(info) == {"phase", "success", "steps"}
            if term or trunc:
                break
    assert not unexpected(caught), unexpected(caught)


@pytest.mark.parametrize("task", list(TASKS))
def test_every_cobot_task_passes_both_api_checks(task):
    env = PhysicalParallelEnv(task)
    parallel_api_test(env, num_cycles=100)
    n = TASKS[task]().n_robots
    assert env.possible_agents == [f"robot{i}" for i in range(n)]
    assert env.action_space("robot0").shape == (KINDS["cobot"].action_dim,)
    obs, _ = env.reset(seed=3)
    np.testing.assert_array_equal(env.state(), np.concatenate([obs[a] for a in env.agents]))
    assert env.state() in env.state_space
    made = gym.make(PHYSICAL, task=task)
    checked(made.unwrapped, skip_render_check=True)
    passive(made, 20)
    assert made.observation_space.shape == (n * env.sim.obs_dim,)


@needs_g1
@pytest.mark.parametrize("task", list(G1_TASKS))
def test_every_g1_task_passes_both_api_checks(task, g1_model):
    env = PhysicalParallelEnv(task, embodiment="g1", g1_model=g1_model)
    parallel_api_test(env, num_cycles=10)
    assert env.action_space("robot0").shape == (KINDS["g1"].action_dim,)
    assert env.observation_space("robot0").shape == (env.sim.obs_dim,)
    made = gym.make(PHYSICAL, task=task, embodiment="g1", g1_model=g1_model)
    checked(made.unwrapped, skip_render_check=True)
    passive(made, 5)


def test_seeded_resets_repeat_and_unseeded_ones_follow_the_seed():
    parallel_seed_test(lambda: PhysicalParallelEnv("Handover"), num_cycles=20)
    a, b = PhysicalParallelEnv("BigTable"), PhysicalParallelEnv("BigTable")
    for env in (a, b):
        env.reset(seed=7)
    first, second = a.reset()[0], b.reset()[0]
    for agent in a.possible_agents:
        np.testing.assert_array_equal(first[agent], second[agent])
    assert a.sim.seed == b.sim.seed != 7


def test_rendering_gives_every_robots_view_side_by_side():
    env = PhysicalParallelEnv("BigTable", render_mode="rgb_array")
    env.reset(seed=1)
    frame = env.render()
    assert frame.shape == (96, 3 * 96, 3) and frame.dtype == np.uint8 and frame.std() > 0
    np.testing.assert_array_equal(frame[:, 96:192], env.sim.render_ego(1))
    env.close()
    env.close()
    assert PhysicalParallelEnv("BigTable").render() is None
    # check_env's render checks make the environment anew in each declared mode
    checked(gym.make(PHYSICAL, task="Handover").unwrapped)


def suite_rollout(task: str, seed: int, embodiment: str = "cobot"):
    """Return the trajectory and per-step record of the nominal expert's suite rollout."""
    trs, recs = run(task, ExpertPolicy(0.0), [seed], record=True, poses=False,
                    embodiment=embodiment)
    return trs[0], recs[0]


def parallel_player(env: PhysicalParallelEnv):
    """Return reset(seed) and step(joint action) of the parallel env in the team's arrays,
    checking that every agent got the same reward, ends and info."""
    agents = env.possible_agents

    def same(values: dict):
        assert set(values) == set(agents)
        first = values[agents[0]]
        assert all(values[a] == first for a in agents)
        return first

    def reset(seed: int):
        obs, infos = env.reset(seed=seed)
        return np.stack([obs[a] for a in agents]), same(infos)

    def step(joint: np.ndarray):
        obs, rew, term, trunc, infos = env.step(dict(zip(agents, joint, strict=True)))
        return (np.stack([obs[a] for a in agents]), same(rew), same(term), same(trunc),
                same(infos))

    return reset, step


def gym_player(env: PhysicalGymEnv):
    """Return reset(seed) and step(joint action) of the Gymnasium env in the team's arrays."""
    n = env.team.n

    def reset(seed: int):
        obs, info = env.reset(seed=seed)
        return obs.reshape(n, -1), info

    def step(joint: np.ndarray):
        obs, *rest = env.step(joint.ravel())
        return (obs.reshape(n, -1), *rest)

    return reset, step


def replays_the_suite(task: str, seed: int, players: list, embodiment: str = "cobot") -> None:
    """Feed the suite rollout's executed actions to each player; assert the same
    observations and phases at every step, the phases rewarded at the steps the trajectory
    has them, and the same last step and success."""
    tr, rec = suite_rollout(task, seed, embodiment)
    phase_steps = [e.t for e in tr.events if e.type == "physical_phase"]
    assert len(rec.executed) == tr.end.t
    for reset, step in players:
        obs, info = reset(seed)
        rewarded, end = [], (False, False)
        for k, action in enumerate(rec.executed):
            assert not any(end), (task, k)
            assert obs.dtype == np.float32
            np.testing.assert_array_equal(obs, rec.obs[k], err_msg=f"{task} step {k}")
            assert (info["phase"], info["steps"]) == (rec.phase[k], k)
            obs, reward, *end, info = step(action)
            rewarded += [info["steps"]] * int(reward)
        terminated, truncated = end
        assert info["steps"] == tr.end.t and info["success"] == tr.end.success
        assert terminated == tr.end.success and truncated == (not tr.end.success)
        assert rewarded == phase_steps


@pytest.mark.parametrize("task", list(TASKS))
def test_both_wrappers_replay_the_suite_step_for_step(task):
    replays_the_suite(task, 1, [parallel_player(PhysicalParallelEnv(task)),
                                gym_player(PhysicalGymEnv(task))])


@needs_g1
def test_both_wrappers_replay_a_g1_rollout_step_for_step(g1_model):
    replays_the_suite("CoCarry", 1, [
        parallel_player(PhysicalParallelEnv("CoCarry", "g1", g1_model)),
        gym_player(gym.make(PHYSICAL, task="CoCarry", embodiment="g1",
                            g1_model=g1_model).unwrapped)], embodiment="g1")


@pytest.mark.parametrize("make", [
    lambda **kw: PhysicalParallelEnv(**kw),
    lambda **kw: gym.make(PHYSICAL, **kw),
], ids=["pettingzoo", "gymnasium"])
def test_bad_arguments_are_one_line_config_errors(make):
    cases = [
        ({"task": "Juggling"}, ["'Juggling'", "Handover", "BigTable"]),
        ({"task": "CoCarry", "embodiment": "spot"}, ["'spot'", "cobot, g1"]),
        # no G1 model is read before the task is checked: this needs no model files
        ({"task": "Pouring", "embodiment": "g1"}, ["Pouring has no G1 version yet",
                                                   ", ".join(G1_TASKS)]),
        # (gym.make itself renders "human" through rgb_array, and warns of other modes)
        ({"task": "CoCarry", "render_mode": "ansi"}, ["'ansi'", "rgb_array"]),
    ]
    for kwargs, words in cases:
        with pytest.raises(ConfigError) as e, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(**kwargs)
        line = str(e.value)
        assert "\n" not in line and all(w in line for w in words), (kwargs, line)


def test_bad_actions_and_steps_outside_an_episode_are_action_errors():
    env = PhysicalParallelEnv("CoCarry")
    with pytest.raises(ActionError, match="reset"):
        env.step({})
    env.reset(seed=1)
    zero = np.zeros(KINDS["cobot"].action_dim)
    with pytest.raises(ActionError, match="no action for robot1"):
        env.step({"robot0": zero})
    with pytest.raises(ActionError, match="robot1: an action must have shape"):
        env.step({"robot0": zero, "robot1": zero[:3]})
    with pytest.raises(ActionError, match="NaN"):
        env.step({"robot0": zero, "robot1": zero * np.nan})
    one = PhysicalGymEnv("CoCarry")
    one.reset(seed=1)
    with pytest.raises(ActionError, match=r"shape \(18,\)"):
        one.step(zero)
    # a team that stands still reaches the step limit: truncated, then over
    for _ in range(one.sim.task.limit):
        _, reward, term, trunc, info = one.step(np.zeros(18))
        if term or trunc:
            break
    assert trunc and not term and info == {"phase": 0, "success": False,
                                           "steps": one.sim.task.limit}
    with pytest.raises(ActionError, match="reset"):
        one.step(np.zeros(18))


def test_the_documented_example_runs_as_written():
    text = (ROOT / "docs" / "physical.md").read_text()
    section = text.split("## Standard APIs", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    scope: dict = {}
    exec(compile(code, "docs/physical.md", "exec"), scope)
    assert scope["ret"] == 3.0
    assert scope["infos"]["robot0"] == {"phase": 3, "success": True, "steps": 367}
    assert scope["obs"].shape == (74,)
