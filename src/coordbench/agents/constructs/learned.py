"""A learned construct team: every agent takes the entry of its menu the trained network
(`learn.menu_ppo`) scores highest, from the features of `envs.household.menu`, under the same
strict masks it was trained with. Decentralized: each agent decides from its own features,
all from the same snapshot, without messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.menu import Goals, catalog, construct_nodes, observe_entries

from .planners import StepChoice


class LearnedPlanners:
    """Construct team of one trained policy per agent (shared weights), acting greedily."""

    name = "learned"

    def __init__(self, checkpoint: str) -> None:
        from coordbench.learn.menu_ppo import load_cached

        self.net, self.meta = load_cached(checkpoint)

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`: the agents' menus over the instance's nodes."""
        self.env = env
        self.menus: list[list[Action]] = [[] for _ in range(env.n)]
        for agent, act in catalog(env, construct_nodes(info)):
            self.menus[agent].append(act)
        self.goals = Goals(env)
        self.budget, self.used = env.task.budget(), 0

    def act(self, images: dict[int, str]) -> StepChoice:
        """Return each agent's highest-scoring plausible entry (None: nothing plausible)."""
        from coordbench.learn.menu_ppo import greedy_actions

        env, n = self.env, self.env.n
        size = max(len(m) for m in self.menus)
        progress = min(1.0, self.used / max(1, self.budget))
        views = [observe_entries(env, self.goals, i, self.menus[i], progress, size)
                 for i in range(n)]
        obs = np.stack([v[0] for v in views])
        mask = np.stack([v[1] for v in views])
        picks = greedy_actions(self.net, obs, mask)
        return StepChoice([self.menus[i][int(picks[i])] if mask[i].any() else None
                           for i in range(n)])

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Count the step's actions against the budget (the features' time left)."""
        self.used += len(records)
        return []
