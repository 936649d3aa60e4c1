"""COMA (Foerster et al. 2018): on-policy actor-critic with a counterfactual baseline.

- Actor: one shared network over [state, agent id] giving logits for 3+m actions; invalid
  actions are masked out of the softmax. While training, the policy is mixed with uniform
  valid play at rate epsilon (PyMARL's COMA does the same); greedy evaluation takes the
  masked argmax.
- Critic: Q_i(s, a_-i, .) = MLP([state, one-hot actions of the other agents, agent id]) gives
  the joint value for every action of agent i with the others' actions fixed.
- Advantage A_i = Q_i(s, a)[a_i] - sum_a' pi_i(a'|s) Q_i(s, a_-i)[a'], normalised over the
  batch's decision steps (steps with more than one valid action); without it the policy
  collapses to one task for every agent within a few thousand updates (measured).
- Critic targets: TD(lambda) returns from a target critic over rollouts of `rollout` steps of
  `num_envs` environments; time-outs bootstrap, terminal states do not.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from coordbench.envs.stat.vec import StatVecEnv

from .core import (
    EvalSchedule,
    FlatAdam,
    TrainConfig,
    agent_network,
    chosen,
    clone_frozen,
    env_config,
    epsilon,
    masked_argmax,
    mlp,
    one_thread,
)
from .snapshot import Snapshots, adopt


class Critic(nn.Module):
    """Per-agent counterfactual heads Q_i(s, a_-i, .) -> (B, n, A)."""

    def __init__(self, obs_dim: int, n: int, actions: int, hidden: int) -> None:
        super().__init__()
        self.n, self.actions = n, actions
        self.net = mlp(obs_dim + n * actions + n, hidden, actions)
        self.register_buffer("ids", torch.eye(n))
        self.register_buffer("others", (1 - torch.eye(n)).repeat_interleave(actions, dim=1))

    def forward(self, obs: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
        """Return (B, n, A) for states (B, D) and the joint action taken (B, n)."""
        b, n = obs.shape[0], self.n
        hot = nn.functional.one_hot(joint, self.actions).flatten(1).float()  # (B, n*A)
        hot = hot.unsqueeze(1) * self.others.unsqueeze(0)  # agent i's own action hidden
        x = torch.cat([obs.unsqueeze(1).expand(b, n, obs.shape[1]), hot,
                       self.ids.unsqueeze(0).expand(b, n, n)], dim=-1)
        return self.net(x)


def masked_probs(logits: torch.Tensor, masks: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Return the softmax over valid actions, mixed with uniform valid play at rate eps."""
    probs = torch.softmax(logits.masked_fill(~masks, -1e9), dim=-1)
    if eps > 0:
        uniform = masks.float() / masks.sum(-1, keepdim=True).clamp(min=1)
        probs = (1 - eps) * probs + eps * uniform
    return probs * masks  # exact zeros off the mask


class COMA:
    """Actor, critic and target critic; trained by `train` below (on-policy, no replay)."""

    on_policy = True

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        self.actor = agent_network(obs_dim, n, actions, tc)
        self.critic = Critic(obs_dim, n, actions, int(tc.extra.get("critic_hidden", 128)))
        self.critic_target = clone_frozen(self.critic)

    def greedy(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Return each agent's most probable valid action (B, n)."""
        return masked_argmax(self.actor(obs), masks)

    def networks(self) -> dict[str, nn.Module]:
        """Return the online networks by name."""
        return {"actor": self.actor, "critic": self.critic}

    def sync_target(self) -> None:
        """Copy the critic into the target critic."""
        self.critic_target.load_state_dict(self.critic.state_dict())


def taken(critic: Critic, obs: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
    """Return the critic's value (B, n) of the joint action taken, seen from each agent."""
    return chosen(critic(obs, joint), joint)


def lambda_returns(rewards: np.ndarray, done: np.ndarray, boot: np.ndarray, nxt: np.ndarray,
                   gamma: float, lam: float) -> np.ndarray:
    """Return TD(lambda) targets (T, B, n).

    rewards, done (T, B); boot (T, B, n) = value to bootstrap from when step t ended its episode
    by time-out (0 when terminal or not done); nxt (T, B, n) = target value of step t+1's joint
    action inside the same episode (the last row: the value of the next rollout's first state).
    """
    out = np.zeros_like(nxt)
    g = nxt[-1]
    for t in range(len(rewards) - 1, -1, -1):
        cont = (1 - lam) * nxt[t] + lam * g if t < len(rewards) - 1 else nxt[t]
        g = np.where(done[t][:, None], rewards[t][:, None] + gamma * boot[t],
                     rewards[t][:, None] + gamma * cont)
        out[t] = g
    return out


def train(tc: TrainConfig, method: COMA, log=None, snapshots=None) -> dict[str, Any]:
    """Train COMA under `tc`; return the evaluation curve and summary numbers (as core.train,
    snapshots included)."""
    one_thread()
    torch.manual_seed(tc.seed)
    gen = torch.Generator().manual_seed(tc.seed)
    cfg = env_config(tc)
    rollout = int(tc.extra.get("rollout", 16))
    lam = float(tc.extra.get("td_lambda", 0.8))
    ent_coef = float(tc.extra.get("entropy", 0.01))
    per_update = rollout * tc.num_envs
    target_every = max(1, int(tc.extra.get("target_every_steps", 2_560)) // per_update)
    env = StatVecEnv(cfg, tc.num_envs, layouts="uniform", seed=tc.seed + 10_000)
    actor_opt = FlatAdam(method.actor.parameters(), tc.lr)
    critic_opt = FlatAdam(method.critic.parameters(), float(tc.extra.get("critic_lr", tc.lr)))
    obs, masks = (x.copy() for x in env.reset())
    n, b = cfg.agents, tc.num_envs
    steps = updates = 0
    evals = EvalSchedule(tc, method, cfg, log)

    def sample(o: np.ndarray, m: np.ndarray, eps: float) -> np.ndarray:
        with torch.no_grad():
            p = masked_probs(method.actor(torch.from_numpy(o)), torch.from_numpy(m), eps)
        draws = torch.multinomial(p.view(-1, p.shape[-1]), 1, generator=gen)
        return draws.view(o.shape[0], n).numpy()

    act = sample(obs, masks, epsilon(tc, 0))
    snaps = Snapshots(snapshots, tc)
    if (s := snaps.load()) is not None:
        adopt(method, s["method"])
        actor_opt, critic_opt, env, obs, masks, act, steps, updates, evals = (s[k] for k in (
            "actor_opt", "critic_opt", "env", "obs", "masks", "act", "steps", "updates",
            "evals"))
        gen.set_state(s["gen"])
        evals.log, evals.resumed_from_step = log, steps
    while steps < tc.total_steps:
        if snaps.due():
            snaps.save({"method": method, "actor_opt": actor_opt,
                        "critic_opt": critic_opt, "env": env, "obs": obs,
                        "masks": masks, "act": act, "steps": steps,
                        "updates": updates, "evals": evals, "gen": gen.get_state()})
        evals.maybe(steps)
        eps = epsilon(tc, steps)
        buf: dict[str, list[np.ndarray]] = {k: [] for k in (
            "obs", "masks", "act", "rew", "done", "boot_obs", "boot_act", "timeout")}
        t_act = time.perf_counter()
        for _ in range(rollout):
            nobs, nmasks, reward, info = env.step(act)
            done = (info.terminated | info.truncated).copy()
            boot_obs = np.zeros_like(obs)
            boot_act = np.zeros_like(act)
            timeout = info.truncated & ~info.terminated
            for e in np.flatnonzero(timeout):  # time-out: bootstrap from the last state
                boot_obs[e] = info.final_obs[int(e)]
                boot_act[e] = sample(boot_obs[e:e + 1], info.final_masks[int(e)][None], eps)[0]
            for k, v in (("obs", obs), ("masks", masks), ("act", act), ("rew", reward),
                         ("done", done), ("boot_obs", boot_obs), ("boot_act", boot_act),
                         ("timeout", timeout)):
                buf[k].append(np.array(v, copy=True))
            obs, masks = nobs.copy(), nmasks.copy()
            act = sample(obs, masks, eps)
            steps += b
        evals.acting_s += time.perf_counter() - t_act
        o, m, a, bo, ba = (torch.from_numpy(np.stack(buf[k])).flatten(0, 1)
                           for k in ("obs", "masks", "act", "boot_obs", "boot_act"))
        t_len = len(buf["obs"])
        with torch.no_grad():
            q_tgt = taken(method.critic_target, o, a).view(t_len, b, n).numpy()
            last = taken(method.critic_target, torch.from_numpy(obs), torch.from_numpy(act))
            boot = taken(method.critic_target, bo, ba).view(t_len, b, n).numpy()
        boot *= np.stack(buf["timeout"])[..., None]
        nxt = np.concatenate([q_tgt[1:], last.numpy()[None]], axis=0)
        targets = lambda_returns(np.stack(buf["rew"]), np.stack(buf["done"]), boot, nxt,
                                 tc.gamma, lam)
        # critic: regress the taken action's value onto the TD(lambda) target
        q_all = method.critic(o, a)
        q_taken = chosen(q_all, a)
        critic_loss = nn.functional.mse_loss(q_taken, torch.from_numpy(targets).view(-1, n))
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.clip_grad_norm(tc.grad_clip)
        critic_opt.step()
        # actor: counterfactual advantage under the current policy
        probs = masked_probs(method.actor(o), m)
        q_all = q_all.detach()
        adv = chosen(q_all, a) - (probs.detach() * q_all).sum(-1)
        # forced steps (one valid action) carry no decision: normalise over real choices only,
        # so the step size does not scale with the critic's error on ~200-point returns
        choice = m.sum(-1) > 1
        if choice.any():
            sel = adv[choice]
            adv = (adv - sel.mean()) / (sel.std(unbiased=False) + 1e-6) * choice
        logp = torch.log(chosen(probs, a).clamp(min=1e-10))
        entropy = -(probs * torch.log(probs.clamp(min=1e-10))).sum(-1)
        actor_loss = -(adv * logp).mean() - ent_coef * entropy.mean()
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.clip_grad_norm(tc.grad_clip)
        actor_opt.step()
        updates += 1
        evals.note({"loss/actor": actor_loss.item(), "loss/critic": critic_loss.item(),
                    "explore/entropy": entropy.mean().item(), "explore/epsilon": eps})
        if updates % target_every == 0:
            method.sync_target()
    return evals.finish(steps, updates)
