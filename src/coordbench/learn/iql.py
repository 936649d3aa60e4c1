"""IQL: independent Q-learners (one shared network), each regressing on the team reward."""

from __future__ import annotations

import torch

from .core import QNetMethod, TrainConfig, agent_network, chosen, clone_frozen, double_q_next


class IQL(QNetMethod):
    """Per-agent TD targets r + gamma Q_i^target(s', argmax_online)."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = agent_network(obs_dim, n, actions, tc)
        self.q_target = clone_frozen(self.q)

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the mean squared TD error over agents."""
        q = chosen(self.q(batch["obs"]), batch["actions"])
        nxt = double_q_next(self.q, self.q_target, batch)
        y = batch["rewards"].unsqueeze(1) + gamma * (1 - batch["term"]).unsqueeze(1) * nxt
        return torch.nn.functional.mse_loss(q, y)
