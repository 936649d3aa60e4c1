"""Throughput of the vectorized STAT core under random valid actions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numba
import numpy as np

from coordbench.envs.stat.config import StatConfig
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.errors import ConfigError


@dataclass(frozen=True)
class SpeedResult:
    """Joint environment steps per second (one joint step = all n agents of one env).

    `steps_per_s` counts the whole loop (drawing random valid actions, then stepping);
    `step_only_per_s` counts only the time inside `StatVecEnv.step()` (the step, masks,
    observations and auto-resets), the definition of the released environment's step-only rate.
    """

    config: str
    batch: int
    seconds: float
    steps: int
    episodes: int
    steps_per_s: float
    with_obs: bool
    threads: int
    step_only_per_s: float


# the paper steps 4096 environments; far more only exhausts memory before measuring
MAX_BATCH = 65_536

def measure_speed(cfg: StatConfig, batch: int, seconds: float, *, with_obs: bool = True,
                  seed: int = 0, threads: int | None = None) -> SpeedResult:
    """Return the steps/s of sampling random valid actions and stepping `batch` envs, and of
    the stepping alone.

    Each timed iteration draws actions from the masks' valid sets, steps every env (auto-reset
    on episode end), and rebuilds masks and, if `with_obs`, the observation vectors (on
    `threads` threads, default all of numba's). Compilation and a short warm-up happen before
    the clock starts.
    """
    threads = numba.config.NUMBA_NUM_THREADS if threads is None else threads
    with numba_threads(threads):
        return _measure(cfg, batch, seconds, with_obs, seed, threads)


@contextmanager
def numba_threads(threads: int) -> Iterator[None]:
    """Run the body on `threads` of numba's threads, then restore the previous count
    (ConfigError if out of range). Yields nothing."""
    if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
        raise ConfigError(f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {threads}")
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def _measure(cfg: StatConfig, batch: int, seconds: float, with_obs: bool, seed: int,
             threads: int) -> SpeedResult:
    env = StatVecEnv(cfg, batch, seed=seed, compute_obs=with_obs)
    rng = np.random.default_rng(seed)
    env.reset()
    for _ in range(3):  # compile and warm caches outside the timed region
        env.step(env.random_valid_actions(rng))
    steps = episodes = 0
    in_step = 0.0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        actions = env.random_valid_actions(rng)
        t0 = time.perf_counter()
        _, _, _, info = env.step(actions)
        now = time.perf_counter()
        in_step += now - t0
        steps += batch
        episodes += int((info.terminated | info.truncated).sum())
        if now >= deadline:
            break
    elapsed = now - start
    return SpeedResult(cfg.name, batch, elapsed, steps, episodes, steps / elapsed, with_obs,
                       threads, steps / in_step)


@dataclass(frozen=True)
class StepSections:
    """Where the time of one `StatVecEnv.step()` goes, in nanoseconds per environment step.

    `masks_ns`: rebuilding the action masks alone; `observation_ns`: the observation vectors on
    top of the masks; `rest_ns`: the rest of step() (the dynamics, conflict resolution,
    rewards, auto-resets and the Python around the kernel); `step_ns`: all of step().
    """

    config: str
    batch: int
    threads: int
    step_ns: float
    masks_ns: float
    observation_ns: float
    rest_ns: float


def measure_sections(cfg: StatConfig, batch: int, seconds: float, *, seed: int = 0,
                     threads: int = 1) -> StepSections:
    """Return the per-section cost of step() (see StepSections) under random valid play.

    Each iteration, at the state random play has reached, times the fused kernel refreshing
    masks only, then masks and observations (neither changes the state), then the whole
    step(); sections are differences of those medians, all taken on the same states.
    """
    with numba_threads(threads):
        env = StatVecEnv(cfg, batch, seed=seed)
        rng = np.random.default_rng(seed)
        env.reset()
        every = env._all
        masks_t, observe_t, step_t = [], [], []
        deadline = time.perf_counter() + seconds
        for k in range(1_000_000):  # bounded; the deadline ends it first
            actions = env.random_valid_actions(rng)
            env.compute_obs = False
            t0 = time.perf_counter()
            env._observe(every)
            env.compute_obs = True
            t1 = time.perf_counter()
            env._observe(every)
            t2 = time.perf_counter()
            env.step(actions)
            t3 = time.perf_counter()
            if k >= 3:  # the first calls compile and warm caches
                masks_t.append(t1 - t0)
                observe_t.append(t2 - t1)
                step_t.append(t3 - t2)
            if t3 >= deadline and k >= 13:
                break
    per_env = 1e9 / batch
    masks, observe, step = (float(np.median(x)) * per_env for x in (masks_t, observe_t, step_t))
    return StepSections(cfg.name, batch, threads, step, masks, observe - masks, step - observe)
