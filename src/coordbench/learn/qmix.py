"""QMIX: a monotonic mixing network whose weights come from hypernetworks on the state
(Rashid et al. 2018); embed 32, hypernetworks of 64 units as in PyMARL."""

from __future__ import annotations

import torch
from torch import nn

from .core import QNetMethod, TrainConfig, agent_network, chosen, clone_frozen, double_q_next


class Mixer(nn.Module):
    """Q_tot = elu(q W1 + b1) W2 + b2 with |W1|, |W2| from the state (monotone in each q_i)."""

    def __init__(self, obs_dim: int, n: int, embed: int = 32, hyper: int = 64) -> None:
        super().__init__()
        self.n, self.embed = n, embed
        self.w1 = nn.Sequential(nn.Linear(obs_dim, hyper), nn.ReLU(), nn.Linear(hyper, n * embed))
        self.b1 = nn.Linear(obs_dim, embed)
        self.w2 = nn.Sequential(nn.Linear(obs_dim, hyper), nn.ReLU(), nn.Linear(hyper, embed))
        self.b2 = nn.Sequential(nn.Linear(obs_dim, embed), nn.ReLU(), nn.Linear(embed, 1))

    def forward(self, q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Return Q_tot (B,) from per-agent values q (B, n) and states (B, D)."""
        w1 = self.w1(state).abs().view(-1, self.n, self.embed)
        # q W1 for n of 2-9 agents: a product and a sum beat torch.bmm's tiny batched products
        hidden = nn.functional.elu((q.unsqueeze(-1) * w1).sum(1) + self.b1(state))
        w2 = self.w2(state).abs()
        return (hidden * w2).sum(1) + self.b2(state).squeeze(1)


class QMIX(QNetMethod):
    """Per-agent Q through a state-conditioned monotonic mixer (monotone, so each agent's
    argmax is the joint argmax); double-Q targets."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = agent_network(obs_dim, n, actions, tc)
        self.mixer = Mixer(obs_dim, n)
        self.q_target = clone_frozen(self.q)
        self.mixer_target = clone_frozen(self.mixer)

    def networks(self) -> dict[str, nn.Module]:
        """Return the online networks by name."""
        return {"q": self.q, "mixer": self.mixer}

    def sync_target(self) -> None:
        """Copy the online networks into the targets."""
        super().sync_target()
        self.mixer_target.load_state_dict(self.mixer.state_dict())

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the squared TD error of the mixed value."""
        q_tot = self.mixer(chosen(self.q(batch["obs"]), batch["actions"]), batch["obs"])
        with torch.no_grad():
            nxt = self.mixer_target(double_q_next(self.q, self.q_target, batch),
                                    batch["next_obs"])
        y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
        return nn.functional.mse_loss(q_tot, y)
