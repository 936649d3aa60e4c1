"""MAPPO and IPPO (Yu et al. 2022; de Witt et al. 2020): on-policy PPO for STAT, one loop.

Both methods share the actor: one network over [state, agent id] (`agent_network`, so
`--arch pair` works too) giving logits for 3+m actions; invalid actions are masked out of the
softmax (probability exactly 0) when sampling and when computing log-probabilities and
entropy. Greedy evaluation takes the masked argmax. They differ only in the critic:

- MAPPO: a centralised critic V(s) over the global state, one value for the team, used as
  the baseline of every agent.
- IPPO: decentralised critics V_i(s, i), one value head per agent (one network shared over
  agents with a one-hot id, like the actor). STAT gives every agent the global state, so
  both critics see the same input; IPPO's heads are free to differ, MAPPO's cannot.

With `--arch pair-seq` the actor is sequential: agents decide in index order, each seeing the
tasks the lower-index agents picked this step (`decide`), so the team's policy factorises as
prod_i pi(a_i | s, a_<i) and each agent's log-probability (sampled and trained) is its
conditional one.

Every agent is trained on the team reward (the env's reward). The loop (CleanRL style):

1. Roll out `rollout` steps of `num_envs` environments with the sampling policy (no epsilon:
   sampling explores). Time-outs (the episode limit) bootstrap from the value of the last
   state; terminal states ("every task completed") do not.
2. GAE(lambda) advantages and returns (`gae`).
3. `epochs` passes over the rollout in `minibatches` shuffled minibatches of states: clipped
   surrogate objective, value loss (clipped around the rollout's values unless
   `clip_value` is False), entropy bonus, one Adam step each, gradient norm clipped at
   tc.grad_clip.

Advantages are normalised over decision steps only (an agent with more than one valid action):
forced steps carry no decision, so they get advantage 0 and are left out of the policy and
entropy averages (COMA does the same). The critic predicts normalised returns: a running mean
and variance of the return targets (buffers of the critic, so checkpoints carry them) keep the
value loss O(1) whatever the return scale (about 200 on the small configs, over 10,000 on
5A-100T-50x30), as MAPPO's value normalisation does.

Hyperparameters (tc.extra, defaults in `PPOSettings`): rollout 32 steps, epochs 10,
minibatches 4, clip 0.2, gae_lambda 0.95, entropy 0.01, value_coef 0.5, clip_value True,
critic_hidden 128, anneal_lr False (True: the learning rate falls linearly from tc.lr to 0
over the run, as CleanRL's PPO does by default, so the last policies change less between
evaluations). Learning rate in registry.METHOD_DEFAULTS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
from torch import nn

from coordbench.envs.stat.config import EXECUTE, MOVE, SELECT0
from coordbench.envs.stat.memory import ObservationMemory
from coordbench.envs.stat.vec import StatVecEnv

from .coma import masked_probs
from .core import (
    EvalSchedule,
    FlatAdam,
    SharedAgentQ,
    TrainConfig,
    agent_network,
    choice_rows,
    env_config,
    input_width,
    masked_greedy,
    mlp,
    one_thread,
    uses_memory,
)
from .snapshot import Snapshots, adopt


@dataclass(frozen=True)
class PPOSettings:
    """PPO's knobs, read from tc.extra (anything not given keeps these defaults)."""

    rollout: int = 32  # steps per environment between updates
    epochs: int = 10  # passes over each rollout
    minibatches: int = 4  # minibatches per pass (over states; each carries every agent)
    clip: float = 0.2  # PPO ratio clip (and the value clip, in normalised units)
    gae_lambda: float = 0.95
    entropy: float = 0.01
    value_coef: float = 0.5
    clip_value: bool = True
    critic_hidden: int = 128
    anneal_lr: bool = False  # decay the learning rate linearly to 0 over the run (CleanRL's)

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> PPOSettings:
        """Return the settings in `extra` over the defaults, each cast to its field's type."""
        out = {}
        for f in fields(cls):
            if f.name in extra:
                kind = type(getattr(cls, f.name))
                out[f.name] = kind(extra[f.name])
        return cls(**out)


class Critic(nn.Module):
    """Values (B, n) of global states (B, D) in normalised units: V(s) expanded to every agent
    (centralised, MAPPO) or V_i(s, i) per agent (IPPO)."""

    def __init__(self, obs_dim: int, n: int, hidden: int, centralised: bool) -> None:
        super().__init__()
        self.n, self.centralised = n, centralised
        self.net = mlp(obs_dim, hidden, 1) if centralised else SharedAgentQ(obs_dim, n, 1, hidden)
        # running statistics of the return targets (float64: counts reach 10^8 on long runs)
        self.register_buffer("ret_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("ret_var", torch.ones((), dtype=torch.float64))
        self.register_buffer("ret_count", torch.zeros((), dtype=torch.float64))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Return normalised values (B, n)."""
        v = self.net(obs)
        return v.expand(-1, self.n) if self.centralised else v.squeeze(-1)

    def _scale(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ret_mean.float(), self.ret_var.sqrt().clamp(min=1e-4).float()

    def denormalize(self, v: torch.Tensor) -> torch.Tensor:
        """Return values in return units for normalised values `v`."""
        mean, std = self._scale()
        return v * std + mean

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Return returns `x` in the critic's normalised units."""
        mean, std = self._scale()
        return (x - mean) / std

    def update_stats(self, x: torch.Tensor) -> None:
        """Fold a batch of return targets into the running mean and variance."""
        x = x.double().flatten()
        k, mean, var = x.numel(), x.mean(), x.var(unbiased=False)
        total = self.ret_count + k
        delta = mean - self.ret_mean
        if self.ret_count == 0:
            self.ret_var.copy_(var)
        else:  # Chan et al.'s parallel update
            m2 = self.ret_var * self.ret_count + var * k + delta ** 2 * self.ret_count * k / total
            self.ret_var.copy_(m2 / total)
        self.ret_mean.add_(delta * k / total)
        self.ret_count.copy_(total)


class PPO:
    """Actor and critic; trained by `train` below (on-policy, no replay, no target network)."""

    on_policy = True
    centralised_critic = True

    def __init__(self, obs_dim: int, n: int, actions: int, tc: TrainConfig) -> None:
        hp = PPOSettings.from_extra(tc.extra)
        self.actor = agent_network(obs_dim, n, actions, tc)
        self.memory = uses_memory(tc)  # obs_dim then counts the memory's features too
        self.critic = Critic(obs_dim, n, hp.critic_hidden, self.centralised_critic)

    def greedy(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Return each agent's most probable valid action (B, n) (a sequential actor's in
        index order, each given the lower agents' choices)."""
        if getattr(self.actor, "sequential", False):
            return decide(self.actor, obs, masks, most_probable)[0]
        return masked_greedy(self.actor, obs, masks)

    def networks(self) -> dict[str, nn.Module]:
        """Return the actor and the critic by name (what a checkpoint stores)."""
        return {"actor": self.actor, "critic": self.critic}

    def parameters(self) -> list[nn.Parameter]:
        """Return the trainable parameters of the actor and the critic."""
        return [p for net in self.networks().values() for p in net.parameters()]

    def sync_target(self) -> None:
        """Do nothing: PPO has no target network."""


class MAPPO(PPO):
    """PPO with a centralised critic V(s) shared by every agent."""

    centralised_critic = True


class IPPO(PPO):
    """PPO with a decentralised critic V_i(s, i) per agent."""

    centralised_critic = False


def masked_log_probs(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Return log-probabilities of the masked softmax (off-mask entries about -1e9, never
    NaN; the valid entries are exact log-softmax values over the valid actions)."""
    return torch.log_softmax(logits.masked_fill(~masks, -1e9), dim=-1)


def gae(rewards: np.ndarray, values: np.ndarray, last_values: np.ndarray, boot: np.ndarray,
        terminated: np.ndarray, truncated: np.ndarray, gamma: float,
        lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Return GAE(lambda) advantages and return targets (advantage + value), both (T, B, n).

    rewards, terminated, truncated (T, B): step t's team reward and how it ended its episode;
    values (T, B, n): V(s_t) in return units; last_values (B, n): V of the state after the
    rollout; boot (T, B, n): V of the last state of an episode that step t timed out (read only
    where truncated and not terminated). A terminal step bootstraps from 0, a time-out from
    `boot`; the lambda-chain stops at either, since the next row is a new episode.
    """
    steps = len(rewards)
    adv = np.zeros_like(values)
    running = np.zeros_like(last_values)
    for t in range(steps - 1, -1, -1):
        nxt = values[t + 1] if t + 1 < steps else last_values
        done = (terminated[t] | truncated[t])[:, None]
        timeout = (truncated[t] & ~terminated[t])[:, None]
        nxt = np.where(done, np.where(timeout, boot[t], 0.0), nxt)
        delta = rewards[t][:, None] + gamma * nxt - values[t]
        running = delta + gamma * lam * np.where(done, 0.0, running)
        adv[t] = running
    return adv, adv + values


def claims_of(actions: torch.Tensor, m: int) -> torch.Tensor:
    """Return (..., n, m) floats: 1.0 where an agent of lower index than i takes SELECT(j) in
    the joint actions (..., n)."""
    picked = nn.functional.one_hot((actions - SELECT0 + 1).clamp(min=0), m + 1)[..., 1:]
    return ((picked.cumsum(-2) - picked) > 0).float()


def row_claims(joint: torch.Tensor, agents: torch.Tensor, m: int) -> torch.Tensor:
    """Return (R, m): `claims_of` joint action joint[r] (R, n) for agent agents[r]."""
    return claims_of(joint, m)[torch.arange(len(agents)), agents]


def decide(actor: nn.Module, obs: torch.Tensor, masks: torch.Tensor, choose
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Return joint actions (B, n) and their log-probabilities, `choose(logits, masks) ->
    (actions, log-probs)` deciding for the agents with a choice.

    Every other agent takes its one valid action, with log-probability exactly 0 (as the full
    masked softmax gives it). A sequential actor is asked agent by agent in index order, each
    agent given the tasks picked by the agents before it (forced picks included); any other
    actor scores every agent with a choice at once."""
    draws = masks.float().argmax(dim=-1)
    logp = torch.zeros(draws.shape)
    rows = choice_rows(masks)
    if not rows[0].numel():
        return draws, logp
    sequential = getattr(actor, "sequential", False)
    groups = ([(rows[0][rows[1] == i], rows[1][rows[1] == i]) for i in range(masks.shape[1])]
              if sequential else [rows])
    for rb, ri in groups:
        if not rb.numel():
            continue
        if sequential:
            logits = actor(obs, (rb, ri), row_claims(draws[rb], ri, masks.shape[-1] - SELECT0))
        else:
            logits = actor(obs, (rb, ri))
        a, lp = choose(logits, masks[rb, ri])
        draws[rb, ri] = a
        logp[rb, ri] = lp
    return draws, logp


def most_probable(logits: torch.Tensor, masks: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Return the valid argmax of each row and its log-probability."""
    a = logits.masked_fill(~masks, -1e9).argmax(dim=-1)
    return a, masked_log_probs(logits, masks).gather(-1, a.unsqueeze(-1)).squeeze(-1)


def sample(actor: nn.Module, obs: torch.Tensor, masks: torch.Tensor,
           gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Return actions drawn from the masked softmax (B, n) and their log-probabilities.

    Only the agents with a choice are scored and drawn (in index order for a sequential
    actor: `decide`); every other agent takes its one valid action, with log-probability
    exactly 0."""

    def draw(logits: torch.Tensor, mr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = torch.multinomial(masked_probs(logits, mr), 1, generator=gen)
        return d.squeeze(-1), masked_log_probs(logits, mr).gather(-1, d).squeeze(-1)

    return decide(actor, obs, masks, draw)


def policy_terms(actor: nn.Module, obs: torch.Tensor, masks: torch.Tensor, act: torch.Tensor,
                 old_logp: torch.Tensor, adv: torch.Tensor, idx: torch.Tensor,
                 clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Return the clipped-surrogate policy loss and the mean entropy over the decisions of
    states `idx` (agents with one valid action carry no decision and are not scored)."""
    rows = choice_rows(masks[idx])
    if not rows[0].numel():
        zero = torch.zeros(())
        return zero, zero
    at = (idx[rows[0]], rows[1])
    if getattr(actor, "sequential", False):  # each agent given the lower agents' actions
        logits = actor(obs, at, row_claims(act[at[0]], at[1], masks.shape[-1] - SELECT0))
    else:
        logits = actor(obs, at)
    mr, a = masks[at], adv[at]
    logp_all = masked_log_probs(logits, mr)
    ratio = torch.exp(logp_all.gather(-1, act[at].unsqueeze(-1)).squeeze(-1) - old_logp[at])
    surrogate = torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a)
    entropy = -(masked_probs(logits, mr) * logp_all).sum(-1)
    return -surrogate.mean(), entropy.mean()


def train(tc: TrainConfig, method: PPO, log=None, snapshots=None) -> dict[str, Any]:
    """Train MAPPO or IPPO under `tc`; return the evaluation curve and summary numbers (as
    core.train, snapshots included; `updates` counts Adam steps, acting time covers
    collecting the rollouts)."""
    one_thread()
    torch.manual_seed(tc.seed)
    gen = torch.Generator().manual_seed(tc.seed)
    cfg = env_config(tc)
    hp = PPOSettings.from_extra(tc.extra)
    env = StatVecEnv(cfg, tc.num_envs, layouts="uniform", seed=tc.seed + 10_000)
    params = method.parameters()
    opt = FlatAdam(params, tc.lr)
    mem = ObservationMemory(cfg, tc.num_envs) if method.memory else None

    def seen() -> np.ndarray:  # what the agents read now: a copy, the env reuses its arrays
        return mem.observe(env) if mem is not None else env.obs.copy()

    env.reset()
    obs, masks = seen(), env.masks.copy()
    n, b, a_dim, t_len = cfg.agents, tc.num_envs, cfg.num_actions, hp.rollout
    width = input_width(tc)
    steps = updates = 0
    evals = EvalSchedule(tc, method, cfg, log)
    critic = method.critic

    def values(o: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return critic.denormalize(critic(torch.from_numpy(o))).numpy()

    snaps = Snapshots(snapshots, tc)
    if (s := snaps.load()) is not None:
        adopt(method, s["method"])
        opt, env, mem, obs, masks, steps, updates, evals = (s[k] for k in (
            "opt", "env", "mem", "obs", "masks", "steps", "updates", "evals"))
        gen.set_state(s["gen"])
        critic = method.critic
        evals.log, evals.resumed_from_step = log, steps
    while steps < tc.total_steps:
        if snaps.due():
            snaps.save({"method": method, "opt": opt, "env": env, "mem": mem,
                        "obs": obs, "masks": masks, "steps": steps,
                        "updates": updates, "evals": evals, "gen": gen.get_state()})
        evals.maybe(steps)
        if hp.anneal_lr:  # the fraction of the run still to come, at this rollout's start
            for group in opt.param_groups:
                group["lr"] = tc.lr * (1.0 - steps / tc.total_steps)
        buf = {"obs": np.zeros((t_len, b, width), np.float32),
               "masks": np.zeros((t_len, b, n, a_dim), np.bool_),
               "act": np.zeros((t_len, b, n), np.int64),
               "logp": np.zeros((t_len, b, n), np.float32),
               "val": np.zeros((t_len, b, n), np.float32),
               "boot": np.zeros((t_len, b, n), np.float32),
               "rew": np.zeros((t_len, b), np.float32),
               "term": np.zeros((t_len, b), np.bool_),
               "trunc": np.zeros((t_len, b), np.bool_)}
        t_act = time.perf_counter()  # acting: sampling, the rollout's values, stepping
        for t in range(t_len):
            o, m = torch.from_numpy(obs), torch.from_numpy(masks)
            with torch.no_grad():
                draws, logp = sample(method.actor, o, m, gen)
                buf["logp"][t] = logp.numpy()
                buf["val"][t] = critic.denormalize(critic(o)).numpy()
            buf["obs"][t], buf["masks"][t], buf["act"][t] = obs, masks, draws.numpy()
            _, nmasks, reward, info = env.step(buf["act"][t])
            buf["rew"][t], buf["term"][t], buf["trunc"][t] = reward, info.terminated, info.truncated
            timeout = np.flatnonzero(info.truncated & ~info.terminated)
            if len(timeout):  # the episode goes on beyond the limit: bootstrap from its last state
                last = np.stack([info.final_obs[int(e)] for e in timeout])
                if mem is not None:  # before seen() forgets the ended episodes
                    # an agent holding a pick has MOVE or EXECUTE valid, never otherwise
                    held = np.stack([info.final_masks[int(e)][:, [MOVE, EXECUTE]].any(-1)
                                     for e in timeout])
                    last = mem.final_rows(last, timeout, held)
                buf["boot"][t, timeout] = values(last)
            obs, masks = seen(), nmasks.copy()
            steps += b
        evals.acting_s += time.perf_counter() - t_act
        adv, ret = gae(buf["rew"], buf["val"], values(obs), buf["boot"], buf["term"],
                       buf["trunc"], tc.gamma, hp.gae_lambda)
        o, m, act, old_logp, old_v, adv, ret = (
            torch.from_numpy(np.ascontiguousarray(x)).flatten(0, 1) for x in (
                buf["obs"], buf["masks"], buf["act"], buf["logp"], buf["val"], adv, ret))
        # forced steps (one valid action) carry no decision: normalise over real choices only
        choice = m.sum(-1) > 1
        if choice.any():
            sel = adv[choice]
            adv = (adv - sel.mean()) / (sel.std(unbiased=False) + 1e-8)
        critic.update_stats(ret)
        ret_n, old_v_n = critic.normalize(ret), critic.normalize(old_v)
        for _ in range(hp.epochs):
            for idx in torch.randperm(len(o), generator=gen).chunk(hp.minibatches):
                pg_loss, ent = policy_terms(method.actor, o, m, act, old_logp, adv, idx, hp.clip)
                v = critic(o[idx])
                v_loss = (v - ret_n[idx]) ** 2
                if hp.clip_value:
                    v_clip = old_v_n[idx] + (v - old_v_n[idx]).clamp(-hp.clip, hp.clip)
                    v_loss = torch.max(v_loss, (v_clip - ret_n[idx]) ** 2)
                loss = pg_loss - hp.entropy * ent + hp.value_coef * 0.5 * v_loss.mean()
                opt.zero_grad()
                loss.backward()
                opt.clip_grad_norm(tc.grad_clip)
                opt.step()
                updates += 1
                evals.note({"loss/policy": pg_loss.item(), "loss/value": v_loss.mean().item(),
                            "explore/entropy": ent.item()})
    return evals.finish(steps, updates)
