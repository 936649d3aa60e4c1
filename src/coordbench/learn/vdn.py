"""VDN: the team value is the sum of per-agent values (Sunehag et al. 2018)."""

from __future__ import annotations

import torch

from .core import QNetMethod, TrainConfig, agent_network, chosen, clone_frozen, double_q_next


class VDN(QNetMethod):
    """Q_tot(s, a) = sum_i Q_i(s, a_i); target r + gamma sum_i Q_i^target(s', argmax)."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = agent_network(obs_dim, n, actions, tc)
        self.q_target = clone_frozen(self.q)

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the squared TD error of the summed value."""
        q_tot = chosen(self.q(batch["obs"]), batch["actions"]).sum(1)
        nxt = double_q_next(self.q, self.q_target, batch).sum(1)
        y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
        return torch.nn.functional.mse_loss(q_tot, y)
