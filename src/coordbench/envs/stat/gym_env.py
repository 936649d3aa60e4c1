"""STAT as one Gymnasium environment with a joint (MultiDiscrete) action.

Observation: `{"obs": float32 (n*m + n + 2m,), "agent_masks": int8 (n, 3 + m)}`, as in the
released Gymnasium wrapper; reward: the team reward. Registered as `coordbench/STAT-v0`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .config import StatConfig
from .single import SingleStat


class StatGymEnv(gym.Env):
    """A single STAT environment for Gymnasium."""

    metadata = {"render_modes": []}

    def __init__(self, config: str | StatConfig = "3A-6T-5x3", layouts: str = "uniform",
                 seed: int = 0, episode_limit: int | None = None) -> None:
        self._env = SingleStat(config, layouts, seed, episode_limit)
        cfg = self.cfg = self._env.cfg
        high = float(max(cfg.num_bins - 1, 2))
        self.observation_space = spaces.Dict({
            "obs": spaces.Box(0.0, high, (cfg.obs_dim,), np.float32),
            "agent_masks": spaces.Box(0, 1, (cfg.agents, cfg.num_actions), np.int8),
        })
        self.action_space = spaces.MultiDiscrete([cfg.num_actions] * cfg.agents)

    def _obs(self, obs: np.ndarray, masks: np.ndarray) -> dict[str, np.ndarray]:
        return {"obs": obs, "agent_masks": masks.astype(np.int8)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; return (observation, info)."""
        super().reset(seed=seed)
        obs, masks = self._env.reset(seed)
        return self._obs(obs, masks), {}

    def step(self, action):
        """Apply the joint action; return (observation, reward, terminated, truncated, info)."""
        obs, masks, reward, term, trunc, info = self._env.step(np.asarray(action, dtype=np.int64))
        return self._obs(obs, masks), reward, term, trunc, info

