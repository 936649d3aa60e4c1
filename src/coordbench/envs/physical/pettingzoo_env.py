"""The physical suite as a PettingZoo ParallelEnv (passes `pettingzoo.test.parallel_api_test`),
and `PhysicalTeam`, the stepping, reward and episode end that it and the Gymnasium wrapper
(`gym_env.py`) share.

One agent per robot, named as the suite's trajectories name them: `robot0`, `robot1`, ...
Agent i observes row i of `PhysicalEnv.local_obs()` (float32, width `env.obs_dim`: its
proprioception, then the object, its grasp point, its goal, its touch flag, the time, the
object's and the goal's heading and the task's extra bodies, all in its own frame) and sends
one robot's action (`embodiment.KINDS[embodiment].action_dim` floats; a value outside the
bounds is clipped, as the suite's environment clips it).

Dynamics and scoring are the suite's, step for step: the same environment, reset from the
same seed, stepped by the same actions (`suites/physical/episode.py:run`). The reward is the
team's, every agent getting the same: +1 for each phase of the task's three latched phases
completed in the step, so an episode's return is the number of phases done (0-3). An episode
terminates when all three are done and is truncated at the task's step limit (`task.limit`)
or when the simulation became unstable (`env.unstable_at`). Every agent's info has `phase`
(phases done), `success` (all three done) and `steps` (control steps since reset).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from coordbench.errors import ActionError, ConfigError

from .embodiment import action_bounds, make_env
from .env import PhysicalEnv
from .g1_env import G1Env
from .scene import CONTROL_DT

SEED_RANGE = 2**31  # a reset without a seed draws the simulation's seed below this
RENDER_FPS = round(1 / CONTROL_DT)  # a frame per control step
RENDER_MODES = ("rgb_array",)  # the robots' egocentric views side by side


class PhysicalTeam:
    """One task's environment with the standard APIs' episode rules (reward, termination,
    truncation, infos); the PettingZoo and Gymnasium wrappers only reshape its arrays."""

    def __init__(self, task: str, embodiment: str = "cobot",
                 g1_model: str | Path | None = None, render_mode: str | None = None) -> None:
        if render_mode not in (None, *RENDER_MODES):
            raise ConfigError(f"unknown render_mode {render_mode!r}; choose from None, "
                              f"{', '.join(RENDER_MODES)}")
        self.render_mode = render_mode
        # make_env checks the task and the embodiment (ConfigError naming the choices)
        sim = make_env(task, embodiment, g1_model)
        self.sim: PhysicalEnv = sim
        self.n = sim.n
        self.embodiment = embodiment
        # a G1's joint ranges are read from the model file this environment loaded
        low, high = ((sim.action_low, sim.action_high) if isinstance(sim, G1Env) else
                     action_bounds(embodiment))
        self.action_low = np.asarray(low, dtype=np.float32)
        self.action_high = np.asarray(high, dtype=np.float32)
        self.obs_dim = sim.obs_dim
        self.live = False

    def reset(self, seed: int | None, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """Reset the environment with `seed` (the suite's seed: the same layout as its
        rollouts), or without one with a seed drawn from `rng`; return ((n, obs_dim) float32
        observations, info)."""
        sim_seed = int(rng.integers(SEED_RANGE)) if seed is None else int(seed)
        self.sim.reset(sim_seed)
        self.live = True
        return self.sim.local_obs(), self.info()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply (n, action_dim) actions for one control step; return ((n, obs_dim) float32
        observations, the team reward, terminated, truncated, info). ActionError once the
        episode is over (reset first) or for actions of another shape or not finite."""
        if not self.live:
            raise ActionError("the episode is over or not started: call reset() first")
        env = self.sim
        before = env.phase
        env.step(np.asarray(actions, dtype=float))
        terminated = env.phase == 3
        truncated = not terminated and (env.steps >= env.task.limit or
                                        env.unstable_at is not None)
        self.live = not (terminated or truncated)
        return env.local_obs(), float(env.phase - before), terminated, truncated, self.info()

    def info(self) -> dict:
        """Return a new info dict: phases done, success, control steps since reset."""
        env = self.sim
        return {"phase": int(env.phase), "success": env.phase == 3, "steps": int(env.steps)}

    def render(self) -> np.ndarray | None:
        """Return the robots' egocentric RGB frames side by side, (96, 96 n, 3) uint8, where
        `render_mode` is rgb_array; else None."""
        if self.render_mode is None:
            return None
        return np.concatenate([self.sim.render_ego(i) for i in range(self.n)], axis=1)

    def close(self) -> None:
        """Release the renderer (safe to call twice)."""
        self.sim.close()


class PhysicalParallelEnv(ParallelEnv):
    """A physical task for PettingZoo's parallel API, one agent per robot (see the module
    docstring). `render_mode="rgb_array"` renders the robots' egocentric views side by side."""

    metadata = {"name": "coordbench_physical_v0", "render_modes": list(RENDER_MODES),
                "render_fps": RENDER_FPS, "is_parallelizable": True}

    def __init__(self, task: str, embodiment: str = "cobot", g1_model: str | Path | None = None,
                 render_mode: str | None = None) -> None:
        self.team = PhysicalTeam(task, embodiment, g1_model, render_mode)
        self.sim = self.team.sim
        self.render_mode = render_mode
        self.possible_agents = [f"robot{i}" for i in range(self.team.n)]
        self.agents: list[str] = []
        self.np_random = np.random.default_rng()
        self._obs_spaces = {a: spaces.Box(-np.inf, np.inf, (self.team.obs_dim,), np.float32)
                            for a in self.possible_agents}
        self._act_spaces = {a: spaces.Box(self.team.action_low, self.team.action_high,
                                          dtype=np.float32) for a in self.possible_agents}
        self.state_space = spaces.Box(-np.inf, np.inf, (self.team.n * self.team.obs_dim,),
                                      np.float32)

    def observation_space(self, agent: str) -> spaces.Box:
        """Return the Box of one robot's state observation (its `local_obs` row)."""
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        """Return the Box of one robot's action, bounded as the environment clips it."""
        return self._act_spaces[agent]

    def _split(self, obs: np.ndarray, info: dict) -> tuple[dict, dict]:
        return ({a: obs[i] for i, a in enumerate(self.possible_agents)},
                {a: dict(info) for a in self.possible_agents})

    def reset(self, seed: int | None = None, options: dict | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Start an episode (a seed: the suite's layout for it; none: a seed drawn from
        `np_random`); return (observations, infos) keyed by agent."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        obs, info = self.team.reset(seed, self.np_random)
        self.agents = list(self.possible_agents)
        return self._split(obs, info)

    def step(self, actions: dict[str, np.ndarray]
             ) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, bool],
                        dict[str, bool], dict[str, dict]]:
        """Apply every robot's action; return observations, rewards, terminations,
        truncations and infos, each keyed by the agents that acted (ActionError naming the
        agents without an action)."""
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ActionError(f"no action for {', '.join(missing)}")
        if not self.agents:
            raise ActionError("the episode is over or not started: call reset() first")
        width = self.team.action_low.shape
        joint = [np.asarray(actions[a], dtype=float) for a in self.possible_agents]
        wrong = [a for a, x in zip(self.possible_agents, joint, strict=True) if x.shape != width]
        if wrong:
            raise ActionError(f"{', '.join(wrong)}: an action must have shape {width}")
        obs, reward, term, trunc, info = self.team.step(np.stack(joint))
        agents = self.agents
        observations, infos = self._split(obs, info)
        if term or trunc:
            self.agents = []
        return (observations, {a: reward for a in agents}, {a: term for a in agents},
                {a: trunc for a in agents}, infos)

    def state(self) -> np.ndarray:
        """Return the team's state: every robot's observation row, concatenated."""
        return self.sim.local_obs().ravel()

    def render(self) -> np.ndarray | None:
        """Return the robots' egocentric frames side by side (rgb_array), else None."""
        return self.team.render()

    def close(self) -> None:
        """Release the renderer."""
        self.team.close()
