"""The numba kernels agree step for step with the plain-Python reference, on and off the mask."""

import numpy as np
import pytest

from coordbench.envs.stat import vec as vec_module
from coordbench.envs.stat.config import SELECT0, get_config
from coordbench.envs.stat.layouts import make_layouts
from coordbench.envs.stat.reference import ReferenceStatEnv
from coordbench.envs.stat.vec import StatVecEnv


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("name,p_off,limit", [
    ("3A-6T-5x3", 0.0, 700),
    ("3A-6T-5x3", 0.3, 60),
    ("5A-12T-10x6", 0.15, 120),
    ("9A-25T-50x30", 0.05, 700),
])
def test_kernels_match_reference(name, p_off, limit, threaded, monkeypatch):
    # the threaded kernels run from PARALLEL_ROWS rows on; force them for a small batch
    monkeypatch.setattr(vec_module, "PARALLEL_ROWS", 1 if threaded else 10**9)
    cfg = get_config(name, episode_limit=limit)
    batch = 6
    rng = np.random.default_rng(7)
    layouts = make_layouts(cfg, "paper", 0, list(range(batch)))
    vec = StatVecEnv(cfg, batch, auto_reset=False)
    obs, masks = vec.reset(layouts)
    refs = [ReferenceStatEnv(cfg) for _ in range(batch)]
    for b, r in enumerate(refs):
        r.reset(layouts[b])
    steps = 0
    while vec.active.any():
        active = vec.active.copy()
        actions = vec.random_valid_actions(rng)
        off = rng.random(actions.shape) < p_off
        actions[off] = rng.integers(0, cfg.num_actions, off.sum())
        for b in np.flatnonzero(active):
            ref = refs[b]
            assert obs[b].tolist() == ref.observation()
            valid = [np.flatnonzero(masks[b, i]).tolist() for i in range(cfg.agents)]
            assert valid == [ref.valid_actions(i) for i in range(cfg.agents)]
        obs, masks, reward, info = vec.step(actions)
        for b in np.flatnonzero(active):
            out = refs[b].step(actions[b].tolist())
            assert info.final_actions[b].tolist() == out["final_actions"]
            assert info.agent_rewards[b].tolist() == out["rewards"]
            assert reward[b] == pytest.approx(sum(out["rewards"]))
            assert info.conflicts[b] == out["conflicts"]
            assert info.forced_idle[b] == out["forced_idle"]
            assert info.unique_assigned[b] == out["unique_assigned"]
            assert info.decision_pre[b] == out["decision_pre"]
            assert info.decision_post[b] == out["decision_post"]
            assert info.completed_task[b].tolist() == out["completed_task"]
            assert bool(info.terminated[b]) == out["terminated"]
            assert bool(info.truncated[b]) == out["truncated"]
            np.testing.assert_array_equal(vec.state.pos[b], np.array(refs[b].pos))
        steps += 1
    assert steps > 5


def test_inactive_envs_are_frozen():
    cfg = get_config("3A-6T-5x3")
    vec = StatVecEnv(cfg, 2, auto_reset=False)
    vec.reset(make_layouts(cfg, "paper", 0, [0, 1]))
    vec.active[1] = False
    before = vec.state.copy()
    _, _, reward, _ = vec.step(np.full((2, 3), SELECT0, dtype=np.int64))
    assert reward[1] == 0.0
    np.testing.assert_array_equal(vec.state.pos[1], before.pos[1])
    assert vec.state.t[1] == 0 and vec.state.t[0] == 1


def test_auto_reset_keeps_final_obs_and_starts_new_layout():
    cfg = get_config("3A-6T-5x3")
    vec = StatVecEnv(cfg, 4, layouts="uniform", seed=3)
    vec.reset()
    rng = np.random.default_rng(0)
    done_seen = 0
    for _ in range(40):
        layouts_before = vec.state.task_pos.copy()
        _, _, _, info = vec.step(vec.random_valid_actions(rng))
        for b, final in info.final_obs.items():
            done_seen += 1
            assert final[-2 * cfg.tasks:-cfg.tasks].sum() == cfg.tasks  # all completed
            assert vec.state.t[b] == 0
            assert not np.array_equal(vec.state.task_pos[b], layouts_before[b])
    assert done_seen >= 4
