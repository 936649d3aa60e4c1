"""Scripted STAT allocators: the reference points learned methods are judged against.

Every policy maps the state of a `StatVecEnv` to (B, n) joint actions. Agents with a committed
task follow their mask (MOVE, then EXECUTE); agents with nothing left to pick IDLE. Only the
*decision agents* (no task, at least one selectable task) choose, and the policies differ in how:

- `random`: each decision agent picks uniformly among selectable tasks (conflicts happen).
- `greedy`: decision agents in index order each take the nearest selectable task not already
  claimed this step by a lower-index agent.
- `matching`: global greedy matching: repeatedly commit the closest (agent, task) pair.
- `hungarian`: per-step minimum-total-distance assignment (scipy `linear_sum_assignment`).
- `greedy_obs`: `greedy` on what the learners see: the observation's distance bins instead
  of distances (ties between equal bins broken uniformly at random). It shows how much of
  the gap to `hungarian` the paper's observation allows a simple rule to close.
- `hungarian_obs`: `hungarian` on the bins: the per-step assignment with the fewest bins in
  total (ties at random), the best a one-step allocator can do with the paper's observation.
- `nearest_obs`: every decision agent takes a selectable task in its own lowest bin (ties at
  random) without knowing what the others pick this step: `greedy_obs` decentralized, as a
  learned policy that samples each agent's action on its own must act.
- `greedy_mem`, `nearest_mem`: `greedy_obs` and `nearest_obs` with a memory of the
  observation (envs/stat/memory.py): within an agent's lowest bin, the task whose
  remembered bins to the executed tasks disagree least with the agent's own (ties at
  random). What the paper's observation allows a policy with memory, not only one step.
  The memory is the team's (rows any teammate saw); `nearest_mem` agents share it but still
  decide without the others' picks of the step.

When decision agents outnumber selectable tasks, the mask still forces the unmatched ones to
pick; they take their nearest selectable task, and the environment's conflict rule (closest
wins) settles it. Distances are Euclidean from the agent's current position.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit
from scipy.optimize import linear_sum_assignment

from coordbench.envs.stat import kernels
from coordbench.envs.stat.config import SELECT0
from coordbench.envs.stat.memory import memory_of
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.errors import ConfigError


@njit(cache=True)
def _nearest(pos, task_pos, free_mask, claimed, b, i):
    """Return the nearest selectable task of agent i not in `claimed` (-1 if none)."""
    best = -1
    best_d = np.inf
    for j in range(task_pos.shape[1]):
        if not free_mask[b, j] or claimed[j]:
            continue
        d = math.sqrt((task_pos[b, j, 0] - pos[b, i, 0]) ** 2
                      + (task_pos[b, j, 1] - pos[b, i, 1]) ** 2)
        if d < best_d:
            best_d = d
            best = j
    return best


@njit(cache=True)
def _greedy_kernel(pos, task_pos, free_mask, out):
    B, n = out.shape
    m = task_pos.shape[1]
    none = np.zeros(m, dtype=np.bool_)
    for b in range(B):
        claimed = np.zeros(m, dtype=np.bool_)
        for i in range(n):
            if out[b, i] != -1:
                continue
            j = _nearest(pos, task_pos, free_mask, claimed, b, i)
            if j < 0:
                j = _nearest(pos, task_pos, free_mask, none, b, i)
            claimed[j] = True
            out[b, i] = SELECT0 + j


@njit(cache=True)
def _matching_kernel(pos, task_pos, free_mask, out):
    B, n = out.shape
    m = task_pos.shape[1]
    none = np.zeros(m, dtype=np.bool_)
    for b in range(B):
        claimed = np.zeros(m, dtype=np.bool_)
        while True:
            best_i, best_j, best_d = -1, -1, np.inf
            for i in range(n):
                if out[b, i] != -1:
                    continue
                for j in range(m):
                    if not free_mask[b, j] or claimed[j]:
                        continue
                    d = math.sqrt((task_pos[b, j, 0] - pos[b, i, 0]) ** 2
                                  + (task_pos[b, j, 1] - pos[b, i, 1]) ** 2)
                    if d < best_d:
                        best_i, best_j, best_d = i, j, d
            if best_i < 0:
                break
            claimed[best_j] = True
            out[b, best_i] = SELECT0 + best_j
        for i in range(n):  # more deciders than tasks: the rest take their nearest
            if out[b, i] == -1:
                out[b, i] = SELECT0 + _nearest(pos, task_pos, free_mask, none, b, i)


@njit(cache=True)
def _greedy_bins_kernel(bins, free_mask, u, out, claims):
    """Decision agents in index order take the selectable task in their lowest distance bin
    not claimed by a lower-index agent this step (any selectable task if all are claimed),
    choosing among equal bins by the uniform draw u[b, i]. With `claims` False no agent sees
    the others' picks: each takes a selectable task in its lowest bin."""
    B, n = out.shape
    m = free_mask.shape[1]
    for b in range(B):
        claimed = np.zeros(m, dtype=np.bool_)
        for i in range(n):
            if out[b, i] != -1:
                continue
            for allow_claimed in (False, True):
                low, count = np.inf, 0
                for j in range(m):
                    if free_mask[b, j] and (allow_claimed or not claimed[j]):
                        if bins[b, i * m + j] < low:
                            low, count = bins[b, i * m + j], 1
                        elif bins[b, i * m + j] == low:
                            count += 1
                if count:
                    break
            pick = min(int(u[b, i] * count), count - 1)
            for j in range(m):
                if free_mask[b, j] and (allow_claimed or not claimed[j]) \
                        and bins[b, i * m + j] == low:
                    if pick == 0:
                        claimed[j] = claims
                        out[b, i] = SELECT0 + j
                        break
                    pick -= 1


def _forced(env: StatVecEnv) -> tuple[np.ndarray, np.ndarray]:
    s = env.state
    out = np.empty((env.batch, env.cfg.agents), dtype=np.int64)
    free = np.empty((env.batch, env.cfg.tasks), dtype=np.bool_)
    kernels.forced_actions_kernel(s.pos, s.target, s.task_pos, s.completed, s.selected, out, free,
                                  kernels.TWO)
    return out, free


def random_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return uniformly random valid actions for every agent."""
    return env.random_valid_actions(rng)


def greedy_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return sequential nearest-unclaimed-task actions (agents in index order)."""
    out, free = _forced(env)
    _greedy_kernel(env.state.pos, env.state.task_pos, free, out)
    return out


def matching_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return global greedy matching actions (closest agent-task pair first)."""
    out, free = _forced(env)
    _matching_kernel(env.state.pos, env.state.task_pos, free, out)
    return out


def _assign_min_cost(out: np.ndarray, free: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Fill the decision agents' entries of `out` (-1) with the assignment of selectable tasks
    of least total cost[b, i, j] (scipy `linear_sum_assignment`), env by env; return `out`.

    With more deciders than tasks the unmatched ones take their cheapest task (which agents go
    unmatched is the assignment's choice, not the joint minimum with them included)."""
    for b in np.flatnonzero((out == -1).any(axis=1)):
        agents = np.flatnonzero(out[b] == -1)
        tasks = np.flatnonzero(free[b])
        c = cost[b][np.ix_(agents, tasks)]
        rows, cols = linear_sum_assignment(c)
        out[b, agents[rows]] = SELECT0 + tasks[cols]
        for r in np.setdiff1d(np.arange(len(agents)), rows):  # unmatched: cheapest task
            out[b, agents[r]] = SELECT0 + tasks[int(np.argmin(c[r]))]
    return out


def hungarian_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return per-step min-total-distance assignment of decision agents to selectable tasks."""
    out, free = _forced(env)
    s = env.state
    diff = s.pos[:, :, None, :] - s.task_pos[:, None, :, :]
    return _assign_min_cost(out, free, np.sqrt((diff**2).sum(axis=-1)))


def _obs_bins(env: StatVecEnv, name: str) -> np.ndarray:
    """Return the observation's distance bins (B, n, m), or raise ConfigError if the
    environment does not build observations."""
    if not env.compute_obs:
        raise ConfigError(f"{name} reads the observation: the environment must build it")
    n, m = env.cfg.agents, env.cfg.tasks
    return env.obs[:, :n * m].reshape(-1, n, m)


def greedy_obs_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return `greedy` on the observation's distance bins (random among equal bins)."""
    _obs_bins(env, "greedy_obs")
    out, free = _forced(env)
    _greedy_bins_kernel(env.obs, free, rng.random(out.shape), out, True)
    return out


def nearest_obs_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return each decision agent's pick of a selectable task in its lowest distance bin
    (random among equal bins), made without the other agents' picks."""
    _obs_bins(env, "nearest_obs")
    out, free = _forced(env)
    _greedy_bins_kernel(env.obs, free, rng.random(out.shape), out, False)
    return out


def hungarian_obs_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return the per-step assignment of decision agents to selectable tasks with the fewest
    distance bins in total (random among equal totals; unmatched agents: a lowest-bin task)."""
    bins = _obs_bins(env, "hungarian_obs")
    out, free = _forced(env)
    # a uniform jitter below 1 / (n + 1) per entry orders equal totals at random and never
    # unequal ones: bins are whole numbers, and an assignment sums at most n jitters
    return _assign_min_cost(out, free, bins + rng.random(bins.shape) / (env.cfg.agents + 1))


def _memory_order(env: StatVecEnv, name: str) -> np.ndarray:
    """Return (B, n*m) scores that order tasks by bin, then within a bin by the memory's
    disagreement share (below 1, so never across bins)."""
    n, m = env.cfg.agents, env.cfg.tasks
    _obs_bins(env, name)
    feats = memory_of(env).features(env.obs, env.state.target)
    return env.obs[:, :n * m] + 0.999 * feats[:, :n * m]


def greedy_mem_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return `greedy_obs` ordering each bin's tasks by the observation memory."""
    score = _memory_order(env, "greedy_mem")
    out, free = _forced(env)
    _greedy_bins_kernel(score, free, rng.random(out.shape), out, True)
    return out


def nearest_mem_policy(env: StatVecEnv, rng: np.random.Generator) -> np.ndarray:
    """Return `nearest_obs` ordering each bin's tasks by the observation memory (each
    decision agent on its own)."""
    score = _memory_order(env, "nearest_mem")
    out, free = _forced(env)
    _greedy_bins_kernel(score, free, rng.random(out.shape), out, False)
    return out


for _policy in (greedy_obs_policy, nearest_obs_policy, hungarian_obs_policy,
                greedy_mem_policy, nearest_mem_policy):
    _policy.reads_obs = True  # type: ignore[attr-defined]

StatPolicy = Callable[[StatVecEnv, np.random.Generator], np.ndarray]

POLICIES: dict[str, StatPolicy] = {
    "random": random_policy,
    "greedy": greedy_policy,
    "matching": matching_policy,
    "hungarian": hungarian_policy,
    "greedy_obs": greedy_obs_policy,
    "hungarian_obs": hungarian_obs_policy,
    "nearest_obs": nearest_obs_policy,
    "greedy_mem": greedy_mem_policy,
    "nearest_mem": nearest_mem_policy,
}


def is_checkpoint(name: str) -> bool:
    """Return True if `name` refers to a learned-policy checkpoint file rather than a
    scripted allocator."""
    return name.endswith(".pt")


def get_policy(name: str) -> StatPolicy:
    """Return the scripted policy called `name` (or the greedy policy of a learner's
    checkpoint file `*.pt`), or raise ConfigError naming the choices."""
    if is_checkpoint(name):
        from coordbench.learn.methods import checkpoint_policy

        return checkpoint_policy(name)
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(
            f"unknown STAT policy {name!r}; choose from {', '.join(POLICIES)} "
            f"or a learned checkpoint file (*.pt)") from None

