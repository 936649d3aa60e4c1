"""The shared batched core of the STAT learners.

vectorized env -> masked epsilon-greedy -> replay -> learner -> periodic greedy evaluation.
A method module supplies the networks and the loss; everything else is here, once.

Every knob is a field of `TrainConfig`. `utd` (update-to-data ratio) = transitions replayed
per environment transition collected: the paper's learners replay about 32 per step; a lower
ratio trains faster per wall-clock second (documented trade-off, measured in benchmarks).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from coordbench.envs.stat.config import StatConfig, get_config
from coordbench.envs.stat.layouts import paper_layout
from coordbench.envs.stat.memory import memory_of, width
from coordbench.envs.stat.vec import StatVecEnv, steps
from coordbench.metrics.stat import StatEpisodeArrays, episode_metrics

from .snapshot import Snapshots, adopt


@dataclass
class TrainConfig:
    """Every hyperparameter of a training run (paper Table 4 defaults where it gives one)."""

    config: str = "3A-6T-5x3"
    algo: str = "qmix"
    seed: int = 0
    total_steps: int = 2_000_000  # environment steps (transitions of one env)
    num_envs: int = 32  # environments stepped together
    lr: float = 1e-3
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_frac: float = 0.2  # fraction of total_steps over which epsilon decays linearly
    buffer_size: int = 100_000  # transitions
    batch_size: int = 128
    utd: float = 1.0  # transitions replayed per transition collected
    learning_starts: int = 2_000
    target_every: int = 500  # learner updates between target-network copies
    hidden: int = 64
    grad_clip: float = 10.0
    eval_every: int = 10_000  # environment steps between greedy evaluations
    eval_episodes: int = 20  # paper evaluation layouts seed*1000 + i
    extra: dict[str, Any] = field(default_factory=dict)


def one_thread() -> None:
    """Use one math thread: on these machines two threads are several times slower."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    torch.set_num_threads(1)


def adam(params, lr: float) -> torch.optim.Adam:
    """Return Adam over `params` with torch's fused CPU kernel.

    Same update rule as the default per-tensor loop, computed in one kernel for all
    tensors: 1.1-1.3x faster end-to-end Q-learning at utd 8 (benchmarks/stat_adam.py).
    Its float rounding differs, so a seeded run need not repeat the loop version's
    numbers exactly."""
    return torch.optim.Adam(params, lr=lr, fused=True)


class FlatAdam:
    """Fused Adam over a method's parameters held as views into one flat tensor.

    The update is elementwise, so one flat tensor gets exactly the per-tensor update; what
    changes is the bookkeeping: zeroing, the gradient norm and Adam's step each run once on
    one tensor instead of once per parameter tensor (26 of them for QMIX), a per-call cost
    that weighs on the small STAT networks (benchmarks/stat_update_speed.py). Backward
    accumulates into the existing `.grad` views in place, so the flat gradient fills itself.
    Loading a state dict copies into the views, which keeps them attached."""

    def __init__(self, params, lr: float) -> None:
        params = [p for p in params if p.requires_grad]
        total = sum(p.numel() for p in params)
        self.flat = torch.nn.Parameter(torch.zeros(total))
        self.flat.grad = torch.zeros(total)
        offset = 0
        for p in params:
            k = p.numel()
            self.flat.data[offset:offset + k].copy_(p.detach().reshape(-1))
            p.data = self.flat.data[offset:offset + k].view_as(p)
            p.grad = self.flat.grad[offset:offset + k].view_as(p)
            offset += k
        self.opt = adam([self.flat], lr)
        self.param_groups = self.opt.param_groups
        self.params = params

    def __setstate__(self, state: dict[str, Any]) -> None:
        # torch.save keeps the parameters' data as views of `flat` but drops gradients:
        # give the flat tensor its gradient again and the parameters their views into it
        self.__dict__.update(state)
        if self.flat.grad is None:
            self.flat.grad = torch.zeros_like(self.flat.data)
            offset = 0
            for p in self.params:
                k = p.numel()
                p.grad = self.flat.grad[offset:offset + k].view_as(p)
                offset += k

    def zero_grad(self) -> None:
        """Zero every parameter's gradient (in place: the views stay attached)."""
        self.flat.grad.zero_()

    def clip_grad_norm(self, max_norm: float) -> torch.Tensor:
        """Scale the gradients to a total 2-norm of at most `max_norm`; return the norm."""
        # clip_grad_norm_'s formula for one tensor, without its per-call bookkeeping
        # (about 0.2 ms, as much as the rest of a small network's backward)
        norm = torch.linalg.vector_norm(self.flat.grad)
        self.flat.grad.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        return norm

    def step(self) -> None:
        """Apply one Adam step to every parameter."""
        self.opt.step()


class Method(Protocol):
    """What a method module provides to the core (off-policy methods also give `loss`)."""

    def greedy(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Return the greedy valid joint action (B, n) for global states (B, D)."""

    def networks(self) -> dict[str, torch.nn.Module]:
        """Return the online networks by name (what a checkpoint stores)."""

    def sync_target(self) -> None:
        """Copy the online networks into the target networks."""


def masked_argmax(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Return the argmax over valid actions (mask True) along the last axis."""
    return q.masked_fill(~mask, -1e9).argmax(dim=-1)


def choice_rows(masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Return the (state, agent) index tensors of the agents with more than one valid action
    (the others' actions are forced by the masks)."""
    return (masks.sum(-1) > 1).nonzero(as_tuple=True)


def masked_greedy(net: torch.nn.Module, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Return each agent's valid argmax of `net`'s per-agent outputs (B, n).

    Equal to `masked_argmax(net(obs), masks)`; a network that scores agent rows
    (`scores_rows`) is asked only for the agents with a choice, and every other agent takes
    its one valid action."""
    if not getattr(net, "scores_rows", False):
        return masked_argmax(net(obs), masks)
    out = masks.float().argmax(dim=-1)
    rows = choice_rows(masks)
    if rows[0].numel():
        out[rows] = masked_argmax(net(obs, rows), masks[rows])
    return out


def masked_max(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Return the max over valid actions along the last axis."""
    return q.masked_fill(~mask, -1e9).max(dim=-1).values


class Replay:
    """A circular buffer of transitions as preallocated arrays."""

    def __init__(self, size: int, obs_dim: int, n: int, a: int) -> None:
        self.size, self.pos, self.full = size, 0, False
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.masks = np.zeros((size, n, a), np.bool_)
        self.next_masks = np.zeros((size, n, a), np.bool_)
        self.actions = np.zeros((size, n), np.int64)
        self.rewards = np.zeros(size, np.float32)
        self.term = np.zeros(size, np.float32)

    _ARRAYS = ("obs", "next_obs", "masks", "next_masks", "actions", "rewards", "term")

    def __getstate__(self) -> dict[str, Any]:
        # a snapshot keeps only the rows written so far (the buffer is allocated whole)
        n = self.size if self.full else self.pos
        state = dict(self.__dict__)
        state.update({k: getattr(self, k)[:n].copy() for k in self._ARRAYS})
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for k in self._ARRAYS:
            rows = state[k]
            full = np.zeros((self.size, *rows.shape[1:]), rows.dtype)
            full[:len(rows)] = rows
            setattr(self, k, full)

    def add(self, obs, masks, actions, rewards, next_obs, next_masks, term) -> None:
        """Store a batch of transitions."""
        k = len(rewards)
        idx = (self.pos + np.arange(k)) % self.size
        self.obs[idx], self.masks[idx], self.actions[idx] = obs, masks, actions
        self.rewards[idx], self.next_obs[idx] = rewards, next_obs
        self.next_masks[idx], self.term[idx] = next_masks, term
        self.full |= self.pos + k >= self.size
        self.pos = (self.pos + k) % self.size

    def __len__(self) -> int:
        return self.size if self.full else self.pos

    def sample(self, k: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        """Return k random transitions as tensors."""
        idx = rng.integers(0, len(self), k)
        return {"obs": torch.from_numpy(self.obs[idx]), "masks": torch.from_numpy(self.masks[idx]),
                "actions": torch.from_numpy(self.actions[idx]),
                "rewards": torch.from_numpy(self.rewards[idx]),
                "next_obs": torch.from_numpy(self.next_obs[idx]),
                "next_masks": torch.from_numpy(self.next_masks[idx]),
                "term": torch.from_numpy(self.term[idx])}


def evaluate(method: Method, cfg: StatConfig, seed: int, episodes: int) -> dict[str, float]:
    """Return mean metrics of the method's greedy play on the paper layouts seed*1000 + i."""

    def act(env: StatVecEnv) -> np.ndarray:
        return greedy_actions(method, env)

    return evaluate_policy(act, cfg, seed, episodes)


def greedy_actions(method: Method, env: StatVecEnv) -> np.ndarray:
    """Return the method's greedy (B, n) actions in `env`'s current step, on the observation
    plus the memory's features (kept per env, envs/stat/memory.py) if the method reads them."""
    obs = env.obs
    if getattr(method, "memory", False):
        obs = memory_of(env).augment(env.obs, env.state.target)
    with torch.no_grad():
        return method.greedy(torch.from_numpy(obs), torch.from_numpy(env.masks)).numpy()


def evaluate_policy(act, cfg: StatConfig, seed: int, episodes: int) -> dict[str, float]:
    """Return mean metrics of `act(env) -> (B, n) actions` on the paper layouts seed*1000 + i
    (the paper's evaluation protocol; scripted allocators use it for reference rows)."""
    env = StatVecEnv(cfg, episodes, auto_reset=False)
    keys = [seed * 1000 + i for i in range(episodes)]
    env.reset(np.stack([paper_layout(cfg, s) for s in keys]))
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (
        "rewards", "conflicts", "forced_idle", "unique_assigned", "decision_pre",
        "decision_post", "completions", "active")}

    for active, _, _, reward, info in steps(env, act):
        cols["rewards"].append(reward.copy())
        cols["conflicts"].append(info.conflicts.copy())
        cols["forced_idle"].append(info.forced_idle.copy())
        cols["unique_assigned"].append(info.unique_assigned.copy())
        cols["decision_pre"].append(info.decision_pre.copy())
        cols["decision_post"].append(info.decision_post.copy())
        cols["completions"].append((info.completed_task >= 0).sum(axis=1))
        cols["active"].append(active)
    act_rows = np.stack(cols.pop("active"))
    stacked = {k: np.stack(v) for k, v in cols.items()}
    per_ep = []
    for b in range(episodes):
        rows = act_rows[:, b]
        per_ep.append(episode_metrics(StatEpisodeArrays(
            cfg.agents, cfg.tasks, *(stacked[k][rows, b].astype(np.float64) for k in (
                "rewards", "conflicts", "forced_idle", "unique_assigned", "decision_pre",
                "decision_post", "completions")))))
    means = {}
    for k in per_ep[0]:
        values = np.array([m[k] for m in per_ep], dtype=np.float64)
        # a diagnostic no episode defines (no decision step at all) stays NaN, without warning
        means[k] = float(np.nanmean(values)) if not np.isnan(values).all() else float("nan")
    return means


def train(tc: TrainConfig, method: Method, log=None, snapshots=None) -> dict[str, Any]:
    """Train `method` under `tc`; return the evaluation curve and summary numbers. With
    `snapshots` (a snapshot store: learn/snapshot.py) the run saves its state as it goes and
    continues from the last snapshot when there is one."""
    one_thread()
    torch.manual_seed(tc.seed)
    rng = np.random.default_rng(tc.seed)
    cfg = env_config(tc)
    env = StatVecEnv(cfg, tc.num_envs, layouts="uniform", seed=tc.seed + 10_000)
    buf = Replay(tc.buffer_size, cfg.obs_dim, cfg.agents, cfg.num_actions)
    opt = FlatAdam(method.parameters(), tc.lr)
    obs, masks = env.reset()
    obs, masks = obs.copy(), masks.copy()
    steps = updates = 0
    owed = 0.0
    evals = EvalSchedule(tc, method, cfg, log)
    snaps = Snapshots(snapshots, tc)
    if (s := snaps.load()) is not None:
        adopt(method, s["method"])
        opt, buf, env, rng, obs, masks, steps, updates, owed, evals = (s[k] for k in (
            "opt", "buf", "env", "rng", "obs", "masks", "steps", "updates", "owed", "evals"))
        evals.log, evals.resumed_from_step = log, steps
    while steps < tc.total_steps:
        if snaps.due():
            snaps.save({"method": method, "opt": opt, "buf": buf, "env": env,
                        "rng": rng, "obs": obs, "masks": masks, "steps": steps,
                        "updates": updates, "owed": owed, "evals": evals})
        evals.maybe(steps)
        eps = epsilon(tc, steps)
        evals.note({"explore/epsilon": eps})
        t_act = time.perf_counter()
        with torch.no_grad():
            greedy = method.greedy(torch.from_numpy(obs), torch.from_numpy(masks)).numpy()
        # joint-action methods explore jointly (the paper's DQN); the others per agent
        coin = (greedy.shape[0], 1) if getattr(method, "explore_jointly", False) else greedy.shape
        explore = rng.random(coin) < eps
        actions = np.where(explore, env.random_valid_actions(rng), greedy)
        nobs, nmasks, reward, info = env.step(actions)
        next_obs, next_masks = nobs.copy(), nmasks.copy()
        if len(info.final_obs):
            next_obs[info.final_obs.index] = info.final_obs.rows
            next_masks[info.final_masks.index] = info.final_masks.rows
        buf.add(obs, masks, actions, reward, next_obs, next_masks,
                info.terminated.astype(np.float32))  # truncation bootstraps
        obs, masks = nobs.copy(), nmasks.copy()
        steps += tc.num_envs
        evals.acting_s += time.perf_counter() - t_act
        if len(buf) >= tc.learning_starts:
            owed += tc.utd * tc.num_envs / tc.batch_size
            while owed >= 1:
                owed -= 1
                loss = method.loss(buf.sample(tc.batch_size, rng), tc.gamma)
                opt.zero_grad()
                loss.backward()
                opt.clip_grad_norm(tc.grad_clip)
                opt.step()
                updates += 1
                evals.note({"loss/train": loss.item()})
                if updates % tc.target_every == 0:
                    method.sync_target()
    return evals.finish(steps, updates)


def epsilon(tc: TrainConfig, steps: int) -> float:
    """Return the linearly decayed exploration rate after `steps` environment steps."""
    return max(tc.eps_end, tc.eps_start - (tc.eps_start - tc.eps_end) * steps /
               max(1.0, tc.eps_frac * tc.total_steps))


class EvalSchedule:
    """Greedy evaluation every `eval_every` environment steps, and the run's summary."""

    def __init__(self, tc: TrainConfig, method: Method, cfg: StatConfig, log=None) -> None:
        self.tc, self.method, self.cfg, self.log = tc, method, cfg, log
        self.curve: list[dict[str, float]] = []
        self.walls: list[float] = []  # seconds since the start, at each evaluation
        self.next = 0
        self.start = time.perf_counter()
        self.acting_s = 0.0  # the loop adds the time spent choosing actions and stepping
        self.eval_s = 0.0
        # training scalars since the last evaluation (tag -> [sum, count]), logged as means;
        # part of the snapshot, so a resumed run logs what an uninterrupted one does
        self.notes: dict[str, list[float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        # the log is the worker's; times restart from the elapsed seconds on resume
        state = dict(self.__dict__)
        state["log"] = None
        state["start"] = time.perf_counter() - self.start
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.start = time.perf_counter() - state["start"]

    def note(self, values: dict[str, float]) -> None:
        """Add training scalars by tag (a loss, an entropy, epsilon) to the means the next
        evaluation logs (they never enter the curve or the result)."""
        notes = self.__dict__.setdefault("notes", {})  # a snapshot from before notes
        for tag, v in values.items():
            acc = notes.setdefault(tag, [0.0, 0])
            acc[0] += float(v)
            acc[1] += 1

    def maybe(self, steps: int) -> None:
        """Evaluate if `steps` has reached the next checkpoint."""
        if steps >= self.next:
            self._eval(steps)
            self.next += self.tc.eval_every

    def _eval(self, steps: int) -> None:
        t0 = time.perf_counter()
        self.curve.append({"step": steps, **evaluate(self.method, self.cfg, self.tc.seed,
                                                     self.tc.eval_episodes)})
        self.walls.append(time.perf_counter() - self.start)
        self.eval_s += time.perf_counter() - t0
        notes = self.__dict__.setdefault("notes", {})
        if self.log:
            wall = self.walls[-1]
            self.log({"step": steps, "wall_s": round(wall, 3),
                      "steps_per_s": round(steps / wall, 1) if wall > 0 else 0.0,
                      **{k: v for k, v in self.curve[-1].items() if k != "step"},
                      **{tag: total / n for tag, (total, n) in notes.items() if n}})
        notes.clear()

    def finish(self, steps: int, updates: int) -> dict[str, Any]:
        """Evaluate once more; return the curve, final and max return, and throughput: end
        to end (`steps_per_s`, everything: acting, updates, evaluations) and acting only
        (`acting_steps_per_s`: choosing actions and stepping the environments, the rate the
        paper's Table 12 reports for its PyMARL methods), with the seconds behind them."""
        self._eval(steps)
        wall = time.perf_counter() - self.start
        curve = self.curve
        best = max(curve, key=lambda c: c["return"])
        # a run continued from a snapshot says from where (its times count both attempts)
        resumed = getattr(self, "resumed_from_step", None)
        return {**({"resumed_from_step": resumed} if resumed is not None else {}),
                "config": asdict(self.tc), "curve": curve, "final_return": curve[-1]["return"],
                "max_return": best["return"], "max_return_step": best["step"],
                "updates": updates, "wall_s": wall, "steps_per_s": steps / wall,
                "acting_s": self.acting_s, "eval_s": self.eval_s,
                "acting_steps_per_s": steps / self.acting_s if self.acting_s > 0 else None,
                "final": curve[-1], "curve_wall_s": self.walls}


def clone_frozen(module: torch.nn.Module) -> torch.nn.Module:
    """Return a target copy of a network (no gradients)."""
    target = copy.deepcopy(module)
    for p in target.parameters():
        p.requires_grad_(False)
    return target


def mlp(inp: int, hidden: int, out: int) -> torch.nn.Sequential:
    """Return Linear-ReLU-Linear-ReLU-Linear."""
    return torch.nn.Sequential(torch.nn.Linear(inp, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, out))


# State sizes from which SharedAgentQ applies its first layer to the state once per sample
# instead of once per agent. Below it (every Baseline config) the extra operations cost what
# they save (0.94-1.02x); at and above it (the Extreme configs) training is 1.1-1.6x faster
# end to end, most where the state is largest (benchmarks/stat_agent_net.py).
SPLIT_FIRST_LAYER_AT = 128


class SharedAgentQ(torch.nn.Module):
    """One network for every agent: Q_i(s, .) = f([s, onehot(i)]) over 3 + m actions."""

    # forward(obs, rows) scores only the given agent rows (the on-policy learners use it), but
    # greedy action selection runs the full forward: for this small MLP, picking rows out
    # costs more than it saves (measured on QMIX at utd 8)
    scores_rows = False

    def __init__(self, obs_dim: int, n: int, actions: int, hidden: int) -> None:
        super().__init__()
        self.n = n
        self.net = mlp(obs_dim + n, hidden, actions)
        self.register_buffer("ids", torch.eye(n))
        # [0 | onehot(i)] rows: the first layer's agent-id term; not saved in checkpoints
        self.register_buffer("id_rows", torch.cat([torch.zeros(n, obs_dim), torch.eye(n)], 1),
                             persistent=False)

    def forward(self, obs: torch.Tensor, rows: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> torch.Tensor:
        """Return (B, n, A); with rows = (b, i) index tensors, only the agent rows
        (b[r], i[r]) as (R, A)."""
        if obs.shape[1] >= SPLIT_FIRST_LAYER_AT:
            # W [s, onehot(i)] + b = (W [s, 0] + b) + W [0, onehot(i)]: the state term once
            first = self.net[0]
            ids = torch.nn.functional.linear(self.id_rows, first.weight)
            if rows is not None:
                state = torch.nn.functional.linear(
                    torch.nn.functional.pad(obs[rows[0]], (0, self.n)), first.weight, first.bias)
                return self.net[1:](state + ids[rows[1]])
            state = torch.nn.functional.linear(torch.nn.functional.pad(obs, (0, self.n)),
                                               first.weight, first.bias)
            return self.net[1:](state.unsqueeze(1) + ids)
        if rows is not None:
            return self.net(torch.cat([obs[rows[0]], self.ids[rows[1]]], dim=-1))
        b = obs.shape[0]
        x = torch.cat([obs.unsqueeze(1).expand(b, self.n, obs.shape[1]),
                       self.ids.unsqueeze(0).expand(b, self.n, self.n)], dim=-1)
        return self.net(x)


class QNetMethod:
    """Plumbing shared by methods built on one online Q-network `q` and its frozen target."""

    q: torch.nn.Module
    q_target: torch.nn.Module

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Return per-agent Q-values (B, n, A)."""
        return self.q(obs)

    def greedy(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Return each agent's valid argmax (B, n)."""
        return masked_greedy(self.q, obs, masks)

    def networks(self) -> dict[str, torch.nn.Module]:
        """Return the online networks by name."""
        return {"q": self.q}

    def parameters(self):
        """Return the trainable parameters of every online network."""
        return [p for net in self.networks().values() for p in net.parameters()]

    def sync_target(self) -> None:
        """Copy the online network into the target."""
        self.q_target.load_state_dict(self.q.state_dict())


def chosen(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Return the Q-values (B, n) of the actions taken."""
    return q.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def double_q_next(online: torch.nn.Module, target: torch.nn.Module,
                  batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Return per-agent next values (B, n): target Q at the online net's valid argmax."""
    with torch.no_grad():
        best = masked_greedy(online, batch["next_obs"], batch["next_masks"])
        return chosen(target(batch["next_obs"]), best)


ARCHS = ("mlp", "pair", "pair-seq")
# architectures whose agents decide in index order (the on-policy PPO learners only)
SEQUENTIAL_ARCHS = ("pair-seq",)
SEQUENTIAL_ALGOS = ("mappo", "ippo")


def method_label(algo: str, extra: dict[str, Any] | None) -> str:
    """Return the name a run is filed and tabled under: the algorithm, plus "+pair" for the
    task-equivariant network or "+pair-seq" for its sequential variant, plus "+binsK" when
    it saw K distance bins instead of the paper's observation, and "+mem" when its agents
    also read the observation memory (envs/stat/memory.py), so all can share a results
    directory and no richer-observation or memory run passes for a plain one."""
    extra = extra or {}
    arch = extra.get("arch", "mlp")
    label = algo if arch == "mlp" else f"{algo}+{arch}"
    bins = extra.get("num_bins")
    label = label if bins is None else f"{label}+bins{bins}"
    return f"{label}+mem" if extra.get("memory") else label


def env_config(tc: TrainConfig) -> StatConfig:
    """Return the environment configuration a run trains and evaluates on: `tc.config`, with
    tc.extra["num_bins"] distance bins where set (the labelled richer observation)."""
    cfg = get_config(tc.config)
    bins = tc.extra.get("num_bins")
    return cfg if bins is None else dataclasses.replace(cfg, num_bins=int(bins))


def uses_memory(tc: TrainConfig) -> bool:
    """Return True if the run's agents read the observation memory (`--memory`)."""
    return bool(tc.extra.get("memory"))


def input_width(tc: TrainConfig) -> int:
    """Return the width of the rows a run's networks read: the observation, plus the memory's
    features where the run uses it."""
    cfg = env_config(tc)
    return cfg.obs_dim + width(cfg) if uses_memory(tc) else cfg.obs_dim


def agent_network(obs_dim: int, n: int, actions: int, tc: TrainConfig) -> torch.nn.Module:
    """Return the per-agent network selected by tc.extra["arch"]: "mlp" (the paper's: the
    flat state plus an agent id), "pair" (task-equivariant, same observation; pair.py) or
    "pair-seq" (the same, with agents deciding in index order; MAPPO and IPPO only)."""
    arch = tc.extra.get("arch", "mlp")
    check_arch(arch, tc.algo)
    if arch in ("pair", "pair-seq"):
        from .pair import PairAgentQ

        return PairAgentQ(n, actions - 3, tc.hidden, claims=arch == "pair-seq",
                          bins=env_config(tc).num_bins, memory=uses_memory(tc))
    return SharedAgentQ(obs_dim, n, actions, tc.hidden)


def check_arch(arch: str, algo: str) -> None:
    """Raise ConfigError if `algo` cannot use the network architecture `arch`."""
    from coordbench.errors import ConfigError

    if arch not in ARCHS:
        raise ConfigError(f"unknown --arch {arch!r}; choose from {', '.join(ARCHS)}")
    if arch != "mlp" and algo in ("dqn", "fdqn"):
        raise ConfigError(f"--arch {arch} needs per-agent networks; {algo} has its own "
                          f"(joint or multi-head) network")
    if arch in SEQUENTIAL_ARCHS and algo not in SEQUENTIAL_ALGOS:
        raise ConfigError(f"--arch {arch} makes agents decide in index order, which only "
                          f"{' and '.join(SEQUENTIAL_ALGOS)} support; {algo} does not")
