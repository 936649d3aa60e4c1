"""One STAT environment over the vectorized core: shared plumbing of the standard-API wrappers."""

from __future__ import annotations

import numpy as np

from .config import StatConfig, get_config
from .layouts import LayoutStream
from .vec import StatVecEnv


class SingleStat:
    """Batch-1 view of `StatVecEnv`; `reset(seed)` reproduces the released env's `reset(seed=s)`.

    With `layouts="paper"`, reset(seed=s) gives the layout of `random.seed(s)`; later resets
    without a seed walk on to s+1, s+2, ... With `layouts="uniform"`, a seed restarts the env's
    own generator.
    """

    def __init__(self, config: str | StatConfig, layouts: str = "uniform", seed: int = 0,
                 episode_limit: int | None = None) -> None:
        cfg = get_config(config, episode_limit) if isinstance(config, str) else config
        self.cfg = cfg
        self.layouts = layouts
        self.vec = StatVecEnv(cfg, 1, layouts=layouts, seed=seed, auto_reset=False)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start an episode; return (obs (D,), masks (n, 3+m))."""
        if seed is not None:
            self.vec.stream = LayoutStream(self.cfg, self.layouts, seed)
        obs, masks = self.vec.reset()
        return obs[0].copy(), masks[0].copy()

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, float, bool, bool, dict]:
        """Apply a joint action (n ints); return (obs, masks, team reward, term, trunc, info)."""
        obs, masks, reward, info = self.vec.step(np.asarray(actions).reshape(1, -1))
        diag = {
            "agent_rewards": info.agent_rewards[0].copy(),
            "final_actions": info.final_actions[0].copy(),
            "num_conflicts": int(info.conflicts[0]),
            "forced_idle": int(info.forced_idle[0]),
            "unique_tasks_assigned": int(info.unique_assigned[0]),
            "decision_active_pre": int(info.decision_pre[0]),
            "decision_active_post": int(info.decision_post[0]),
            "tasks_completed": int(self.vec.state.n_done[0]),
            "t": int(self.vec.state.t[0]),
        }
        return (obs[0].copy(), masks[0].copy(), float(reward[0]), bool(info.terminated[0]),
                bool(info.truncated[0]), diag)
