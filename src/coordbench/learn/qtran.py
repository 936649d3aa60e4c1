"""QTRAN-base (Son et al. 2019): per-agent utilities Q_i, a joint value Q_jt(s, a) and a
state value V(s), tied by three losses:

- L_td:   (Q_jt(s, a) - r - gamma Q_jt^target(s', a'*))^2, a'* the agents' greedy next actions
          (chosen by the online utilities: double-Q, as in PyMARL);
- L_opt:  (sum_i Q_i(s, a*_i) - Q_jt(s, a*) + V(s))^2 at the greedy joint action a*;
- L_nopt: min(sum_i Q_i(s, a_i) - Q_jt(s, a) + V(s), 0)^2 at the action taken.

Q_jt is held fixed inside L_opt and L_nopt, so they shape the utilities and V only. The weights
1 and 0.1 are PyMARL's `opt_loss` and `nopt_min_loss`. Q_jt reads the state and the one-hot joint
action (PyMARL's variant reads the agents' hidden states; ours are feed-forward).
"""

from __future__ import annotations

import torch
from torch import nn

from .core import QNetMethod, TrainConfig, agent_network, chosen, clone_frozen, masked_argmax, mlp


class JointQ(nn.Module):
    """Q_jt(s, a) = MLP([s, onehot(a_1), ..., onehot(a_n)])."""

    def __init__(self, obs_dim: int, n: int, actions: int, embed: int = 64) -> None:
        super().__init__()
        self.actions = actions
        self.net = mlp(obs_dim + n * actions, embed, 1)

    def forward(self, obs: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
        """Return Q_jt (B,) for states (B, D) and per-agent actions (B, n)."""
        hot = nn.functional.one_hot(joint, self.actions).flatten(1).float()
        return self.net(torch.cat([obs, hot], dim=1)).squeeze(1)


class QTRAN(QNetMethod):
    """Utilities act greedily per agent; Q_jt and V make the sum of utilities equal the joint
    value (less V) at the greedy action and no smaller than it at other actions."""

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.q = agent_network(obs_dim, n, actions, tc)
        self.joint = JointQ(obs_dim, n, actions)
        self.v = mlp(obs_dim, 64, 1)
        self.q_target = clone_frozen(self.q)
        self.joint_target = clone_frozen(self.joint)
        self.opt_weight = float(tc.extra.get("opt_loss", 1.0))
        self.nopt_weight = float(tc.extra.get("nopt_min_loss", 0.1))

    def networks(self) -> dict[str, nn.Module]:
        """Return the online networks by name."""
        return {"q": self.q, "joint": self.joint, "v": self.v}

    def sync_target(self) -> None:
        """Copy the online networks into the targets."""
        super().sync_target()
        self.joint_target.load_state_dict(self.joint.state_dict())

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return L_td + opt_weight L_opt + nopt_weight L_nopt."""
        obs, act = batch["obs"], batch["actions"]
        qs = self.q(obs)
        q_jt = self.joint(obs, act)
        with torch.no_grad():
            nxt_act = masked_argmax(self.q(batch["next_obs"]), batch["next_masks"])
            nxt = self.joint_target(batch["next_obs"], nxt_act)
            y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
            best = masked_argmax(qs, batch["masks"])
            q_jt_best = self.joint(obs, best)
        v = self.v(obs).squeeze(1)
        l_td = nn.functional.mse_loss(q_jt, y)
        l_opt = (chosen(qs, best).sum(1) - q_jt_best + v).pow(2).mean()
        l_nopt = (chosen(qs, act).sum(1) - q_jt.detach() + v).clamp(max=0).pow(2).mean()
        return l_td + self.opt_weight * l_opt + self.nopt_weight * l_nopt
