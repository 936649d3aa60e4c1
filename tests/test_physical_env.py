"""Physical suite engine: tasks compile, experts solve them, phases latch, states restore
exactly, frames render headless, bad actions are one-line errors."""

import numpy as np
import pytest

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.envs.physical.env import JACOBIANS, PhysicalEnv
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import TASKS, get_task
from coordbench.errors import ActionError, ConfigError
from coordbench.suites.physical.episode import run


@pytest.mark.parametrize("name", sorted(TASKS))
def test_nominal_expert_completes_every_phase_in_order(name):
    trs, _ = run(name, ExpertPolicy(0.0), [1, 2])
    for tr in trs:
        phases = [e for e in tr.events if e.type == "physical_phase"]
        assert [e.phase for e in phases] == [1, 2, 3]
        assert phases[0].t < phases[1].t < phases[2].t and tr.end.success


def test_phases_need_the_partner():
    """A robot that never closes its gripper: nobody lifts the basket together (p1 never)."""
    task = get_task("CoCarry")
    env = PhysicalEnv(task)
    env.reset(3)
    rng = np.random.default_rng(0)
    team = [task.expert(env, i, rng, 0.0) for i in range(2)]
    for _ in range(400):
        acts = np.stack([ex.act(env.sense(i), CONTROL_DT) for i, ex in enumerate(team)])
        acts[1, 8] = 0.0  # robot 1 never grips
        env.step(acts)
    assert env.phase == 0 and not env.holds()[1]


def test_state_restore_is_bit_identical():
    task = get_task("CoCarry")
    env = PhysicalEnv(task)
    env.reset(5)
    pol = ExpertPolicy(1.0)
    pol.reset([env])
    for _ in range(150):
        env.step(pol.act([env])[0])
    saved, step, phase = env.get_state(), env.steps, env.phase
    actions = []
    for _ in range(60):
        a = pol.act([env])[0]
        actions.append(a)
        env.step(a)
    final = env.get_state()
    env.set_state(saved, step, phase)
    for a in actions:
        env.step(a)
    assert np.array_equal(env.get_state(), final)


def test_egocentric_frames_render_headless():
    env = PhysicalEnv(get_task("BigTable"))
    env.reset(1)
    try:
        frames = [env.render_ego(i, 64, 48) for i in range(3)]
    finally:
        env.close()
    assert all(f.shape == (48, 64, 3) and f.dtype == np.uint8 for f in frames)
    assert all(f.std() > 5 for f in frames)  # not a blank image


def test_bad_input_is_a_one_line_error():
    env = PhysicalEnv(get_task("CoCarry"))
    env.reset(1)
    with pytest.raises(ActionError, match=r"shape \(2, 9\)"):
        env.step(np.zeros((3, 9)))
    with pytest.raises(ActionError, match="NaN"):
        env.step(np.full((2, 9), np.nan))
    with pytest.raises(ConfigError, match="unknown physical task 'Juggle'"):
        get_task("Juggle")


def test_a_partner_letting_go_mid_carry_is_a_drop_but_a_handover_is_not():
    from coordbench.suites.physical.episode import CouplingMonitor

    task = get_task("CoCarry")
    env = PhysicalEnv(task)
    env.reset(4)
    pol = ExpertPolicy(0.0)
    pol.reset([env])
    mon = CouplingMonitor(2)
    carried = 0
    while env.steps < 600:
        a = pol.act([env])[0]
        if env.phase >= 1:
            carried += 1
            if carried > 50:
                a[1, 8] = 0.0  # robot 1 opens its hand while the basket is up
        env.step(a)
        mon.update(env)
    drops = [e for e in mon.events if e.kind == "drop"]
    assert len(drops) == 1 and drops[0].robots == [1]
    trs, _ = run("Handover", ExpertPolicy(0.0), [1, 2])
    assert all(e.kind != "drop" for t in trs for e in t.events if e.type == "physical_event")


@pytest.mark.parametrize("task", list(TASKS))
def test_rollouts_do_not_depend_on_their_lockstep_batch(task):
    # every task keeps per-episode state; rollouts stepped together must not share it
    together, _ = run(task, ExpertPolicy(1.0), [1, 2], budget=500)
    alone, _ = run(task, ExpertPolicy(1.0), [2], budget=500)
    assert together[1].events == alone[0].events


def test_touch_sensing_and_collisions_match_the_contact_list():
    # the geom-pair lookups against the definition, contact by contact: along perturbed
    # expert rollouts (grasps, slips, releases), then with the robots driven forward, arms
    # out, into each other (MoveHouse's robots meet within a few steps)
    held_steps = bumped_steps = 0
    for task in ("Handover", "MoveHouse"):
        env = PhysicalEnv(get_task(task))
        m = env.model
        policy = ExpertPolicy(1.0, perturb=2.0)
        env.reset(3)
        policy.reset([env])
        forward = np.zeros((env.n, 9))
        forward[:, 0] = 0.6
        for k in range(500):
            env.step(policy.act([env])[0] if k < 300 else forward)
            touch = np.zeros((env.n, 2), dtype=bool)
            collisions = 0
            for c in env.data.contact[:env.data.ncon].geom:
                for mine, other in ((c[0], c[1]), (c[1], c[0])):
                    for i in range(env.n):
                        for f in range(2):
                            if mine == env.fingers[i, f] and other in env.grasp_geoms[i]:
                                touch[i, f] = True
                a, b = (next((i for i in range(env.n)
                              if m.body(m.geom_bodyid[g]).name.startswith(f"r{i}_")), None)
                        for g in c)
                collisions += a is not None and b is not None and a != b
            assert env.holds().tolist() == touch.all(axis=1).tolist()
            assert env.robot_contacts() == collisions
            held_steps += int(touch.all(axis=1).any())
            bumped_steps += collisions > 0
    # the check saw grasps and collisions, not only empty contact lists
    assert held_steps > 20 and bumped_steps > 20, (held_steps, bumped_steps)


@pytest.mark.parametrize("name", ["Pouring", "CoPouring"])
def test_a_sparse_jacobian_is_the_same_physics_to_rounding(name):
    """A sparse constraint Jacobian (Pouring's, for speed) follows the dense build's
    trajectory over the first second of the nominal expert, to well under a millimetre: the
    choice changes the order of sums, not the model."""
    import copy

    assert get_task("Pouring").jacobian == "sparse"
    task = get_task(name)
    states = []
    for jac in ("sparse", "dense"):
        variant = copy.copy(task)
        variant.jacobian = jac
        env = PhysicalEnv(variant)
        assert env.model.opt.jacobian == JACOBIANS[jac]
        env.reset(4)
        rng = np.random.default_rng(0)
        team = [task.expert(env, i, rng, 0.0) for i in range(task.n_robots)]
        for _ in range(50):
            env.step(np.stack([p.act(env.sense(i), CONTROL_DT) for i, p in enumerate(team)]))
        states.append(env.data.qpos.copy())
    assert 0 < np.abs(states[0] - states[1]).max() < 1e-4


def test_an_unstable_simulation_ends_the_episode_and_says_so(tmp_path, monkeypatch):
    """MuJoCo resets a state whose accelerations are not finite: the episode must not go on
    from the reset state as if nothing happened (and no MUJOCO_LOG.TXT lands in the user's
    folder)."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run

    class Saboteur(ExpertPolicy):
        def act(self, envs):
            for env in envs:
                if env.steps == 5:
                    env.data.qvel[:] = 1e30  # what a blown-up solver leaves behind
            return super().act(envs)

    monkeypatch.chdir(tmp_path)
    (traj,), _ = run("Handover", Saboteur(0.0), [1], poses=False)
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    end = traj.end
    assert end.termination == "normal_stop" and not end.success and end.t == 6
    assert end.detail.startswith("simulation unstable at step 6")
    (ok,), _ = run("Handover", ExpertPolicy(0.0), [1], poses=False)
    assert ok.end.success  # a stable episode is untouched
