"""Imitation-learning baselines of the physical suite, in plain PyTorch (CPU, one thread).

- bc:  an MLP from the observation to the next action.
- act: ACT-style: a CVAE whose decoder is a transformer with one learned query per future
       step, predicting a chunk of `chunk` actions (L1 + beta KL, the KL summed over the
       latent's dimensions as ACT's own loss: divided by the chunk's size it was too weak to
       keep the latent near its prior, and the zero latent of test time was off the
       decoder's training inputs); executed open loop for
       `execute` steps, then re-queried; the latent is zero at test time.
- dp:  Diffusion-Policy-style: a denoiser conditioned on the observation predicts the noise
       of a `chunk`-step action sequence (DDPM training, 50 steps, cosine schedule);
       sampled with 10 deterministic DDIM steps.
- joint: the multi-agent baseline: one centralized network reads every robot's observation
       and predicts every robot's action chunk at once (the MLP head of bc), so the robots'
       actions are modelled together instead of by independent per-robot copies.

Observations (the paper's ablation): `scope` local = the robot's own observation (state: its
`local_obs` row; image: its own egocentric frame plus its proprioception), global = every
robot's local observation concatenated, the robot's own first and then the others in turn
(so that one shared network still knows which robot it drives: in robot order every robot
would give it the same input); `sharing` separate = one network per robot, shared = one
network for all robots (with or without a one-hot agent id).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from coordbench.core.checkpoint import checkpoint_bytes, read_checkpoint
from coordbench.envs.physical.embodiment import KINDS, action_bounds
from coordbench.errors import ConfigError, CoordbenchError

from .imitation_nets import build
from .snapshot import Snapshots

ALGOS = ("bc", "act", "dp", "joint")
FORMAT = "coordbench-physical-policy"


def action_scale(cfg: PolicyConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (middle, half range) of one robot's action: networks predict actions
    normalised to [-1, 1] by them."""
    low, high = action_bounds(cfg.embodiment)
    return (torch.tensor((high + low) / 2, dtype=torch.float32),
            torch.tensor((high - low) / 2, dtype=torch.float32))


class PolicyCheckpointError(CoordbenchError):
    """A physical policy checkpoint that is missing, corrupt, or made for something else."""


@dataclass
class PolicyConfig:
    """Everything that defines a baseline policy and its training."""

    task: str
    algo: str = "bc"
    obs: str = "state"  # state | image
    scope: str = "local"  # local | global (joint: global)
    sharing: str = "separate"  # separate | shared (joint: joint)
    agent_id: bool = False  # shared networks: append a one-hot robot id
    n_robots: int = 2
    chunk: int = 1  # actions predicted per query
    execute: int = 1  # actions executed per query
    hidden: int = 256
    steps: int = 2000
    batch: int = 64
    lr: float = 1e-3
    seed: int = 0
    image_size: int = 64
    kl_weight: float = 10.0
    ensemble: float = 0.0  # > 0: query every step, temporal ensemble weight (ACT's m)
    history: int = 0  # past observations stacked onto the current one (state obs)
    history_every: int = 10  # control steps between stacked observations
    dagger: int = 0  # DAgger rounds after the first fit (the scripted expert labels)
    dagger_episodes: int = 16  # learner rollouts per round
    dagger_steps: int = 0  # gradient steps per round (0: steps // 2)
    # global scope: "own_first" (the robot's own observation, then the others in turn) or
    # "fixed" (robot order for every robot: checkpoints written before this field)
    global_order: str = "own_first"
    embodiment: str = "cobot"  # the robots trained on: cobot | g1
    # act: layer norm before each transformer sublayer (pre-LN, trains stably at lr 1e-3)
    # or after it (post-LN: checkpoints written before this field)
    pre_norm: bool = True
    # dp: the denoiser predicts the clean chunk ("sample") or the noise ("epsilon":
    # checkpoints written before this field)
    dp_target: str = "sample"

    @property
    def action_dim(self) -> int:
        """Return the width of one robot's action."""
        return KINDS[self.embodiment].action_dim

    @property
    def proprio_dim(self) -> int:
        """Return the width of one robot's proprioception (positions, then velocities)."""
        return KINDS[self.embodiment].proprio_dim

    @property
    def joint(self) -> bool:
        """Return True for the centralized joint policy (one network, every robot's action)."""
        return self.algo == "joint"

    @property
    def action_width(self) -> int:
        """Return the width of one predicted step (every robot's actions for joint)."""
        return self.action_dim * (self.n_robots if self.joint else 1)

    def check(self) -> None:
        """Raise ConfigError on an invalid combination."""
        for name, value, allowed in (("--algo", self.algo, ALGOS),
                                     ("--obs", self.obs, ("state", "image")),
                                     ("--scope", self.scope, ("local", "global")),
                                     ("--sharing", self.sharing,
                                      ("separate", "shared", "joint")),
                                     ("dp_target", self.dp_target, ("sample", "epsilon"))):
            if value not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if self.joint and (self.scope != "global" or self.sharing != "joint"):
            raise ConfigError("--algo joint is one network over every robot's observation: "
                              "it takes --scope global and no --sharing")
        if self.joint and self.obs != "state":
            raise ConfigError("--algo joint reads state observations only")
        if self.sharing == "joint" and not self.joint:
            raise ConfigError("--sharing must be separate, shared or shared_id")
        if self.chunk < 1 or not 1 <= self.execute <= self.chunk:
            raise ConfigError("--execute must be >= 1 and <= --chunk")
        if self.agent_id and self.sharing != "shared":
            raise ConfigError("--agent-id applies to shared policies only")
        if self.steps < 1 or self.batch < 1:
            raise ConfigError("--steps and --batch must be >= 1")
        if self.ensemble < 0:
            raise ConfigError("--ensemble must be >= 0")
        if self.history and self.obs != "state":
            raise ConfigError("--history applies to state observations only")
        if self.history < 0 or self.history_every < 1:
            raise ConfigError("--history must be >= 0")
        if self.dagger < 0 or self.dagger_episodes < 1:
            raise ConfigError("--dagger must be >= 0 and DAgger episodes >= 1")
        if self.embodiment not in KINDS:
            raise ConfigError(f"unknown embodiment {self.embodiment!r}; choose from "
                              f"{', '.join(KINDS)}")
        if self.global_order not in ("own_first", "fixed"):
            raise ConfigError(f"unknown global observation order {self.global_order!r}")


# each algorithm's defaults: (chunk, execute, ensemble, lr, hidden, steps). Every chunked one
# is queried every step and executes ACT's temporal ensemble: executed open loop, ACT's and
# DP's chunks did not learn CoCarry (0%, docs/physical.md); ACT's transformer is the costly
# one on a CPU
ALGO_DEFAULTS: dict[str, tuple[int, int, float, float, int, int]] = {
    "bc": (1, 1, 0.0, 1e-3, 256, 2000),
    "act": (20, 1, 0.1, 1e-3, 128, 3000),
    "dp": (16, 1, 0.1, 1e-3, 256, 5000),
    "joint": (20, 1, 0.1, 1e-3, 512, 2000),
}


def default_config(task: str, algo: str, n_robots: int, **kw: Any) -> PolicyConfig:
    """Return a PolicyConfig with each algorithm's defaults (`ALGO_DEFAULTS`), `kw` over
    them."""
    chunk, execute, ensemble, lr, hidden, steps = ALGO_DEFAULTS.get(algo, ALGO_DEFAULTS["bc"])
    base = {"task": task, "algo": algo, "n_robots": n_robots, "chunk": chunk,
            "execute": execute, "ensemble": ensemble, "lr": lr, "hidden": hidden,
            "steps": steps}
    if algo == "joint":  # measured best ensembled (benchmarks/results/physical_learning.md)
        base.update(scope="global", sharing="joint")
    if kw.get("execute", 1) > 1 and "ensemble" not in kw:  # chunks asked open loop
        base["ensemble"] = 0.0
    cfg = PolicyConfig(**{**base, **kw})
    cfg.check()
    return cfg


# -- observations -------------------------------------------------------------------------------
# Policies read joint and base positions, not velocities (as the paper's policies read joint
# positions): with velocities as inputs, a cloned policy's own small action errors excite the
# light wrist, whose velocity then leaves the demonstrations' range within a few steps.
def positions(cfg: PolicyConfig, obs_dim: int) -> np.ndarray:
    """Return the indices of a state observation that policies read (all but velocities)."""
    return np.r_[0:cfg.proprio_dim // 2, cfg.proprio_dim:obs_dim]


def robot_order(cfg: PolicyConfig, robot: int) -> list[int]:
    """Return the order of the robots' observations in robot `robot`'s global input."""
    if cfg.global_order == "fixed" or cfg.joint:
        return list(range(cfg.n_robots))
    return [(robot + k) % cfg.n_robots for k in range(cfg.n_robots)]


def obs_features(cfg: PolicyConfig, state_obs: np.ndarray, robot: int) -> np.ndarray:
    """Return robot `robot`'s state input (B, D) from local observations (B, n, obs_dim),
    or (B, n, 1 + history, obs_dim) with past observations stacked."""
    state_obs = state_obs[..., positions(cfg, state_obs.shape[-1])]
    if state_obs.ndim == 4:
        state_obs = state_obs.reshape(*state_obs.shape[:2], -1)
    x = state_obs[:, robot] if cfg.scope == "local" else \
        state_obs[:, robot_order(cfg, robot)].reshape(len(state_obs), -1)
    if cfg.agent_id:
        x = np.concatenate([x, np.tile(np.eye(cfg.n_robots)[robot], (len(x), 1))], axis=1)
    return x.astype(np.float32)


def image_features(cfg: PolicyConfig, frames: np.ndarray, state_obs: np.ndarray,
                   robot: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (images (B, C, H, W) uint8, proprio (B, P)) for robot `robot`."""
    if cfg.scope == "local":
        img = frames[:, robot]
        pro = state_obs[:, robot, :cfg.proprio_dim // 2]
    else:
        order = robot_order(cfg, robot)
        img = np.concatenate([frames[:, i] for i in order], axis=-1)
        pro = state_obs[:, order, :cfg.proprio_dim // 2].reshape(len(state_obs), -1)
    if cfg.agent_id:
        pro = np.concatenate([pro, np.tile(np.eye(cfg.n_robots)[robot], (len(pro), 1))], 1)
    return np.moveaxis(img, -1, 1), pro.astype(np.float32)


# -- data ---------------------------------------------------------------------------------------
@dataclass
class RobotData:
    """Training rows of one network: inputs and normalised target chunks."""

    state: np.ndarray
    images: np.ndarray | None
    target: np.ndarray  # (N, chunk, 8)


def chunks(actions: np.ndarray, starts: np.ndarray, robot: int, k: int) -> np.ndarray:
    """Return (T, k, width) action chunks of `robot`, padded with each episode's last
    action."""
    out = np.zeros((len(actions), k, actions.shape[-1]), dtype=np.float32)
    for e in range(len(starts) - 1):
        a, b = int(starts[e]), int(starts[e + 1])
        idx = np.minimum(np.arange(a, b)[:, None] + np.arange(k)[None], b - 1)
        out[a:b] = actions[idx, robot]
    return out


def history_lags(cfg: PolicyConfig) -> np.ndarray:
    """Return the control-step lags of the stacked observations (0 = now)."""
    return np.arange(cfg.history + 1) * cfg.history_every


def stacked_obs(cfg: PolicyConfig, obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Return (T, n, 1 + history, obs_dim): each row's observation and those `history_every`,
    2 x `history_every`, ... steps before it in its episode (the episode's first before it
    began), or `obs` itself without history."""
    if not cfg.history:
        return obs
    first = np.repeat(starts[:-1], np.diff(starts))
    rows = np.maximum(np.arange(len(obs))[:, None] - history_lags(cfg)[None], first[:, None])
    return np.moveaxis(obs[rows], 1, 2)


def robot_rows(cfg: PolicyConfig, data: dict[str, np.ndarray], robot: int) -> RobotData:
    """Return one robot's training rows from a demonstration split."""
    robots = range(cfg.n_robots) if cfg.joint else [robot]
    tgt = np.concatenate([chunks(data["actions"], data["episode_start"], i, cfg.chunk)
                          for i in robots], axis=-1)
    k = len(robots)
    mid, half = action_scale(cfg)
    tgt = ((torch.from_numpy(tgt) - mid.repeat(k)) / half.repeat(k)).numpy()
    if cfg.obs == "image":
        if "frames" not in data:
            raise ConfigError("--obs image needs demonstrations with frames "
                              "(coordbench physical demos --images)")
        rows = data["frame_index"]
        img, pro = image_features(cfg, data["frames"], data["obs"][rows], robot)
        return RobotData(pro, img, tgt[rows])
    obs = stacked_obs(cfg, data["obs"], data["episode_start"])
    return RobotData(obs_features(cfg, obs, robot), None, tgt)


def merge(parts: list[RobotData]) -> RobotData:
    """Return the rows of several robots as one dataset (shared networks)."""
    imgs = [p.images for p in parts]
    return RobotData(np.concatenate([p.state for p in parts]),
                     None if imgs[0] is None else np.concatenate(imgs),
                     np.concatenate([p.target for p in parts]))


# -- training -----------------------------------------------------------------------------------
def data_digest(data: dict[str, np.ndarray]) -> str:
    """Return a short digest of a demonstration set (its actions, seeds and episode bounds:
    two sets that differ in any episode differ here)."""
    import hashlib

    h = hashlib.sha256()
    for key in ("actions", "seeds", "episode_start"):
        if key in data:
            h.update(np.ascontiguousarray(data[key]).tobytes())
    return h.hexdigest()[:16]


def fit_on(cfg: PolicyConfig, train: dict[str, np.ndarray],
           val: dict[str, np.ndarray] | None,
           more_rounds: Callable[[PolicyConfig, Trainer, Snapshots],
                                 list[dict[str, Any]]] | None = None,
           snapshots: Any = None, log: Callable[[dict[str, float]], None] | None = None
           ) -> tuple[dict[str, Any], bytes]:
    """Train the baseline on demonstration arrays, then `more_rounds(cfg, trainer, snaps)`
    where cfg.dagger > 0 (the physical suite's DAgger: `suites.physical.learning.fit_on`);
    return (losses, rounds and timing, checkpoint bytes). With `snapshots` (a snapshot store:
    learn/snapshot.py) training saves its state as it goes and continues from the last
    snapshot when there is one; `log(row)` (learn/train_log.py) sees the losses as it fits
    (`Trainer.attach`)."""
    if cfg.dagger and more_rounds is None:
        raise ConfigError("DAgger rounds need the physical suite's labeller: train through "
                          "coordbench.suites.physical.learning")
    from coordbench.learn.core import one_thread

    one_thread()
    torch.manual_seed(cfg.seed)
    start = time.perf_counter()
    # a snapshot belongs to this config on these demonstrations
    snaps = Snapshots(snapshots, cfg, identity={"demos": data_digest(train)})
    state = snaps.load()
    trainer = state["trainer"] if state is not None else Trainer(cfg, train)
    trainer.attach(log, val)
    resumed_from = list(trainer.position) if state is not None else None
    trainer.fit(cfg.steps, snaps)
    rounds: list[dict[str, Any]] = []
    if cfg.dagger:
        rounds = more_rounds(cfg, trainer, snaps)
    wall = time.perf_counter() - start
    res = {"task": cfg.task, "algo": cfg.algo, "obs": cfg.obs, "scope": cfg.scope,
           "sharing": cfg.sharing, "agent_id": cfg.agent_id, "steps": cfg.steps,
           "train_loss": float(np.mean(trainer.losses)),
           "val_loss": trainer.val_loss(val) if val is not None else None,
           "train_s": wall, "demo_episodes": int(len(train["episode_start"]) - 1),
           "dagger_rounds": rounds, "demos_digest": data_digest(train),
           "parameters": int(sum(p.numel() for n in trainer.nets for p in n.parameters()))}
    if state is not None:  # continued from a snapshot: [stage, network, gradient step]
        res["resumed_from"] = resumed_from
    return res, trainer.checkpoint()


class Trainer:
    """The networks of one policy (one per robot, or one shared) with their optimisers, over
    a dataset that DAgger rounds may grow; training continues where it stopped."""

    # rows a fit logs per network: the mean loss of every steps/LOG_POINTS gradient steps,
    # and at VAL_POINTS of them the validation loss (a pass over up to 2048 rows costs about
    # five ACT gradient steps: at 20 points a 400-step ACT fit took 27% longer; at 5 the
    # difference was within the timing noise)
    LOG_POINTS = 20
    VAL_POINTS = 5
    # this process's log, validation rows and clock: never part of a snapshot
    _TRANSIENT = ("_log", "_val", "_val_rows", "_t0")

    def __init__(self, cfg: PolicyConfig, data: dict[str, np.ndarray]) -> None:
        self.cfg, self.data = cfg, data
        self.rng = np.random.default_rng(cfg.seed)
        self.groups = [[i] for i in range(cfg.n_robots)] if cfg.sharing == "separate" \
            else [[0]] if cfg.joint else [list(range(cfg.n_robots))]
        self.nets: list[nn.Module] = []
        self.opts: list[torch.optim.Optimizer] = []
        self.losses: list[float] = []
        for group in self.groups:
            rows = merge([robot_rows(cfg, data, i) for i in group])
            channels = 0 if rows.images is None else rows.images.shape[1]
            net = build(cfg, rows.state.shape[1], channels)
            net.enc.mean.copy_(torch.from_numpy(rows.state.mean(0)))
            # a floor on the scale: features nearly constant in the demonstrations (wrist
            # roll, goal height) must not turn small test-time deviations into huge inputs
            net.enc.std.copy_(torch.from_numpy(np.maximum(rows.state.std(0), 0.05)))
            self.nets.append(net)
            # the multi-tensor update: the per-tensor loop was half of a small net's step
            self.opts.append(torch.optim.AdamW(net.parameters(), lr=cfg.lr,
                                               weight_decay=1e-4, foreach=True))

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._TRANSIENT}

    def attach(self, log: Callable[[dict[str, float]], None] | None,
               val: dict[str, np.ndarray] | None = None) -> None:
        """Send `log(row)` the training scalars as the networks fit (None: no log): each
        network's mean training loss every steps/LOG_POINTS gradient steps (`loss/train`,
        `loss/train_net<g>` where the policy has several networks), its validation loss on
        `val` where given at VAL_POINTS of them and at the end of its fit (`loss/val...`),
        gradient steps per second and, in a DAgger round, the round's rollout success.
        `step` counts gradient steps over every network and stage, so a resumed fit logs
        the steps an uninterrupted one does."""
        self._log, self._val, self._val_rows = log, val, {}

    def _clock(self) -> float:
        """Return the seconds this trainer has run, over every attempt (snapshots keep
        `elapsed_s`)."""
        if getattr(self, "_t0", None) is None:
            self._t0 = time.perf_counter() - getattr(self, "elapsed_s", 0.0)
        return time.perf_counter() - self._t0

    def _stepped(self, g: int, loss: torch.Tensor, due: bool, val_due: bool) -> None:
        """Count one gradient step of network `g`; at a log point (`due`), log the
        window's mean loss, and the validation loss too where `val_due` (the window restarts
        whether or not a log is attached)."""
        self.grad_steps = getattr(self, "grad_steps", 0) + 1
        window = self.__dict__.setdefault("window", [0.0, 0])
        window[0] += loss.item()
        window[1] += 1
        if not due:
            return
        log = getattr(self, "_log", None)
        if log is not None:
            name = f"_net{g}" if len(self.groups) > 1 else ""
            wall = self._clock()
            row = {"step": self.grad_steps, "wall_s": wall,
                   f"loss/train{name}": window[0] / window[1],
                   "speed/grad_steps_per_s": self.grad_steps / max(wall, 1e-9)}
            if val_due and getattr(self, "_val", None) is not None:
                row[f"loss/val{name}"] = self._group_val_loss(g)
            rollouts = getattr(self, "round_rollouts", None)
            if rollouts:  # fitting a DAgger round: how its rollouts went
                row["dagger/round"] = rollouts["round"]
                row["dagger/success"] = rollouts["success"]
            log(row)
        self.window = [0.0, 0]

    def _group_val_loss(self, g: int) -> float:
        """Return network `g`'s loss on up to 2048 validation rows, leaving training as it
        was: torch's random state is restored (the ACT and DP losses draw noise) and the
        network goes back to training mode."""
        rows = self._val_rows.get(g)
        if rows is None:
            rows = merge([robot_rows(self.cfg, self._val, i) for i in self.groups[g]])
            self._val_rows[g] = rows
        net = self.nets[g]
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            net.eval()
            value = float(net.loss(*_batch(rows, np.arange(min(len(rows.target), 2048)))))
            net.train()
        return value

    def fit(self, steps: int, snaps: Snapshots | None = None, stage: int = 0) -> None:
        """Take `steps` gradient steps per network on the current dataset: fitting stage
        `stage` (0 the first fit, r the fit of DAgger round r). With `snaps` the trainer saves
        itself as it goes; a trainer restored from a snapshot continues the stage where it
        stopped, and skips a stage it had finished."""
        pos = getattr(self, "position", None)
        if pos is not None and pos[0] > stage:
            return  # finished before the snapshot
        if pos is None or pos[0] < stage or pos == [stage, 0, 0]:
            # a stage not begun: its losses are its own (train_loss is the last fit's)
            self.position, self.losses = [stage, 0, 0], []
        _, g0, k0 = self.position
        self._clock()  # the clock runs from here in this process
        every = max(1, steps // self.LOG_POINTS)
        # validation at log points only, VAL_POINTS of them (and the fit's last step)
        val_every = every * max(1, self.LOG_POINTS // self.VAL_POINTS)
        for g in range(g0, len(self.groups)):
            group, net, opt = self.groups[g], self.nets[g], self.opts[g]
            rows = merge([robot_rows(self.cfg, self.data, i) for i in group])
            net.train()
            for k in range(k0 if g == g0 else 0, steps):
                if snaps is not None and snaps.due():
                    self.position = [stage, g, k]
                    self.elapsed_s = self._clock()
                    net.eval()
                    snaps.save({"trainer": self})
                    net.train()
                idx = self.rng.integers(0, len(rows.target), self.cfg.batch)
                loss = net.loss(*_batch(rows, idx))
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), 10.0)
                opt.step()
                last = k + 1 == steps
                self._stepped(g, loss, (k + 1) % every == 0 or last,
                              (k + 1) % val_every == 0 or last)
            net.eval()
            self.losses.append(loss.item())
        self.position = [stage + 1, 0, 0]

    def add(self, more: dict[str, np.ndarray]) -> None:
        """Append episodes (same arrays as a demonstration file) to the dataset."""
        self.data = concat_episodes(self.data, more)

    def val_loss(self, val: dict[str, np.ndarray]) -> float:
        """Return the mean loss of the networks on up to 2048 validation rows each."""
        out = []
        for group, net in zip(self.groups, self.nets, strict=True):
            rows = merge([robot_rows(self.cfg, val, i) for i in group])
            with torch.no_grad():
                out.append(float(net.loss(*_batch(rows, np.arange(min(len(rows.target),
                                                                      2048))))))
        return float(np.mean(out))

    def policy(self) -> LearnedPolicy:
        """Return the current networks as a team policy."""
        return LearnedPolicy(self.cfg, self.nets, policy_name(self.cfg))

    def checkpoint(self) -> bytes:
        """Return the current networks as checkpoint bytes."""
        return policy_bytes(self.cfg, self.nets, [n.enc.mean.shape[0] for n in self.nets],
                            [0 if not n.enc.image else n.enc.conv[0].in_channels
                             for n in self.nets])


EPISODE_KEYS = ("obs", "actions", "executed", "phase", "states")


def concat_episodes(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Return demonstration arrays `a` followed by `b` (row arrays, episode offsets, frames
    with their row index)."""
    out = {k: np.concatenate([a[k], b[k]]) for k in EPISODE_KEYS if k in a and k in b}
    out["seeds"] = np.concatenate([a["seeds"], b["seeds"]])
    out["episode_start"] = np.concatenate([a["episode_start"][:-1],
                                           b["episode_start"] + a["episode_start"][-1]])
    if "frames" in a and "frames" in b:
        out["frames"] = np.concatenate([a["frames"], b["frames"]])
        out["frame_index"] = np.concatenate([a["frame_index"],
                                             b["frame_index"] + a["episode_start"][-1]])
    return out


def policy_name(cfg: PolicyConfig) -> str:
    """Return the policy's display name (algo-obs-scope-sharing)."""
    return f"{cfg.algo}-{cfg.obs}-{cfg.scope}-{cfg.sharing}"


def _batch(data: RobotData, idx: np.ndarray):
    img = None if data.images is None else torch.from_numpy(data.images[idx])
    return torch.from_numpy(data.state[idx]), img, torch.from_numpy(data.target[idx])


def policy_bytes(cfg: PolicyConfig, nets: list[nn.Module], dims: list[int],
                 channels: list[int]) -> bytes:
    """Return a policy checkpoint as bytes."""
    return checkpoint_bytes({"format": FORMAT, "version": 1, "config": asdict(cfg),
                             "dims": dims, "channels": channels,
                             "nets": [n.state_dict() for n in nets]})


def load_nets(path: Path) -> tuple[PolicyConfig, list[nn.Module]]:
    """Return (config, networks) of a checkpoint, or raise PolicyCheckpointError."""
    blob = read_checkpoint(path, FORMAT, "coordbench physical policy", PolicyCheckpointError)
    try:
        known = {f.name for f in fields(PolicyConfig)}
        # older files: robot order, post-LN transformers
        saved = {"global_order": "fixed", "pre_norm": False, "dp_target": "epsilon",
                 **blob["config"]}
        cfg = PolicyConfig(**{k: v for k, v in saved.items() if k in known})
        nets = []
        for sd, dim, ch in zip(blob["nets"], blob["dims"], blob["channels"], strict=True):
            net = build(cfg, dim, ch)
            net.load_state_dict(sd)
            net.eval()
            nets.append(net)
    except (KeyError, RuntimeError, TypeError, ValueError) as exc:
        raise PolicyCheckpointError(f"policy checkpoint {path} does not match its config "
                                    f"({type(exc).__name__})") from None
    return cfg, nets


class LearnedPolicy:
    """A trained baseline driving every robot; one batched forward per query over all
    lockstep environments; chunks executed open loop for `execute` steps."""

    def __init__(self, cfg: PolicyConfig, nets: list[nn.Module], name: str) -> None:
        self.cfg, self.nets, self.name = cfg, nets, name
        self.queue: dict[int, list[np.ndarray]] = {}
        self.past: dict[int, list[np.ndarray]] = {}

    def reset(self, envs, resume: bool = False) -> None:
        """Clear the action queues and observation histories."""
        from coordbench.learn.core import one_thread

        one_thread()
        self.queue = {id(env): [] for env in envs}
        self.past = {id(env): [] for env in envs}

    def _observe(self, envs) -> None:
        keep = int(history_lags(self.cfg)[-1]) + 1
        for env in envs:
            past = self.past[id(env)]
            past.append(env.local_obs())
            if len(past) > keep:
                past.pop(0)

    def _state(self, env) -> np.ndarray:
        """Return the environment's (n, obs_dim) observation, or (n, 1 + history, obs_dim)."""
        if not self.cfg.history:  # read at query time only, not every executed step
            return env.local_obs()
        past = self.past[id(env)]
        lags = np.minimum(history_lags(self.cfg), len(past) - 1)
        return np.stack([past[-1 - k] for k in lags], axis=1)

    def act(self, envs) -> list[np.ndarray]:
        """Return one (n, 9) action per environment: the next of the queued chunk (a new
        query where the queue is empty), or with `ensemble` the temporal ensemble of every
        chunk predicted for this step (a query every step)."""
        if self.cfg.history:  # past observations are kept only where the policy reads them
            self._observe(envs)
        if self.cfg.ensemble > 0:
            chunk = self._predict(envs)
            return [self._ensembled(env, chunk[k]) for k, env in enumerate(envs)]
        need = [env for env in envs if not self.queue[id(env)]]
        if need:
            chunk = self._predict(need)
            for k, env in enumerate(need):
                self.queue[id(env)] = [chunk[k, :, j] for j in range(self.cfg.execute)]
        return [self.queue[id(env)].pop(0) for env in envs]

    def _ensembled(self, env, new: np.ndarray) -> np.ndarray:
        """Return the weighted mean of the actions the live chunks predicted for this step,
        weights exp(-ensemble * i) from the oldest (i = 0), as ACT's temporal ensembling."""
        live = self.queue[id(env)]
        live.append(new)  # (n, chunk, 9), its first step is now
        if len(live) > self.cfg.chunk:
            live.pop(0)
        ages = np.arange(len(live))[::-1]  # steps since each chunk was predicted
        acts = np.stack([c[:, a] for c, a in zip(live, ages, strict=True)])
        w = np.exp(-self.cfg.ensemble * np.arange(len(live)))
        return np.tensordot(w / w.sum(), acts, axes=1)

    def _predict(self, need) -> np.ndarray:
        """Return (K, n, chunk, 9) predicted action chunks, one batched forward per net."""
        state = np.stack([self._state(env) for env in need])
        frames = None
        if self.cfg.obs == "image":
            s = self.cfg.image_size
            frames = np.stack([[env.render_ego(i, s, s) for i in range(env.n)]
                               for env in need])
        width = self.cfg.action_dim
        chunk = np.zeros((len(need), self.cfg.n_robots, self.cfg.chunk, width))
        mid, half = action_scale(self.cfg)
        with torch.no_grad():
            if self.cfg.joint:
                n = self.cfg.n_robots
                pred = self.nets[0].predict(torch.from_numpy(obs_features(self.cfg, state, 0)))
                pred = pred * half.repeat(n) + mid.repeat(n)
                chunk[:] = pred.view(len(need), self.cfg.chunk, n, width) \
                    .transpose(1, 2).numpy()
            for i in range(0 if self.cfg.joint else self.cfg.n_robots):
                net = self.nets[i if self.cfg.sharing == "separate" else 0]
                if frames is not None:
                    img, pro = image_features(self.cfg, frames, state, i)
                    pred = net.predict(torch.from_numpy(pro), torch.from_numpy(img))
                else:
                    pred = net.predict(torch.from_numpy(obs_features(self.cfg, state, i)))
                chunk[:, i] = (pred * half + mid).numpy()
        return chunk


def load_policy(path: Path) -> LearnedPolicy:
    """Return the policy stored in a checkpoint file."""
    cfg, nets = load_nets(path)
    return LearnedPolicy(cfg, nets, policy_name(cfg))

