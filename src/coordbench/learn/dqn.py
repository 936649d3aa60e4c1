"""DQN over the joint action space: one output per joint action (3+m)^n, as in the paper's
release (state -> 128 -> 128 -> (3+m)^n, max over valid joint actions, no double-Q).

Only small joint spaces are tractable (the paper runs it on the 3-agent configs only);
`MAX_JOINT_ACTIONS` draws that line and larger configs get a one-line error saying why.
"""

from __future__ import annotations

import torch
from torch import nn

from coordbench.errors import ConfigError

from .core import QNetMethod, TrainConfig, clone_frozen, masked_argmax, masked_max, mlp

MAX_JOINT_ACTIONS = 4096


def check_joint_space(config: str, n: int, actions: int) -> int:
    """Return the joint action count (3+m)^n, or raise ConfigError if DQN cannot enumerate it."""
    joint = actions ** n
    if joint > MAX_JOINT_ACTIONS:
        raise ConfigError(
            f"dqn enumerates joint actions: {config} has (3+{actions - 3})^{n} = {joint:,} "
            f"(limit {MAX_JOINT_ACTIONS:,}; the paper runs DQN on 3-agent configs only); "
            f"use fdqn, vdn, qmix, qtran, iql or coma")
    return joint


def joint_mask(masks: torch.Tensor) -> torch.Tensor:
    """Return the (B, A^n) validity of every joint action (agent 0 is the most significant)."""
    out = masks[:, 0]
    for i in range(1, masks.shape[1]):
        out = (out.unsqueeze(-1) & masks[:, i].unsqueeze(1)).flatten(1)
    return out


def encode(actions: torch.Tensor, a: int) -> torch.Tensor:
    """Return joint indices (B,) of per-agent actions (B, n)."""
    idx = torch.zeros_like(actions[:, 0])
    for i in range(actions.shape[1]):
        idx = idx * a + actions[:, i]
    return idx


def decode(idx: torch.Tensor, n: int, a: int) -> torch.Tensor:
    """Return per-agent actions (B, n) of joint indices (B,)."""
    cols = []
    for _ in range(n):
        cols.append(idx % a)
        idx = idx // a
    return torch.stack(cols[::-1], dim=1)


# Rows with more valid joint actions than this take the whole output layer; fewer, a gather.
DENSE_ROW_AT = 64


def valid_max(net: nn.Sequential, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Return max over valid joint actions of net(obs) (B,), -1e9 where none is valid.

    Equal to masking the whole (B, A^n) output, but the output layer is computed only where
    needed: most states leave few joint actions valid (an agent moving to or executing its
    task has one action): on 3A-12T-10x6 under random valid play, a median of 1 and a mean
    of 56 of 3,375. A row with more than DENSE_ROW_AT valid joint actions gets every unit
    (one matmul row is cheaper than that many gathered dot products); the others get only
    their valid units."""
    h, out = net[:-1](obs), net[-1]
    best = torch.full((obs.shape[0],), -1e9, dtype=h.dtype, device=h.device)
    dense = masks.sum(-1).prod(-1) > DENSE_ROW_AT
    if dense.any():
        best[dense] = masked_max(out(h[dense]), joint_mask(masks[dense]))
    sparse = (~dense).nonzero().squeeze(1)
    row, unit = joint_mask(masks[sparse]).nonzero(as_tuple=True)
    q = (h[sparse[row]] * out.weight[unit]).sum(-1) + out.bias[unit]
    return best.scatter_reduce_(0, sparse[row], q, "amax")


class DQN(QNetMethod):
    """Q(s, a_1..a_n) with one output unit per joint action; target r + gamma max_valid Q^target."""

    explore_jointly = True

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        check_joint_space(tc.config, n, actions)
        self.n, self.a = n, actions
        self.q = mlp(obs_dim, tc.hidden, actions ** n)
        self.q_target = clone_frozen(self.q)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Return joint Q-values (B, A^n)."""
        return self.q(obs)

    def greedy(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Return the best valid joint action as per-agent actions (B, n)."""
        return decode(masked_argmax(self.q(obs), joint_mask(masks)), self.n, self.a)

    def chosen_q(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Return Q(s, a) (B,) of the taken joint actions, computing only their output units.

        Equal to gathering from the full (B, A^n) output, but the output layer's work (forward
        and backward) shrinks from A^n units to one per sample, about half of an update on
        3A-12T (3,375 units, 14.7 ms down to 6.9 ms; benchmarks/stat_dqn_update.py). The
        weight gradient is still dense (zero rows elsewhere), so the optimiser sees exactly
        what the full forward would give it."""
        h, out = self.q[:-1](obs), self.q[-1]
        idx = encode(actions, self.a)
        return (h * out.weight[idx]).sum(-1) + out.bias[idx]

    def next_value(self, next_obs: torch.Tensor, next_masks: torch.Tensor) -> torch.Tensor:
        """Return max over valid joint actions of the target network (B,)."""
        return valid_max(self.q_target, next_obs, next_masks)

    def loss(self, batch: dict[str, torch.Tensor], gamma: float) -> torch.Tensor:
        """Return the squared TD error of the joint value."""
        q = self.chosen_q(batch["obs"], batch["actions"])
        with torch.no_grad():
            nxt = self.next_value(batch["next_obs"], batch["next_masks"])
        y = batch["rewards"] + gamma * (1 - batch["term"]) * nxt
        return nn.functional.mse_loss(q, y)
