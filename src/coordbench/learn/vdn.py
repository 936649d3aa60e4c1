"""VDN: the team value is the sum of per-agent values (Sunehag et al. 2018)."""

from __future__ import annotations

import torch

from .core import SharedAgentQ, TrainConfig, chosen, clone_frozen, double_q_next


class VDN:
    """Q_tot(s, a) = sum_i Q_i(s, a_i); target r + gamma sum_i Q_i^target(s', argmax)."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = SharedAgentQ(obs_dim, n, actions, tc.hidden)
        self.q_target = clone_frozen(self.q)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Return per-agent Q-values (B, n, A)."""
        return self.q(obs)

    def parameters(self):
        """Return the trainable parameters."""
        return list(self.q.parameters())

    def sync_target(self) -> None:
        """Copy the online network into the target."""
        self.q_target.load_state_dict(self.q.state_dict())

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the squared TD error of the summed value."""
        q_tot = chosen(self.q(batch["obs"]), batch["actions"]).sum(1)
        nxt = double_q_next(self.q, self.q_target, batch).sum(1)
        y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
        return torch.nn.functional.mse_loss(q_tot, y)
