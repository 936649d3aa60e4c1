"""Household and construct tasks as a PettingZoo ParallelEnv (passes
`pettingzoo.test.parallel_api_test`), for learned teams.

`engine="python"` (the default, and the reference the batched engine is tested against) steps
`HouseholdEnv` and builds observations with `menu.observe_entries`; `engine="batched"` steps
the same episode on the numba kernels (`vec.HouseholdVecEnv` at batch 1), about 8x faster on
household tasks (benchmarks/household_pettingzoo_speed.py), with the very same observations,
rewards and infos for the same seed: it draws the conflict winners from the same
`random.Random` the Python engine would use (then `env.env`, the Python engine, is None).

Each agent chooses an entry of its stable action menu (`menu.catalog` over the task's nodes:
`menu.household_nodes` for a household task, `menu.construct_nodes` for a construct
instance), padded to the largest menu of the episodes given, so one Discrete space serves a
whole family. Its observation is what every entry means to it now:
`{"observation": float32 (K, N_FEATURES) in [0, 1] (`menu.entry_features`), "action_mask":
int8 (K,)}` (`menu.plausible`, strict: within reach; padding is masked).

The reward is the team's, every agent getting the same: the change of a potential in the
step minus `step_cost`. The potential is the completion rate (CR) plus `shaping` times the
share of the required objects the team holds and has not placed yet (potential-based
shaping, Ng et al. 1999: it changes how fast a learner finds the goal, not which policies are
best; 0 by default, so the return is the CR). An episode terminates when every subgoal is met
and is truncated when the team has used the task's effective-step budget (n actions per team
step, as the household suite counts them) times `budget_scale` (1 by default; a learner may
train with more room than it is tested with). `infos[agent]` has the action's outcome code
and the completion rate.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from coordbench.errors import ActionError

from .actions import CONFLICT_SETS, WAIT, Action
from .engine import HouseholdEnv, conflict_groups
from .menu import N_FEATURES, Goals, agent_menus, observe_entries
from .task import HouseholdTask

Episode = tuple[HouseholdTask, list[int] | None]  # a task, and its menu's nodes (None: all)


class HouseholdParallelEnv(ParallelEnv):
    """A family of household or construct tasks for PettingZoo's parallel API."""

    metadata = {"name": "coordbench_household_v0", "render_modes": [],
                "is_parallelizable": True}

    def __init__(self, episodes: Sequence[Episode], n_agents: int, seed: int = 0,
                 conflict_set: str = "paper", step_cost: float = 0.005,
                 household: bool = True, shaping: float = 0.0,
                 budget_scale: float = 1.0, engine: str = "python") -> None:
        if not episodes:
            raise ValueError("HouseholdParallelEnv needs at least one task")
        if engine not in ("python", "batched"):
            raise ValueError(f"engine must be python or batched, got {engine!r}")
        self.episodes = list(episodes)
        self.n = n_agents
        self.conflict_set = conflict_set
        self.step_cost = step_cost
        self.household = household
        self.shaping = shaping
        self.budget_scale = budget_scale
        self._rng = random.Random(seed)
        self._seed = seed
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents: list[str] = []
        self.render_mode = None
        self._vec = None
        if engine == "batched":  # its tables hold the menus: the size comes from them
            from .vec import HouseholdVecEnv

            self._vec = HouseholdVecEnv(self.episodes, n_agents, batch=1, seed=seed,
                                        conflict_set=conflict_set, step_cost=step_cost,
                                        household=household, shaping=shaping,
                                        budget_scale=budget_scale, autoreset=False)
            self.size = self._vec.size
        else:
            self.size = max(self._menu_size(task, nodes) for task, nodes in self.episodes)
        self._obs_space = spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, (self.size, N_FEATURES), np.float32),
            "action_mask": spaces.Box(0, 1, (self.size,), np.int8),
        })
        self._act_space = spaces.Discrete(self.size)
        self.env: HouseholdEnv | None = None
        self.engine = engine

    def _menu_size(self, task: HouseholdTask, nodes: list[int] | None) -> int:
        env = HouseholdEnv(task, self.n, 0, self.conflict_set)
        return len(self._entries(env, nodes)[0])

    def _entries(self, env: HouseholdEnv, nodes: list[int] | None) -> list[list[Action]]:
        return agent_menus(env, nodes, self.household)

    def observation_space(self, agent: str) -> spaces.Dict:
        """Return the Dict space of one agent's entry features and action mask."""
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """Return Discrete(K): the index of an entry of the agent's menu."""
        return self._act_space

    def observe(self, agent: int) -> dict[str, np.ndarray]:
        """Return one agent's observation: its menu's entry features and mask."""
        if self._vec is not None:
            return {"observation": self._vec.features[0, agent].copy(),
                    "action_mask": self._vec.masks[0, agent].copy()}
        env = self.env
        assert env is not None
        # time left is measured against the task's own budget (what a tested team gets),
        # also when training episodes are given more room
        progress = min(1.0, self.used / max(1, self.task_budget))
        obs, mask = observe_entries(env, self.goals, agent, self.menus[agent], progress,
                                    self.size)
        return {"observation": obs, "action_mask": mask}

    def _all(self) -> dict[str, dict[str, np.ndarray]]:
        return {a: self.observe(i) for i, a in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode on the next task (a seed restarts the task order); return
        (observations, infos)."""
        if seed is not None:
            self._rng = random.Random(seed)
            self._seed = seed
        index = (options or {}).get("task")
        index = self._rng.randrange(len(self.episodes)) if index is None else int(index)
        task, nodes = self.episodes[index]
        engine_seed = self._rng.randrange(1 << 30)
        self.task_budget = task.budget()
        self.budget = max(self.n, int(self.task_budget * self.budget_scale))
        self.used = 0
        self.required = sum(sg.count for sg in task.subgoals)
        self.agents = list(self.possible_agents)
        if self._vec is not None:
            # the Python engine's conflict generator, so that both engines pick alike
            self._conflict_rng = random.Random(engine_seed)
            self._vec.reset(tasks=[index])
            self.menus = self._vec.tables.menus[index]
            return self._all(), {a: {"task": task.task_id} for a in self.agents}
        self.env = HouseholdEnv(task, self.n, engine_seed, self.conflict_set)
        self.menus = self._entries(self.env, nodes)
        self.goals = Goals(self.env)
        self.potential = self._potential()
        return self._all(), {a: {"task": task.task_id} for a in self.agents}

    def step(self, actions: dict[str, int]):
        """Apply every agent's entry; return obs, rewards, terminations, truncations, infos."""
        env = self.env
        if (env is None and self._vec is None) or not self.agents:
            raise ActionError("the episode is over: call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ActionError(f"no action for {', '.join(missing)}")
        joint = []
        for i, a in enumerate(self.possible_agents):
            k = int(actions[a])
            if not 0 <= k < self.size:
                raise ActionError(f"{a}: action {k} is not in 0..{self.size - 1}")
            joint.append(self.menus[i][k] if k < len(self.menus[i]) else WAIT)
        if self._vec is not None:
            return self._step_batched(joint, [int(actions[a]) for a in self.possible_agents])
        outcomes = env.step(joint)
        self.used += self.n
        completion = env.completion_rate()
        potential = self._potential()
        reward = potential - self.potential - self.step_cost
        self.potential = potential
        term = env.success()
        trunc = not term and self.used >= self.budget
        agents = self.agents
        rewards = {a: float(reward) for a in agents}
        infos = {a: {"outcome": outcomes[i].code, "completion": completion}
                 for i, a in enumerate(self.possible_agents)}
        obs = self._all()
        if term or trunc:
            self.agents = []
        return (obs, rewards, {a: term for a in agents}, {a: trunc for a in agents}, infos)

    def _step_batched(self, joint: list[Action], entries: list[int]):
        """`step` on the kernels: the same conflict winners as `HouseholdEnv.step` draws
        (`rng.choice` over each group of two or more, groups in order of their first member),
        handed to the kernels as draws that pick them."""
        draws = np.zeros((1, self.n))
        g = 0
        for members in conflict_groups(joint, CONFLICT_SETS[self.conflict_set]).values():
            if len(members) > 1:
                k = self._conflict_rng.choice(range(len(members)))  # rng.choice(members)'s draw
                draws[0, g] = (k + 0.5) / len(members)
                g += 1
        vec = self._vec
        _, _, reward, info = vec.step(np.array([entries]), draws)
        self.used += self.n
        term, trunc = bool(info["terminated"][0]), bool(info["truncated"][0])
        agents = self.agents
        codes = vec.outcome_names(info["outcome"])[0]
        completion = float(info["completion"][0])
        infos = {a: {"outcome": codes[i], "completion": completion}
                 for i, a in enumerate(self.possible_agents)}
        obs = self._all()
        if term or trunc:
            self.agents = []
        return (obs, {a: float(reward[0]) for a in agents}, {a: term for a in agents},
                {a: trunc for a in agents}, infos)

    def _potential(self) -> float:
        env = self.env
        assert env is not None
        if not self.shaping:
            return env.completion_rate()
        carried = sum(1 for hand in env.held for obj in hand
                      if self.goals.targets.get(env.scene.nodes[obj].class_name)
                      and not self.goals.in_place(env, obj))
        return env.completion_rate() + self.shaping * carried / max(1, self.required)

    def state(self) -> np.ndarray:
        """Return the team's joint observation (every agent's entry features, stacked)."""
        return np.stack([self.observe(i)["observation"] for i in range(self.n)])
