"""Physical tasks: every expert picks up mid-task from its own sensing, and each task's
criteria demand what makes it collaborative."""

import numpy as np
import pytest

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import TASKS, get_task


def _phase_start_states(name: str, seed: int) -> dict[int, tuple[np.ndarray, int]]:
    """Run the noisy expert; return {k: (state, step)} at the start of phases 1, 2 and 3."""
    env = PhysicalEnv(get_task(name))
    env.reset(seed)
    pol = ExpertPolicy(1.0)
    pol.reset([env])
    starts = {1: (env.get_state(), 0)}
    while not env.done:
        env.step(pol.act([env])[0])
        if env.phase in (1, 2) and env.phase + 1 not in starts:
            starts[env.phase + 1] = (env.get_state(), env.steps)
    assert env.phase == 3
    return starts


@pytest.mark.parametrize("name", sorted(TASKS))
def test_experts_resume_mid_task_from_their_own_sensing(name):
    """Phase-level evaluation restores a state at a phase's start: the experts must infer
    their stage from what they sense and finish the task."""
    for k, (state, step) in _phase_start_states(name, 3).items():
        env = PhysicalEnv(get_task(name))
        env.reset(3)
        env.set_state(state, step, k - 1)
        pol = ExpertPolicy(1.0)
        pol.reset([env], resume=True)
        while not env.done:
            env.step(pol.act([env])[0])
        assert env.phase == 3, f"{name} from phase {k}"


def _team(task, env, noise=0.0):
    rng = np.random.default_rng(0)
    return [task.expert(env, i, rng, noise) for i in range(env.n)]


def test_pouring_needs_the_partner_to_hold_the_beaker():
    task = get_task("Pouring")
    env = PhysicalEnv(task)
    env.reset(2)
    team = _team(task, env)
    for _ in range(600):
        acts = np.stack([ex.act(env.sense(i), CONTROL_DT) for i, ex in enumerate(team)])
        acts[1, 8] = 0.0  # robot 1 never closes its hand on the beaker
        env.step(acts)
    assert env.phase == 0 and not task.marble_in_beaker(env)
    assert team[0].stage == "wait"  # the mug stays up until the beaker is held out


def test_table_align_counts_only_a_square_placement():
    """Carried to the right spot without the turn: lifted and carried, never aligned."""
    task = get_task("TableAlign")
    env = PhysicalEnv(task)
    env.reset(1)
    team = _team(task, env)
    while not env.done:
        acts = []
        for i, ex in enumerate(team):
            s = env.sense(i)
            s.goal_yaw = None  # this team ignores the instruction to turn the table
            acts.append(ex.act(s, CONTROL_DT))
        env.step(np.stack(acts))
    assert env.phase == 2 and all(ex.stage == "retreat" for ex in team)


def test_move_house_carriers_wait_for_the_door():
    task = get_task("MoveHouse")
    env = PhysicalEnv(task)
    env.reset(1)
    team = _team(task, env)
    for _ in range(700):
        acts = np.stack([ex.act(env.sense(i), CONTROL_DT) for i, ex in enumerate(team)])
        acts[0, 8] = 0.0  # the opener never takes the door's handle
        env.step(acts)
    table = env.data.xpos[env.obj]
    assert env.phase == 0 and table[0] < -2.5 and table[2] - env.obj_z0 > 0.1
    assert [ex.stage for ex in team[1:]] == ["carry", "carry"]  # lifted, waiting


def test_frame_hang_threading_is_geometric():
    task = get_task("FrameHang")
    env = PhysicalEnv(task)
    env.reset(5)
    assert not task.threaded(env)
    pol = ExpertPolicy(0.0)
    pol.reset([env])
    while not env.done:
        env.step(pol.act([env])[0])
    assert env.phase == 3 and task.threaded(env) and not env.holds().any()
