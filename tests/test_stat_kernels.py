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
            assert reward[b] == sum(out["rewards"])  # bit for bit: added in agent order
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


def _pow_edges(count: int, low: float, high: float) -> list[float]:
    """Return ratios r in [low, high] whose step under the released formula,
    sqrt(1 / (r**2 + 1)) with Python's pow, differs from the x*x version by an ULP."""
    import math
    import random

    rng = random.Random(0)
    out = []
    while len(out) < count:
        r = rng.uniform(low, high)
        if math.sqrt(1.0 / (r**2 + 1)) != math.sqrt(1.0 / (r * r + 1)):
            out.append(r)
    return out


@pytest.mark.parametrize("threaded", [False, True])
def test_movement_is_bit_exact_where_pow_and_x_times_x_differ(threaded, monkeypatch):
    """A task at (r, 1) seen from the origin: the ratio dx/dy is exactly r, chosen where
    pow(r, 2) and r*r give different steps; SELECT then MOVE must land where the reference
    (Python's **, the C library's pow) lands, to the last bit."""
    monkeypatch.setattr(vec_module, "PARALLEL_ROWS", 1 if threaded else 10**9)
    cfg = get_config("3A-6T-5x3", episode_limit=50)
    edges = _pow_edges(8, 1.5, 4.5)
    layouts = np.zeros((len(edges), cfg.tasks, 2))
    for b, r in enumerate(edges):
        layouts[b, :, 0] = np.linspace(0.5, 4.5, cfg.tasks)
        layouts[b, :, 1] = 2.5
        layouts[b, 0] = (r, 1.0)
    vec = StatVecEnv(cfg, len(edges), auto_reset=False)
    vec.reset(layouts)
    refs = [ReferenceStatEnv(cfg) for _ in edges]
    for b, ref in enumerate(refs):
        ref.reset(layouts[b])
    for actions in ([SELECT0, 0, 0], [1, 0, 0]):  # select task 0 (one step), then move
        joint = np.array([actions] * len(edges))
        _, _, reward, info = vec.step(joint)
        for b, ref in enumerate(refs):
            out = ref.step(actions)
            assert tuple(vec.state.pos[b, 0]) == ref.pos[0], (b, edges[b])
            assert reward[b] == sum(out["rewards"])


def _ulps(x: float, k: int) -> float:
    """Return the double k steps from x (toward +inf for k > 0)."""
    import math

    for _ in range(abs(k)):
        x = math.nextafter(x, math.inf if k > 0 else 0.0)
    return x


def _straddles(count: int, edges: list[float], decide, seed: int) -> list[tuple]:
    """Return `count` offsets (edge, dx, dy) near a distance edge where deciding with the
    release's squares (Python's `**`, pow) and with x*x disagree: decide(s) -> a value."""
    import math
    import random

    rng = random.Random(seed)
    out = []
    while len(out) < count:
        edge = rng.choice(edges)
        th = rng.uniform(0.05, 1.5)
        dx, dy = edge * math.cos(th), edge * math.sin(th)
        for k in range(-8, 9):
            y = _ulps(dy, k)
            if decide(dx**2 + y**2) != decide(dx * dx + y * y):
                out.append((edge, dx, y))
                break
    return out


@pytest.mark.parametrize("threaded", [False, True])
def test_bins_follow_the_release_squares_where_pow_and_x_times_x_straddle_an_edge(
        threaded, monkeypatch):
    """An agent at the origin and a task at a distance within an ULP of a bin edge (0.5, 1,
    k*w), where pow's squares put it on one side and x*x's on the other: the bin is the
    release's (the reference computes with `**`). Such distances occur in play: an agent
    walking away from the task it completed stands at whole distances from it."""
    import math

    monkeypatch.setattr(vec_module, "PARALLEL_ROWS", 1 if threaded else 10**9)
    cfg = get_config("5A-25T-50x30")
    w = cfg.width / cfg.num_bins

    def bin_of(s: float) -> int:
        d = math.sqrt(s)
        return 0 if d < 0.5 else 1 if d < 1.0 else min(int(d // w), cfg.num_bins - 1)

    cases = _straddles(24, [0.5, 1.0, w, 2 * w, 3 * w], bin_of, seed=0)
    assert {c[0] for c in cases} >= {0.5, 1.0}
    layouts = np.full((len(cases), cfg.tasks, 2), 25.0)
    for b, (_, dx, dy) in enumerate(cases):
        layouts[b, 0] = (dx, dy)
    vec = StatVecEnv(cfg, len(cases), auto_reset=False)
    obs, _ = vec.reset(layouts)
    for b in range(len(cases)):
        ref = ReferenceStatEnv(cfg)
        ref.reset(layouts[b])
        assert obs[b].tolist() == ref.observation(), cases[b]


@pytest.mark.parametrize("threaded", [False, True])
def test_arrival_and_conflicts_follow_the_release_squares(threaded, monkeypatch):
    """The arrival radius (masks: MOVE or EXECUTE) and a conflict between two pickers at
    distances within an ULP of each other, where pow's squares and x*x's decide differently:
    the masks and the winner are the release's."""
    import math

    monkeypatch.setattr(vec_module, "PARALLEL_ROWS", 1 if threaded else 10**9)
    cfg = get_config("3A-6T-10x6", episode_limit=50)
    # arrival: agent 0 at the origin committed to task 0, at an offset straddling 0.5
    arrive = _straddles(8, [0.5], lambda s: math.sqrt(s) < 0.5, seed=1)
    vec = StatVecEnv(cfg, len(arrive), auto_reset=False)
    layouts = np.tile(np.linspace(1.0, 9.0, cfg.tasks)[None, :, None], (len(arrive), 1, 2))
    for b, (_, dx, dy) in enumerate(arrive):
        layouts[b, 0] = (dx, dy)
    vec.reset(layouts)
    refs = []
    for b in range(len(arrive)):
        vec.state.target[b, 0] = 0
        vec.state.selected[b, 0] = True
        vec.state.mode[b, 0] = 1
        ref = ReferenceStatEnv(cfg)
        ref.reset(layouts[b])
        ref.target[0], ref.selected[0], ref.mode[0] = 0, True, 1
        refs.append(ref)
    _, masks = vec._observe(vec._all)
    for b, ref in enumerate(refs):
        assert np.flatnonzero(masks[b, 0]).tolist() == ref.valid_actions(0), arrive[b]
        dx, dy = arrive[b][1:]
        assert (math.sqrt(dx * dx + dy * dy) < 0.5) != ref.at_target(0)  # x*x would differ

    # conflict: agent 0 at the origin and agent 1 both pick task 0, at distances within an
    # ULP of each other that pow's squares and x*x's order differently
    def pair(seed: int) -> tuple[tuple[float, float], tuple[float, float]]:
        import random

        rng = random.Random(seed)
        while True:
            d = rng.uniform(1.5, 4.0)
            a, c = rng.uniform(0.1, 1.4), rng.uniform(0.1, 1.4)
            task = (d * math.cos(a), d * math.sin(a))
            for k in range(-8, 9):
                p1 = (task[0] - d * math.cos(c), _ulps(task[1] - d * math.sin(c), k))
                o1 = (task[0] - p1[0], task[1] - p1[1])  # what the kernels subtract
                pw = math.sqrt(o1[0]**2 + o1[1]**2) < math.sqrt(task[0]**2 + task[1]**2)
                mul = (math.sqrt(o1[0] * o1[0] + o1[1] * o1[1])
                       < math.sqrt(task[0] * task[0] + task[1] * task[1]))
                if pw != mul:  # (agent 1 may stand off the plane: the rules do not care)
                    return task, p1

    for seed in range(4):
        task, p1 = pair(seed)
        lay = np.tile(np.linspace(0.5, 9.5, cfg.tasks)[:, None], (1, 2))[None]
        lay[0, 0] = task
        vec = StatVecEnv(cfg, 1, auto_reset=False)
        vec.reset(lay)
        ref = ReferenceStatEnv(cfg)
        ref.reset(lay[0])
        vec.state.pos[0, 1] = p1
        ref.pos[1] = p1
        vec._observe(vec._all)
        joint = [SELECT0, SELECT0, 0]
        _, _, reward, info = vec.step(np.array([joint]))
        out = ref.step(joint)
        assert info.final_actions[0].tolist() == out["final_actions"], seed
        assert reward[0] == sum(out["rewards"])


def test_team_reward_adds_in_agent_order():
    """Nine agents: numpy's pairwise sum and the release's left-to-right sum can differ by an
    ULP; the team reward is the release's."""
    cfg = get_config("9A-25T-50x30", episode_limit=700)
    batch = 16
    rng = np.random.default_rng(3)
    vec = StatVecEnv(cfg, batch, auto_reset=False)
    vec.reset(make_layouts(cfg, "paper", 0, list(range(batch))))
    differs = 0
    for _ in range(200):
        if not vec.active.any():
            break
        active = vec.active.copy()
        _, _, reward, info = vec.step(vec.random_valid_actions(rng))
        for b in np.flatnonzero(active):
            ordered = 0.0
            for r in info.agent_rewards[b].tolist():
                ordered += r
            assert reward[b] == ordered
            differs += ordered != float(info.agent_rewards[b].sum())
    assert differs > 0  # the case the fix is for occurs on this config


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


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("name,num_bins", [("3A-6T-5x3", None), ("5A-25T-50x30", None),
                                           ("3A-12T-10x6", None), ("3A-6T-10x6", 7),
                                           ("5A-25T-50x30", 7)])
def test_distance_bins_are_exact_at_bin_edges(name, num_bins, threaded, monkeypatch):
    """Tasks on the x axis seen from the origin lie at distance exactly x (sqrt(x*x) == x),
    so x can sit on a bin edge k*w, one ULP either side, where d * (1/w) and d / w floor
    differently, or (7 bins: widths 10/7 and 50/7) where d / w rounds up to a whole number
    that the exact quotient stays below; the kernel's bins must equal Python's
    `min(d // w, top)` (the reference)."""
    import dataclasses
    import math
    import random

    monkeypatch.setattr(vec_module, "PARALLEL_ROWS", 1 if threaded else 10**9)
    cfg = get_config(name)
    if num_bins is not None:
        cfg = dataclasses.replace(cfg, num_bins=num_bins)
    w = cfg.width / cfg.num_bins
    edges = [0.5, 1.0] + [k * w for k in range(1, cfg.num_bins + 1)]
    xs = [v for e in edges for v in (math.nextafter(e, 0.0), e, math.nextafter(e, math.inf))]
    rng = random.Random(1)
    while len(xs) < 400:  # quotients where multiplying by the inverse floors differently
        x = rng.uniform(1.0, cfg.width - 1e-9)
        if math.floor(x * (1.0 / w)) != x // w or rng.random() < 0.02:
            xs.append(x)
    for k in range(1, cfg.num_bins):  # quotients that round up to a whole number
        for toward in (0.0, math.inf):
            x = k * w
            for _ in range(64):
                if (x / w).is_integer() and x // w < x / w:
                    xs.append(x)
                x = math.nextafter(x, toward)
    xs = [x for x in xs if 0.0 < x < cfg.width]
    if num_bins is None and not math.log2(w).is_integer():  # such quotients exist and are here
        assert any(math.floor(x * (1.0 / w)) != x // w for x in xs)
    if num_bins == 7:
        assert any((x / w).is_integer() and x // w < x / w for x in xs)
    batch = -(-len(xs) // cfg.tasks)
    layouts = np.full((batch, cfg.tasks, 2), 0.25)
    layouts[:, :, 1] = 0.0
    layouts.reshape(-1, 2)[:len(xs), 0] = xs
    vec = StatVecEnv(cfg, batch, auto_reset=False)
    obs, _ = vec.reset(layouts)
    for b in range(batch):
        ref = ReferenceStatEnv(cfg)
        ref.reset(layouts[b])
        assert obs[b].tolist() == ref.observation(), b


def test_cached_kernels_run_in_a_new_process(tmp_path):
    """The kernels are cached on disk (cache=True); a second process loads them instead of
    compiling. Code that cannot survive that (numba's get_thread_id did: the reloaded kernel
    crashed) must fail here, not on a user's second run."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from coordbench.envs.stat.config import get_config\n"
        "from coordbench.envs.stat.vec import StatVecEnv\n"
        "env = StatVecEnv(get_config('3A-6T-5x3'), 2, auto_reset=False)\n"
        "env.reset()\n"
        "rng = np.random.default_rng(0)\n"
        "while env.active.any():\n"
        "    env.step(env.random_valid_actions(rng))\n"
        "print(int(env.state.n_done.sum()))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout == "12\n"  # both episodes complete every task
    assert any(tmp_path.rglob("*.nbi"))  # the second process had a cache to load


def test_strided_actions_step_like_contiguous_ones():
    """Actions may be any integer view (a strided slice, Fortran order); the env steps them as
    the same values, through the one compiled kernel signature."""
    from coordbench.envs.stat import kernels

    cfg = get_config("3A-6T-5x3")
    layouts = make_layouts(cfg, "paper", 0, [0, 1, 2, 3])
    envs = [StatVecEnv(cfg, 4, auto_reset=False) for _ in range(2)]
    for e in envs:
        e.reset(layouts)
    rng = np.random.default_rng(5)
    while envs[0].active.any():
        acts = envs[0].random_valid_actions(rng)
        wide = np.zeros((4, 2 * cfg.agents), dtype=np.int32)
        wide[:, ::2] = acts
        _, _, r0, _ = envs[0].step(acts)
        _, _, r1, _ = envs[1].step(np.asfortranarray(wide[:, ::2]))
        np.testing.assert_array_equal(r0, r1)
        np.testing.assert_array_equal(envs[0].state.pos, envs[1].state.pos)
    assert len(kernels.step_kernel.signatures) == 1


def test_filtered_square_is_python_pow_including_where_x_times_x_is_not():
    """_pow2 (x*x unless fma says the square is near a midpoint, then pow) returns Python's
    x**2 on every input, over magnitudes the movement formula's ratio takes; the sample holds
    thousands of inputs where x*x alone would differ, so a filter too loose fails here."""
    from numba import njit

    from coordbench.envs.stat.kernels import TWO, _pow2

    @njit
    def squares(xs, two):
        out = np.empty_like(xs)
        for k in range(xs.shape[0]):
            out[k] = _pow2(xs[k], two)
        return out

    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.random(200_000) * 10, rng.standard_normal(200_000) * 100,
                         np.exp(rng.uniform(-60, 60, 200_000)), [0.0, -0.0, 1.0, 2.0, 0.5]])
    expected = np.array([x**2 for x in xs.tolist()])
    assert int((xs * xs != expected).sum()) > 100  # x*x alone differs here
    assert np.array_equal(squares(xs, TWO), expected)
