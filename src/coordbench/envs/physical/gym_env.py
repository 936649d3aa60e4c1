"""A physical task as one Gymnasium environment: the team as one agent. Registered as
`coordbench/Physical-v0` (`gymnasium.make("coordbench/Physical-v0", task=..., embodiment=...)`).

Observation: every robot's state observation (`PhysicalEnv.local_obs`) concatenated, robot 0
first: float32 (n * obs_dim,). Action: every robot's action concatenated, robot 0 first:
(n * action_dim,). Reward, termination, truncation and info are the PettingZoo wrapper's
(`pettingzoo_env.PhysicalTeam`): +1 per phase completed in the step, terminated when all three
are done, truncated at the task's step limit or an unstable simulation.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from coordbench.errors import ActionError

from .pettingzoo_env import RENDER_FPS, RENDER_MODES, PhysicalTeam


class PhysicalGymEnv(gym.Env):
    """A physical task's team as one Gymnasium agent (see the module docstring).
    `render_mode="rgb_array"` renders the robots' egocentric views side by side."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    def __init__(self, task: str, embodiment: str = "cobot", g1_model: str | Path | None = None,
                 render_mode: str | None = None) -> None:
        self.team = PhysicalTeam(task, embodiment, g1_model, render_mode)
        self.sim = self.team.sim
        self.render_mode = render_mode
        n = self.team.n
        self.observation_space = spaces.Box(-np.inf, np.inf, (n * self.team.obs_dim,),
                                            np.float32)
        self.action_space = spaces.Box(np.tile(self.team.action_low, n),
                                       np.tile(self.team.action_high, n), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[np.ndarray, dict]:
        """Start an episode (a seed: the suite's layout for it; none: a seed drawn from
        `np_random`); return (observation, info)."""
        super().reset(seed=seed)
        obs, info = self.team.reset(seed, self.np_random)
        return obs.ravel(), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply the team's action; return (observation, reward, terminated, truncated,
        info)."""
        a = np.asarray(action, dtype=float)
        if a.shape != self.action_space.shape:
            raise ActionError(f"the action must have shape {self.action_space.shape}, "
                              f"got {a.shape}")
        obs, reward, term, trunc, info = self.team.step(a.reshape(self.team.n, -1))
        return obs.ravel(), reward, term, trunc, info

    def render(self) -> np.ndarray | None:
        """Return the robots' egocentric frames side by side (rgb_array), else None."""
        return self.team.render()

    def close(self) -> None:
        """Release the renderer."""
        self.team.close()
