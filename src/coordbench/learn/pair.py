"""A task-equivariant agent network for STAT (`--arch pair`), on the paper's observation.

The default agent network (`SharedAgentQ`) is an MLP over the flat state vector plus an agent
id, as in the paper: it must learn separately, for every task index, what a near free task
is worth, and it cannot carry what it learns about task 3 over to task 17. This network
decodes the same observation (binned distances, agent modes, completed and selected flags;
nothing else) into per-(agent, task) features and scores every SELECT(j) with one shared MLP,
so its Q-values are equivariant under task permutations and its size does not grow with m.

Per (agent i, task j) features, all from the observation:
  one-hot distance bin d_ij; completed_j; selected_j; the nearest other agent's bin to j;
  how many other agents are strictly nearer to j, how many tie with i, and how many of those
  tying have a lower index (conflicts go to the nearer agent, ties to the lower index); how
  many *free* other agents (mode idle) are nearer or tie; i's mode; the share of free agents
  and of open tasks. IDLE/MOVE/EXECUTE (each forced by the masks whenever it is valid) get a
  small head on the pooled pair embeddings.

Sequential variant (`--arch pair-seq`, MAPPO and IPPO only). With `claims=True` every pair
gets one more input: whether an agent of lower index picked task j in this same step. The
agents then decide in index order, each seeing the picks before its own (ppo.decide), which
factorises the team's policy autoregressively, pi(a | s) = prod_i pi(a_i | s, a_<i), as the
Multi-Agent Transformer's decoder does (Wen et al. 2022). The observation is the paper's; what
changes is execution: an agent waits for the lower-index agents' picks instead of acting on
its own, as `greedy_obs` does (agents/stat/scripted.py).

Speed. The network scores any subset of agent rows (`rows=(b, i)`) with the same result as
the full forward: an on-policy learner needs only the agents that have a choice (about 4% of
agent-steps on the 50x30 configurations; the masks force every other agent's action), so it
never pays for the others. The full forward is memory-bound on its (B, n, m, hidden)
activations (ReLU and its backward take about half its time), so computing fewer rows is
what makes it faster; splitting the first layer into per-part terms was measured slower.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

BINS = 5  # the paper's observation; other counts are the labelled --num-bins option


def pair_features(bins: int, memory: bool = False) -> int:
    """Return the width of one pair's input: the bin one-hot and 13 more features (15 with
    the observation memory)."""
    return bins + 2 + 1 + 5 + 3 + 2 + 2 * memory


class PairAgentQ(nn.Module):
    """Q_i(s, .) for every agent i: (B, D) -> (B, n, 3 + m), or (R, 3 + m) for agent rows."""

    scores_rows = True  # forward(obs, rows) scores only the given agent rows

    def __init__(self, n: int, m: int, hidden: int, claims: bool = False,
                 bins: int = BINS, memory: bool = False) -> None:
        super().__init__()
        self.n, self.m, self.bins = n, m, bins
        self.sequential = claims  # one more pair input: picked by a lower-index agent this step
        # the observation memory's two inputs (envs/stat/memory.py), after the paper's vector
        self.memory = memory
        self.embed = nn.Sequential(nn.Linear(pair_features(bins, memory) + int(claims), hidden),
                                   nn.ReLU(),
                                   nn.Linear(hidden, hidden), nn.ReLU())
        self.select = nn.Linear(hidden, 1)
        self.base = nn.Sequential(nn.Linear(hidden + 3, hidden), nn.ReLU(), nn.Linear(hidden, 3))
        self.register_buffer("eye", torch.eye(n, dtype=torch.bool))
        self.register_buffer("lower", torch.ones(n, n).tril(-1).bool())  # k < i

    def _split(self, obs: torch.Tensor):
        n, m = self.n, self.m
        b = obs.shape[0]
        d = obs[:, :n * m].view(b, n, m)
        mode = obs[:, n * m:n * m + n].long().clamp(0, 2)
        comp = obs[:, n * m + n:n * m + n + m]
        sel = obs[:, n * m + n + m:n * m + n + 2 * m]
        return d, mode, comp, sel

    def _memory(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the memory's disagreement shares (B, n, m) and remembered share (B,)."""
        n, m = self.n, self.m
        start = n * m + n + 2 * m
        return obs[:, start:start + n * m].view(-1, n, m), obs[:, start + n * m]

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return pair features (B, n, m, F) and agent modes one-hot (B, n, 3).

        The definition of the network's input for every agent at once; `row_features`
        builds the same rows for a subset of agents."""
        n, m = self.n, self.m
        d, mode, comp, sel = self._split(obs)
        b = obs.shape[0]
        free = (mode == 0).float()  # (B, n)
        dk = d.unsqueeze(1).expand(b, n, n, m)  # [b, i, k, j] = d_kj
        di = d.unsqueeze(2)  # [b, i, 1, j] = d_ij
        other = (~self.eye).view(1, n, n, 1).float()
        nearer = (dk < di).float() * other
        tie = (dk == di).float() * other
        tie_lower = tie * self.lower.view(1, n, n, 1).float()
        free_k = free.view(b, 1, n, 1)
        nearest_other = dk.masked_fill(self.eye.view(1, n, n, 1), 1e3).amin(2)
        scale = max(1, n - 1)
        pair = [nn.functional.one_hot(d.long().clamp(0, self.bins - 1), self.bins).float(),
                comp.unsqueeze(1).expand(b, n, m).unsqueeze(-1),
                sel.unsqueeze(1).expand(b, n, m).unsqueeze(-1),
                (nearest_other / (self.bins - 1)).clamp(max=2.0).unsqueeze(-1),
                torch.stack([nearer.sum(2) / scale, tie.sum(2) / scale,
                             tie_lower.sum(2) / scale, (nearer * free_k).sum(2) / scale,
                             (tie * free_k).sum(2) / scale], dim=-1)]
        mode_hot = nn.functional.one_hot(mode, 3).float()
        pair.append(mode_hot.unsqueeze(2).expand(b, n, m, 3))
        glob = torch.stack([free.mean(1), 1 - comp.mean(1)], dim=-1)  # (B, 2)
        pair.append(glob.view(b, 1, 1, 2).expand(b, n, m, 2))
        if self.memory:
            share, known = self._memory(obs)
            pair += [share.unsqueeze(-1), known.view(b, 1, 1, 1).expand(b, n, m, 1)]
        return torch.cat(pair, dim=-1), mode_hot

    def row_features(self, obs: torch.Tensor, rb: torch.Tensor, ri: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return `features` for agent rows (rb[r], ri[r]) only: (R, m, F) and (R, 3)."""
        n, m = self.n, self.m
        d, mode, comp, sel = self._split(obs)
        free = (mode == 0).float()
        dr = d[rb]  # (R, n, m): every agent's bins in row r's state
        di = dr.gather(1, ri.view(-1, 1, 1).expand(-1, 1, m))  # (R, 1, m)
        ks = torch.arange(n, device=obs.device)
        other = (ks.view(1, n) != ri.view(-1, 1)).float()  # (R, n)
        lower = (ks.view(1, n) < ri.view(-1, 1)).float()
        free_r = free[rb] * other
        # sums over the other agents k as (R, k) x (R, k, m) products
        near_counts = torch.bmm(torch.stack([other, free_r], 1), (dr < di).float())
        tie_counts = torch.bmm(torch.stack([other, other * lower, free_r], 1),
                               (dr == di).float())
        nearest_other = dr.masked_fill((other == 0).unsqueeze(-1), 1e3).amin(1)  # (R, m)
        scale = max(1, n - 1)
        mode_hot = F.one_hot(mode[rb, ri], 3).float()
        glob = torch.stack([free.mean(1), 1 - comp.mean(1)], dim=-1)[rb]  # (R, 2)
        r = rb.shape[0]
        extra = []
        if self.memory:
            share, known = self._memory(obs)
            extra = [share[rb, ri].unsqueeze(-1), known[rb].view(r, 1, 1).expand(r, m, 1)]
        feats = torch.cat([
            F.one_hot(di.squeeze(1).long().clamp(0, self.bins - 1), self.bins).float(),
            comp[rb].unsqueeze(-1), sel[rb].unsqueeze(-1),
            (nearest_other / (self.bins - 1)).clamp(max=2.0).unsqueeze(-1),
            torch.stack([near_counts[:, 0], tie_counts[:, 0], tie_counts[:, 1],
                         near_counts[:, 1], tie_counts[:, 2]], dim=-1) / scale,
            torch.cat([mode_hot, glob], dim=-1).unsqueeze(1).expand(r, m, 5), *extra], dim=-1)
        return feats, mode_hot

    def forward(self, obs: torch.Tensor, rows: tuple[torch.Tensor, torch.Tensor] | None = None,
                claimed: torch.Tensor | None = None) -> torch.Tensor:
        """Return Q-values (B, n, 3 + m); with rows = (b, i) index tensors, only the agent
        rows (b[r], i[r]) as (R, 3 + m). A sequential network also takes `claimed`, 1.0
        where a lower-index agent picked the task this step: (B, n, m), or (R, m) with rows."""
        if rows is None:  # every agent: the broadcast form builds fewer tensors
            pair, mode_hot = self.features(obs)
        else:
            pair, mode_hot = self.row_features(obs, rows[0], rows[1])
        if self.sequential != (claimed is not None):
            raise ValueError("the lower agents' picks (claimed) go to a sequential pair "
                             "network, and only to one")
        if claimed is not None:
            pair = torch.cat([pair, claimed.unsqueeze(-1)], dim=-1)
        return self._head(self.embed(pair), mode_hot)

    def _head(self, h: torch.Tensor, mode_hot: torch.Tensor) -> torch.Tensor:
        """Return Q-values [IDLE, MOVE, EXECUTE, SELECT(0..m-1)] from pair embeddings
        (..., m, H) and the agents' modes one-hot (..., 3)."""
        q_select = self.select(h).squeeze(-1)
        q_base = self.base(torch.cat([h.mean(-2), mode_hot], dim=-1))
        return torch.cat([q_base, q_select], dim=-1)
