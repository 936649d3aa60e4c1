"""FDQN: a shared trunk over the global state with one linear head per agent, summed into the
joint value (the paper's factorised DQN: trunk 32-32, no double-Q in the release)."""

from __future__ import annotations

import torch
from torch import nn

from .core import QNetMethod, TrainConfig, chosen, clone_frozen, masked_max


class Heads(nn.Module):
    """Trunk Linear(D, 32)-ReLU-Linear(32, 32)-ReLU, then n heads Linear(32, A)."""

    def __init__(self, obs_dim: int, n: int, actions: int, hidden: int = 32) -> None:
        super().__init__()
        self.n, self.actions = n, actions
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(),
                                   nn.Linear(hidden, hidden), nn.ReLU())
        self.heads = nn.Linear(hidden, n * actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Return (B, n, A)."""
        return self.heads(self.trunk(obs)).view(-1, self.n, self.actions)


class FDQN(QNetMethod):
    """Q(s, a) = sum_i Q_i(s, a_i); target r + gamma sum_i max_valid Q_i^target(s', .)."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = Heads(obs_dim, n, actions, int(tc.extra.get("trunk", 32)))
        self.q_target = clone_frozen(self.q)

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the squared TD error of the summed heads."""
        q = chosen(self.q(batch["obs"]), batch["actions"]).sum(1)
        with torch.no_grad():
            nxt = masked_max(self.q_target(batch["next_obs"]), batch["next_masks"]).sum(1)
        y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
        return nn.functional.mse_loss(q, y)
