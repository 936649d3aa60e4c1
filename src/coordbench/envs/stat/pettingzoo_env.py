"""STAT as a PettingZoo ParallelEnv (passes `pettingzoo.test.parallel_api_test`).

Each agent observes the global state and its own action mask:
`{"observation": float32 (n*m + n + 2m,), "action_mask": int8 (3 + m,)}`. The reward is
cooperative: every agent receives the team reward (the sum of per-agent rewards, which are in
`infos[agent]["agent_reward"]`).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from coordbench.errors import ActionError

from .config import StatConfig
from .single import SingleStat


class StatParallelEnv(ParallelEnv):
    """STAT for PettingZoo's parallel API."""

    metadata = {"name": "coordbench_stat_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, config: str | StatConfig = "3A-6T-5x3", layouts: str = "uniform",
                 seed: int = 0, episode_limit: int | None = None) -> None:
        self._env = SingleStat(config, layouts, seed, episode_limit)
        self.cfg = self._env.cfg
        self.possible_agents = [f"agent_{i}" for i in range(self.cfg.agents)]
        self.agents: list[str] = []
        self.render_mode = None
        high = float(max(self.cfg.num_bins - 1, 2))
        self._obs_space = spaces.Dict({
            "observation": spaces.Box(0.0, high, (self.cfg.obs_dim,), np.float32),
            "action_mask": spaces.Box(0, 1, (self.cfg.num_actions,), np.int8),
        })
        self._act_space = spaces.Discrete(self.cfg.num_actions)

    def observation_space(self, agent: str) -> spaces.Dict:
        """Return the Dict space of one agent's observation and action mask."""
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """Return Discrete(3 + m): 0 idle, 1 move, 2 execute, 3+j select task j."""
        return self._act_space

    def _obs(self, obs: np.ndarray, masks: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        return {a: {"observation": obs, "action_mask": masks[i].astype(np.int8)}
                for i, a in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode; return (observations, infos) keyed by agent."""
        obs, masks = self._env.reset(seed)
        self.agents = list(self.possible_agents)
        return self._obs(obs, masks), {a: {} for a in self.agents}

    def step(self, actions: dict[str, int]):
        """Apply every agent's action; return obs, rewards, terminations, truncations, infos."""
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ActionError(f"no action for {', '.join(missing)}")
        joint = [int(actions[a]) for a in self.possible_agents]
        obs, masks, reward, term, trunc, diag = self._env.step(joint)
        agents = self.agents
        observations = self._obs(obs, masks)
        rewards = {a: reward for a in agents}
        terminations = {a: term for a in agents}
        truncations = {a: trunc for a in agents}
        shared = {k: v for k, v in diag.items() if k not in ("agent_rewards", "final_actions")}
        infos = {a: {"agent_reward": float(diag["agent_rewards"][i]),
                     "final_action": int(diag["final_actions"][i]), **shared}
                 for i, a in enumerate(self.possible_agents) if a in agents}
        if term or trunc:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """Return the global state vector (the same for every agent)."""
        return self._env.vec.obs[0].copy()
