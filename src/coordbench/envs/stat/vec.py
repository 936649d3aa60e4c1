"""The vectorized STAT core: B environments stepped at once as arrays.

`StatVecEnv` owns the state arrays and calls the numba kernels in `kernels.py`. One code path
serves batch 1 (evaluation, the PettingZoo and Gymnasium wrappers) and batch 4096 (learning).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from coordbench.errors import ActionError, ConfigError

from . import kernels
from .config import EXECUTE_STEPS, StatConfig
from .layouts import LayoutStream

# At or above this many rows the kernels split work over numba's threads (numba.set_num_threads
# sets how many); below it, thread dispatch costs more than it saves.
PARALLEL_ROWS = 512


@dataclass
class StatState:
    """The full state of B STAT environments as arrays (batch first)."""

    pos: np.ndarray  # (B, n, 2) agent positions
    target: np.ndarray  # (B, n) committed task, -1 for none
    mode: np.ndarray  # (B, n) 0 idle, 1 moving, 2 executing
    counter: np.ndarray  # (B, n) execute counter (3 at rest, 2 on arrival, 0 on the paying step)
    task_pos: np.ndarray  # (B, m, 2)
    completed: np.ndarray  # (B, m) bool
    selected: np.ndarray  # (B, m) bool; stays set after completion
    assignee: np.ndarray  # (B, m) last agent to select the task, -1 for none
    t: np.ndarray  # (B,) steps taken
    n_done: np.ndarray  # (B,) tasks completed

    @classmethod
    def zeros(cls, cfg: StatConfig, batch: int) -> StatState:
        """Return the state of `batch` environments with every task at (0, 0) (call reset next)."""
        n, m = cfg.agents, cfg.tasks
        return cls(
            pos=np.zeros((batch, n, 2)),
            target=np.full((batch, n), -1, dtype=np.int64),
            mode=np.zeros((batch, n), dtype=np.int64),
            counter=np.full((batch, n), EXECUTE_STEPS, dtype=np.int64),
            task_pos=np.zeros((batch, m, 2)),
            completed=np.zeros((batch, m), dtype=np.bool_),
            selected=np.zeros((batch, m), dtype=np.bool_),
            assignee=np.full((batch, m), -1, dtype=np.int64),
            t=np.zeros(batch, dtype=np.int64),
            n_done=np.zeros(batch, dtype=np.int64),
        )

    def copy(self) -> StatState:
        """Return a deep copy (the kernels update state in place)."""
        return StatState(**{k: v.copy() for k, v in self.__dict__.items()})


class FinalRows(Mapping):
    """Rows kept for the environments that just ended, as a read-only mapping env -> row.

    One stacked copy (`index`: the envs in ascending order, `rows[k]`: env index[k]'s row),
    so that a batch step with hundreds of auto-resets copies once, not once per env."""

    def __init__(self, index: np.ndarray | None = None, rows: np.ndarray | None = None) -> None:
        self.index = np.zeros(0, dtype=np.int64) if index is None else index
        self.rows = rows
        self._at: dict[int, int] | None = None  # env -> k, built on first lookup

    def _positions(self) -> dict[int, int]:
        if self._at is None:
            self._at = {b: k for k, b in enumerate(self.index.tolist())}
        return self._at

    def __getitem__(self, b: int) -> np.ndarray:
        k = self._positions().get(int(b))
        if k is None or self.rows is None:
            raise KeyError(b)
        return self.rows[k]

    def __iter__(self) -> Iterator[int]:
        return iter(self.index.tolist())

    def __len__(self) -> int:
        return len(self.index)


@dataclass
class StepInfo:
    """Per-step outputs of a batch step; arrays are reused between steps (copy to keep them)."""

    final_actions: np.ndarray  # (B, n) actions after conflict resolution
    agent_rewards: np.ndarray  # (B, n)
    conflicts: np.ndarray  # (B,) tasks picked by more than one agent, before resolution
    forced_idle: np.ndarray  # (B,) picks replaced by IDLE
    unique_assigned: np.ndarray  # (B,) distinct tasks among the final picks
    decision_pre: np.ndarray  # (B,) agents with > 1 valid action before the step
    decision_post: np.ndarray  # (B,) the same after the step
    completed_task: np.ndarray  # (B, n) task completed by each agent this step, or -1
    terminated: np.ndarray  # (B,) every task completed
    truncated: np.ndarray  # (B,) episode limit reached first
    final_obs: FinalRows = field(default_factory=FinalRows)  # auto-reset envs' last obs
    final_masks: FinalRows = field(default_factory=FinalRows)  # ... and last masks

    @classmethod
    def empty(cls, batch: int, n: int) -> StepInfo:
        """Return zeroed output buffers for a batch of `batch` envs with `n` agents."""
        i64 = np.int64
        return cls(
            final_actions=np.zeros((batch, n), dtype=i64),
            agent_rewards=np.zeros((batch, n)),
            conflicts=np.zeros(batch, dtype=i64),
            forced_idle=np.zeros(batch, dtype=i64),
            unique_assigned=np.zeros(batch, dtype=i64),
            decision_pre=np.zeros(batch, dtype=i64),
            decision_post=np.zeros(batch, dtype=i64),
            completed_task=np.full((batch, n), -1, dtype=i64),
            terminated=np.zeros(batch, dtype=np.bool_),
            truncated=np.zeros(batch, dtype=np.bool_),
        )


class StatVecEnv:
    """B STAT environments stepped together.

    With `auto_reset=True` (learning), an environment that terminates or truncates is reset at
    once with the next layout from its `LayoutStream`, and its last observation is kept in
    `info.final_obs`. With `auto_reset=False` (evaluation), finished environments stay frozen
    and are skipped by the kernels; `active` says which are still running.
    """

    def __init__(self, cfg: StatConfig, batch: int, *, layouts: str = "uniform", seed: int = 0,
                 auto_reset: bool = True, compute_obs: bool = True) -> None:
        if not isinstance(batch, int | np.integer) or batch < 1:
            raise ConfigError(f"batch size must be a positive integer, got {batch!r}")
        self.cfg = cfg
        self.batch = int(batch)
        self.auto_reset = auto_reset
        self.compute_obs = compute_obs
        self.stream = LayoutStream(cfg, layouts, seed)
        self.state = StatState.zeros(cfg, self.batch)
        self.active = np.ones(self.batch, dtype=np.bool_)
        self.info = StepInfo.empty(self.batch, cfg.agents)
        self._team_reward = np.zeros(self.batch)
        # the release's squares are pow(x, 2.0); passed at run time so that numba cannot fold
        # them into x*x (kernels._sq_release)
        self._two = kernels.TWO
        self.masks = np.zeros((self.batch, cfg.agents, cfg.num_actions), dtype=np.bool_)
        self.obs = np.zeros((self.batch, cfg.obs_dim), dtype=np.float32)
        self._bin_w = cfg.width / cfg.num_bins
        self._top_bin = float(cfg.num_bins - 1)
        self._all = np.arange(self.batch, dtype=np.int64)

    # -- state access -------------------------------------------------------------------------
    def reset(self, task_pos: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Reset every environment (to `task_pos` (B, m, 2) if given); return (obs, masks)."""
        if task_pos is None:
            task_pos = self.stream.draw(self.batch)
        task_pos = np.asarray(task_pos, dtype=np.float64)
        expect = (self.batch, self.cfg.tasks, 2)
        if task_pos.shape != expect:
            raise ConfigError(f"task positions must have shape {expect}, got {task_pos.shape}")
        self._reset_envs(self._all, task_pos)
        self.active[:] = True
        return self._observe(self._all)

    def _reset_envs(self, idx: np.ndarray, task_pos: np.ndarray) -> None:
        s = self.state
        kernels.reset_kernel(idx.astype(np.int64), task_pos, s.pos, s.target, s.mode, s.counter,
                             s.task_pos, s.completed, s.selected, s.assignee, s.t, s.n_done)

    def _observe(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Refresh masks (and observations) of envs `idx`; return the full arrays."""
        # not stepping, the kernel reads no actions; any int64 (B, n) array keeps its signature
        self._run_kernel(idx, stepping=False, actions=self.info.final_actions)
        return self.obs, self.masks

    def _run_kernel(self, idx: np.ndarray, stepping: bool, actions: np.ndarray) -> None:
        """Step (if `stepping`) and re-observe envs `idx` with the fused kernel."""
        s, info = self.state, self.info
        kernel = (kernels.step_kernel_parallel if len(idx) >= PARALLEL_ROWS
                  else kernels.step_kernel)
        kernel(
            idx, stepping, s.pos, s.target, s.mode, s.counter, s.task_pos, s.completed,
            s.selected, s.assignee, s.t, s.n_done, self.active, actions, self.cfg.episode_limit,
            info.final_actions, info.agent_rewards, info.conflicts, info.forced_idle,
            info.unique_assigned, info.decision_pre, info.decision_post, info.completed_task,
            info.terminated, info.truncated, self._team_reward, self._two,
            self.masks, self.compute_obs, self._bin_w, self._top_bin, self.obs)

    # -- stepping -----------------------------------------------------------------------------
    def check_actions(self, actions: np.ndarray) -> np.ndarray:
        """Return `actions` as a C-contiguous int64 (B, n) array, or raise ActionError if out of
        range."""
        a = np.asarray(actions)
        shape = (self.batch, self.cfg.agents)
        if a.shape != shape:
            raise ActionError(f"actions must have shape {shape}, got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ActionError(f"actions must be integers, got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= self.cfg.num_actions):
            bad = int(a.max()) if a.max() >= self.cfg.num_actions else int(a.min())
            raise ActionError(
                f"action index {bad} out of range: valid indices are 0..{self.cfg.num_actions - 1} "
                f"(0 idle, 1 move, 2 execute, 3+j select task j)")
        # one memory layout, so the kernel has one compiled (and cached) signature
        return np.ascontiguousarray(a, dtype=np.int64)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, StepInfo]:
        """Apply one joint action per environment; return (obs, masks, team_reward, info).

        Off-mask actions with valid indices are applied and penalised as the released code does;
        indices outside 0..3+m-1 raise ActionError. Inactive environments are left unchanged
        and get reward 0.
        """
        a = self.check_actions(actions)
        info = self.info
        self._run_kernel(self._all, stepping=True, actions=a)
        reward = self._team_reward.copy()
        done = (info.terminated | info.truncated) & self.active
        info.final_obs = info.final_masks = FinalRows()
        obs, masks = self.obs, self.masks
        if done.any():
            idx = np.flatnonzero(done)
            if self.auto_reset:
                info.final_masks = FinalRows(idx, masks[idx])
                if self.compute_obs:
                    info.final_obs = FinalRows(idx, obs[idx])
                self._reset_envs(idx, self.stream.draw(len(idx)))
                obs, masks = self._observe(idx)
            else:
                self.active[idx] = False
        return obs, masks, reward, info

    def random_valid_actions(self, rng: np.random.Generator) -> np.ndarray:
        """Return (B, n) actions drawn uniformly from each agent's valid set."""
        out = np.zeros((self.batch, self.cfg.agents), dtype=np.int64)
        s = self.state
        kernels.random_valid_kernel(s.pos, s.target, s.task_pos, s.completed, s.selected,
                                    rng.random((self.batch, self.cfg.agents)), out, self._two)
        return out



def steps(env: StatVecEnv, act: Callable[[StatVecEnv], np.ndarray]) -> Iterator[
        tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, StepInfo]]:
    """Step `env` (auto_reset off) until every episode has ended; yield after each step
    (was_active, t, actions, team_reward, info): which rows were running, their step index
    before the step, the actions `act(env)` chose, and what happened.

    Evaluation with trajectories and the learners' fast evaluation both run on this loop, so
    "an evaluation episode" is defined once.
    """
    while env.active.any():
        was_active = env.active.copy()
        t = env.state.t.copy()
        actions = act(env)
        _, _, reward, info = env.step(actions)
        yield was_active, t, actions, reward, info


class PerEnvRng:
    """One independent random stream per environment of a batch (duck-types Generator.random)."""

    def __init__(self, seeds: list[np.random.SeedSequence]) -> None:
        self.gens = [np.random.default_rng(s) for s in seeds]

    def random(self, shape: tuple[int, ...]) -> np.ndarray:
        """Return uniforms of `shape` (B, ...) with row b drawn from environment b's stream."""
        return np.stack([g.random(shape[1:]) for g in self.gens])
