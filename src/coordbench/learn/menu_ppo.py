"""PPO for teams on the household engine (household and construct tasks), one readable file.

The environment is `envs.household.vec.HouseholdVecEnv`, the batched household engine with
`HouseholdParallelEnv`'s menus, masks, features and rewards: each agent picks an entry of its
action menu, seeing every entry's features (`envs.household.menu`). One network,
shared by every agent and every entry, scores an entry from its features (a pointer over the
menu, so the same weights serve instances whose menus differ in size and order); masked
entries get probability exactly 0. The critic embeds every entry, averages the embeddings of
the agent's plausible entries and maps that to the value of the team reward, one value per
agent (shared weights). Every agent is trained on the team reward.

The loop (CleanRL style): roll out `rollout` team steps of `num_envs` environments (one batch),
sampling from the policy; GAE(lambda) advantages (time-outs bootstrap from the last state's
value, terminal states do not); `epochs` passes of clipped-surrogate updates over shuffled
minibatches of agent-steps, with a value loss and an entropy bonus; Adam, gradients clipped.
`train` returns the learning curve (mean greedy success and completion on held-out tasks) and
the network; `save`/`load` keep it with its settings. Training episodes use potential-based
shaping (held, unplaced goal objects count half a placement) and twice the task's budget;
evaluation uses neither: the task's own budget and the completion rate.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from coordbench.envs.household.menu import N_FEATURES
from coordbench.envs.household.pettingzoo_env import Episode
from coordbench.envs.household.vec import HouseholdVecEnv
from coordbench.errors import ConfigError
from coordbench.learn.snapshot import Snapshots


@dataclass
class MenuPPOConfig:
    """Settings of one training run (recorded in its checkpoint)."""

    steps: int = 40_000  # team steps over all environments
    num_envs: int = 8
    rollout: int = 64
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    epochs: int = 4
    minibatches: int = 4
    entropy: float = 0.01
    value_coef: float = 0.5
    grad_clip: float = 0.5
    hidden: int = 64
    eval_every: int = 10_000
    shaping: float = 0.5  # potential for held, unplaced goal objects (pettingzoo_env)
    budget_scale: float = 2.0  # training episodes get this many times the task's budget
    seed: int = 0


class EntryScorer(nn.Module):
    """Actor: one logit per menu entry from its features. Critic: the masked mean of the
    entries' embeddings -> the value of the agent's state."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.Tanh(),
                                   nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.embed = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.Tanh())
        self.value = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (masked logits (..., K), values (...)) for features (..., K, F)."""
        logits = self.actor(obs).squeeze(-1).masked_fill(mask == 0, -1e9)
        m = mask.unsqueeze(-1).float()
        pooled = (self.embed(obs) * m).sum(-2) / m.sum(-2).clamp(min=1.0)
        return logits, self.value(pooled).squeeze(-1)


def greedy_actions(net: EntryScorer, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Return each agent's highest-scoring plausible entry (argmax of the masked logits)."""
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(obs), torch.from_numpy(mask))
    return logits.argmax(-1).numpy()


def evaluate_each(net: EntryScorer, episodes: list[Episode], n_agents: int,
                  conflict_set: str, household: bool, seed: int = 0
                  ) -> tuple[list[float], list[float]]:
    """Return (success, final completion) of one greedy episode per task of `episodes`, all
    played at once in one batch."""
    env = HouseholdVecEnv(episodes, n_agents, batch=len(episodes), seed=seed,
                          conflict_set=conflict_set, household=household, autoreset=False)
    obs, mask = env.reset(tasks=np.arange(len(episodes)))
    ok, comp = np.zeros(len(episodes)), np.zeros(len(episodes))
    live = np.ones(len(episodes), np.bool_)
    while live.any():
        obs, mask, _, info = env.step(greedy_actions(net, obs, mask), active=live)
        ended = live & (info["terminated"] | info["truncated"])
        ok[ended] = info["terminated"][ended]
        comp[ended] = info["completion"][ended]
        live &= ~ended
    return ok.tolist(), comp.tolist()


def evaluate(net: EntryScorer, episodes: list[Episode], n_agents: int, conflict_set: str,
             household: bool, seed: int = 0) -> dict[str, float]:
    """Return greedy success and final completion, averaged over `episodes` (one each)."""
    ok, comp = evaluate_each(net, episodes, n_agents, conflict_set, household, seed)
    return {"success": sum(ok) / len(ok), "completion": sum(comp) / len(comp)}


def train(cfg: MenuPPOConfig, train_eps: list[Episode], eval_eps: list[Episode],
          n_agents: int, conflict_set: str = "with_close", household: bool = False,
          log: Any = None, snapshots: Any = None) -> tuple[EntryScorer, dict[str, Any]]:
    """Train on `train_eps`; return (the network, {"curve", "final", "wall_s", ...}). With
    `snapshots` (learn/snapshot.py) training saves its state as it goes and continues from
    the last snapshot when there is one."""
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    env = HouseholdVecEnv(train_eps, n_agents, batch=cfg.num_envs, seed=cfg.seed,
                          conflict_set=conflict_set, household=household,
                          shaping=cfg.shaping, budget_scale=cfg.budget_scale)
    net = EntryScorer(cfg.hidden)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-5)
    E, T, n, K = cfg.num_envs, cfg.rollout, n_agents, env.size
    obs_buf = np.zeros((T, E, n, K, N_FEATURES), np.float32)
    mask_buf = np.zeros((T, E, n, K), np.int8)
    act_buf = np.zeros((T, E, n), np.int64)
    logp_buf = np.zeros((T, E, n), np.float32)
    val_buf = np.zeros((T, E, n), np.float32)
    rew_buf = np.zeros((T, E), np.float32)
    done_buf = np.zeros((T, E), np.float32)  # terminal (no bootstrap)
    cut_buf = np.zeros((T, E), np.float32)  # episode ended (time-out or terminal)
    boot_buf = np.zeros((T, E, n), np.float32)  # the value a time-out bootstraps from

    o, m = (x.copy() for x in env.reset())
    curve: list[dict[str, float]] = []
    start, done_steps, next_eval = time.perf_counter(), 0, cfg.eval_every
    # training scalars since the last evaluation (tag -> [sum, count]): logged as means
    notes: dict[str, list[float]] = {}
    snaps = Snapshots(snapshots, cfg)
    if (s := snaps.load()) is not None:
        net, opt, env, o, m, curve, done_steps, next_eval = (s[k] for k in (
            "net", "opt", "env", "o", "m", "curve", "done_steps", "next_eval"))
        np.random.set_state(s["np_rng"])
        start = time.perf_counter() - s["elapsed"]
        notes = s.get("notes", {})
    while done_steps < cfg.steps:
        if snaps.due():
            snaps.save({"net": net, "opt": opt, "env": env, "o": o, "m": m, "curve": curve,
                        "done_steps": done_steps, "next_eval": next_eval,
                        "np_rng": np.random.get_state(),
                        "elapsed": time.perf_counter() - start, "notes": notes})
        for t in range(T):
            with torch.no_grad():
                logits, values = net(torch.from_numpy(o), torch.from_numpy(m))
                dist = torch.distributions.Categorical(logits=logits)
                acts = dist.sample()
                logp = dist.log_prob(acts)
            obs_buf[t], mask_buf[t], act_buf[t] = o, m, acts.numpy()
            logp_buf[t], val_buf[t] = logp.numpy(), values.numpy()
            nxt_o, nxt_m, rew, info = env.step(act_buf[t])
            rew_buf[t] = rew
            done_buf[t] = info["terminated"]
            cut_buf[t] = info["terminated"] | info["truncated"]
            if info["truncated"].any():  # time-outs bootstrap from what they saw last
                timed_out = info["truncated"][info["final_rows"]]
                rows = info["final_rows"][timed_out]
                with torch.no_grad():
                    _, v = net(torch.from_numpy(info["final_features"][timed_out]),
                               torch.from_numpy(info["final_masks"][timed_out]))
                boot_buf[t, rows] = v.numpy()
            o, m = nxt_o.copy(), nxt_m.copy()
        done_steps += T * E
        with torch.no_grad():
            _, last = net(torch.from_numpy(o), torch.from_numpy(m))
        adv = np.zeros((T, E, n), np.float32)
        gae = np.zeros((E, n), np.float32)
        nxt_val = last.numpy()
        for t in reversed(range(T)):
            cont = (1.0 - cut_buf[t])[:, None]
            target_next = np.where(cut_buf[t][:, None] > 0,
                                   (1.0 - done_buf[t])[:, None] * boot_buf[t], nxt_val)
            delta = rew_buf[t][:, None] + cfg.gamma * target_next - val_buf[t]
            gae = delta + cfg.gamma * cfg.gae_lambda * cont * gae
            adv[t] = gae
            nxt_val = val_buf[t]
        ret = adv + val_buf
        b_obs = torch.from_numpy(obs_buf.reshape(-1, K, N_FEATURES))
        b_mask = torch.from_numpy(mask_buf.reshape(-1, K))
        b_act = torch.from_numpy(act_buf.reshape(-1))
        b_logp = torch.from_numpy(logp_buf.reshape(-1))
        b_adv = torch.from_numpy(adv.reshape(-1))
        b_ret = torch.from_numpy(ret.reshape(-1))
        size = b_act.shape[0]
        mb = max(1, size // cfg.minibatches)
        for _ in range(cfg.epochs):
            order = torch.randperm(size)
            for s in range(0, size, mb):
                idx = order[s:s + mb]
                logits, v = net(b_obs[idx], b_mask[idx])
                dist = torch.distributions.Categorical(logits=logits)
                ratio = (dist.log_prob(b_act[idx]) - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)).mean()
                v_loss, ent = ((v - b_ret[idx]) ** 2).mean(), dist.entropy().mean()
                loss = pg + cfg.value_coef * v_loss - cfg.entropy * ent
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
                opt.step()
                for tag, x in (("loss/policy", pg), ("loss/value", v_loss),
                               ("explore/entropy", ent)):
                    acc = notes.setdefault(tag, [0.0, 0])
                    acc[0] += x.item()
                    acc[1] += 1
        if done_steps >= next_eval or done_steps >= cfg.steps:
            next_eval += cfg.eval_every
            res = evaluate(net, eval_eps, n_agents, conflict_set, household, cfg.seed)
            row = {"step": float(done_steps), **res, "wall_s": time.perf_counter() - start}
            curve.append(row)
            if log is not None:
                # the curve keeps the evaluation; the log also gets the training scalars
                log({**row, "speed/steps_per_s": done_steps / max(row["wall_s"], 1e-9),
                     **{tag: total / n for tag, (total, n) in notes.items() if n}})
            notes = {}
    wall = time.perf_counter() - start
    return net, {"config": asdict(cfg), "curve": curve, "final": curve[-1] if curve else {},
                 "wall_s": wall, "steps_per_s": done_steps / wall}


def save(path: Any, net: EntryScorer, meta: dict[str, Any]) -> None:
    """Write the network's weights with `meta` (settings, family) to `path`."""
    torch.save({"state_dict": net.state_dict(), "meta": meta}, path)


def load_cached(path: str) -> tuple[EntryScorer, dict[str, Any]]:
    """Return `load(path)`, read once per process and file version (episodes of a condition
    share it; a file rewritten since is read again)."""
    p = Path(path)
    st = p.stat() if p.is_file() else None
    return _load_version(str(path), st.st_mtime_ns if st else 0, st.st_size if st else 0)


@functools.lru_cache(maxsize=8)
def _load_version(path: str, mtime_ns: int, size: int) -> tuple[EntryScorer, dict[str, Any]]:
    return load(path)


def load(path: Any) -> tuple[EntryScorer, dict[str, Any]]:
    """Return (the network, its meta) from a checkpoint written by `save`."""
    if Path(path).is_dir():
        raise ConfigError(f"checkpoint {path} is a folder, not a checkpoint file (a learned "
                          "construct team of `constructs train`)")
    if not Path(path).is_file():
        raise ConfigError(f"checkpoint {path} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises pickle, zip, runtime errors alike
        raise ConfigError(f"{path} is not a learned team's checkpoint (it cannot be read "
                          f"as one: {type(e).__name__})") from None
    if not isinstance(data, dict) or "meta" not in data or "state_dict" not in data:
        raise ConfigError(f"{path} is not a learned team's checkpoint (coordbench constructs "
                          "train writes them)")
    net = EntryScorer(int(data["meta"]["config"]["hidden"]))
    net.load_state_dict(data["state_dict"])
    net.eval()
    return net, data["meta"]
