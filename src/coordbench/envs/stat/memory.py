"""What a STAT agent can remember of the paper's observation (the labelled `+mem` option).

The observation has no positions: each agent sees only its distance bin to every task, and on
5A-100T-50x30 a bin 10 units wide holds about 20 tasks, so a one-step policy cannot tell the
nearest of them from the farthest (the rules that read one observation close 85% of the
random -> Hungarian gap there). Its history can: while an agent executes task v it stands
within 0.5 of v, so its row of bins is task v's own view of every task, `rows[v, :]`.
Remembering those rows, an agent at p with a choice compares, for each candidate task l,
its own bins to the remembered tasks with l's bins to them: where p and l are close the two
agree on almost every remembered task, and the share that disagree grows with |p - l|.

`ObservationMemory` keeps the remembered rows of a batch of environments and turns them into
one number per (agent, task), that share of disagreements (0 for agents with a committed
task), plus the share of tasks remembered. It reads only the observation and the agents'
picks (which task an executing agent is at: its own SELECT, which PyMARL's agents get back
as their last action, and the teammates' picks, which a team deciding in index order sees
as they are made), never positions. It is one memory per team, not per agent: every agent
reads the rows any teammate saw. A row is forgotten when its environment's step counter is
0 again (a new episode), so one memory serves evaluation and auto-resetting training alike;
`update` is idempotent, so several readers of the same step can share it.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from coordbench.envs.stat.config import StatConfig

EXECUTING = 2.0  # the observation's mode code for an agent executing its task


@njit(cache=True)
def _record(obs, target, t, n, m, known, rows):
    for b in range(obs.shape[0]):
        if t[b] == 0:  # a new episode: nothing of the last one applies
            known[b, :] = False
        for i in range(n):
            v = target[b, i]
            if v >= 0 and obs[b, n * m + i] == EXECUTING and not known[b, v]:
                known[b, v] = True
                for j in range(m):
                    rows[b, v, j] = obs[b, i * m + j]


@njit(cache=True)
def _disagreement(obs, target, n, m, known, rows, out):
    for b in range(obs.shape[0]):
        count = 0
        for v in range(m):
            count += known[b, v]
        out[b, n * m] = count / m
        scale = 1.0 / max(count, 1)
        for i in range(n):
            base = i * m
            for j in range(m):
                out[b, base + j] = 0.0
            if target[b, i] >= 0:  # committed: its action is forced, nothing to compare
                continue
            for v in range(m):
                if known[b, v]:
                    mine = obs[b, base + v]
                    for j in range(m):
                        out[b, base + j] += rows[b, v, j] != mine
            for j in range(m):
                out[b, base + j] *= scale


def width(cfg: StatConfig) -> int:
    """Return how many numbers the memory adds to an observation row: n*m + 1."""
    return cfg.agents * cfg.tasks + 1


class ObservationMemory:
    """The rows of bins seen from every executed task's location, for a batch of envs."""

    def __init__(self, cfg: StatConfig, batch: int) -> None:
        self.n, self.m = cfg.agents, cfg.tasks
        self.known = np.zeros((batch, self.m), dtype=np.bool_)
        # bins are whole numbers below 1000 (MAX_BINS): int16 keeps B*m*m small
        self.rows = np.zeros((batch, self.m, self.m), dtype=np.int16)
        self.out = np.zeros((batch, width(cfg)), dtype=np.float32)

    def update(self, obs: np.ndarray, target: np.ndarray, t: np.ndarray) -> None:
        """Remember the rows of agents executing their pick (forget envs with t == 0)."""
        _record(obs, target, t, self.n, self.m, self.known, self.rows)

    def features(self, obs: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Return (B, n*m + 1) float32: per (agent i, task j) the share of remembered tasks
        on which i's bin and j's remembered bin differ (0 where i has a committed task),
        then the share of tasks remembered. The array is reused by the next call."""
        _disagreement(obs, target, self.n, self.m, self.known, self.rows, self.out)
        return self.out

    def final_rows(self, obs_rows: np.ndarray, idx: np.ndarray,
                   committed: np.ndarray) -> np.ndarray:
        """Return last observations `obs_rows` of the envs `idx` (just ended, before the next
        `update` forgets them) with their memory features appended; `committed` (len(idx), n)
        says which agents held a pick (their features are 0, as in every other row)."""
        out = np.zeros((len(idx), self.out.shape[1]), dtype=np.float32)
        # the features only ask whether an agent holds a pick, not which
        held = np.where(committed, 0, -1).astype(np.int64)
        _disagreement(obs_rows, held, self.n, self.m, self.known[idx], self.rows[idx], out)
        return np.concatenate([obs_rows, out], axis=1)

    def augment(self, obs: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Return `obs` with the memory features appended, (B, obs_dim + n*m + 1) float32
        (a new array)."""
        return np.concatenate([obs, self.features(obs, target)], axis=1)

    def observe(self, env) -> np.ndarray:
        """Update from a StatVecEnv's current step; return `augment` of its observation."""
        s = env.state
        self.update(env.obs, s.target, s.t)
        return self.augment(env.obs, s.target)


_MEMORIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def memory_of(env) -> ObservationMemory:
    """Return the memory kept for `env` (a StatVecEnv), updated with its current step; one
    per environment object, made on first use."""
    mem = _MEMORIES.get(env)
    if mem is None or mem.known.shape[0] != env.batch:
        mem = _MEMORIES[env] = ObservationMemory(env.cfg, env.batch)
    mem.update(env.obs, env.state.target, env.state.t)
    return mem
