"""Method names -> classes, the paper's per-config hyperparameters (Table 4), training
dispatch (off-policy core or a method's own loop) and policy checkpoints."""

from __future__ import annotations

import functools
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import torch

from coordbench.core.atomic import write_atomic_bytes
from coordbench.core.checkpoint import checkpoint_bytes as serialize
from coordbench.core.checkpoint import read_checkpoint
from coordbench.envs.stat.config import DEFAULT_NUM_BINS, get_config
from coordbench.errors import ConfigError, CoordbenchError

from . import coma, ppo
from .core import TrainConfig, env_config, greedy_actions, input_width
from .core import train as train_off_policy
from .dqn import DQN, check_joint_space
from .fdqn import FDQN
from .iql import IQL
from .qmix import QMIX
from .qtran import QTRAN
from .vdn import VDN

# distance bins a run may observe (--num-bins): the paper's 5, or a labelled richer count
MIN_BINS, MAX_BINS = 2, 1000

METHODS = {"dqn": DQN, "fdqn": FDQN, "vdn": VDN, "qmix": QMIX, "qtran": QTRAN, "iql": IQL,
           "coma": coma.COMA, "mappo": ppo.MAPPO, "ippo": ppo.IPPO}
# on-policy methods train in their own module's loop (rollouts, no replay)
ON_POLICY_TRAIN = {"coma": coma.train, "mappo": ppo.train, "ippo": ppo.train}
# learners whose loop keeps the observation memory (--memory)
MEMORY_ALGOS = ("mappo", "ippo")
CHECKPOINT_FORMAT = "coordbench-stat-policy"
CHECKPOINT_VERSION = 1


class CheckpointError(CoordbenchError):
    """A policy checkpoint that is missing, corrupt, or made for something else."""


def size_class(config: str) -> str:
    """Return the paper's setting class: small (3 agents), large (50x30), medium (else)."""
    cfg = get_config(config)
    if cfg.agents == 3:
        return "small"
    return "large" if cfg.width >= 50 else "medium"


# (lr, epsilon-decay fraction) per method and size class (paper Table 4; QTRAN shares QMIX's)
TABLE4 = {
    "dqn": {"small": (3e-4, 0.2)},
    "fdqn": {"small": (3e-4, 0.2), "medium": (1e-3, 0.2), "large": (3e-4, 0.4)},
    "vdn": {"small": (1e-3, 0.2), "medium": (1e-3, 0.2), "large": (1e-3, 0.2)},
    "qmix": {"small": (1e-3, 0.2), "medium": (1e-3, 0.4), "large": (1e-3, 0.4)},
    "qtran": {"small": (1e-3, 0.2), "medium": (1e-3, 0.4), "large": (1e-3, 0.4)},
    "iql": {"small": (1e-3, 0.2), "medium": (1e-3, 0.4), "large": (1e-3, 0.2)},
}
# Settings of the released trainers that differ from TrainConfig's defaults. COMA is not in
# Table 4: PyMARL's COMA settings (lr 5e-4, epsilon 0.5 -> 0.01 over 100k steps), TD(lambda 0.8).
METHOD_DEFAULTS: dict[str, dict[str, Any]] = {
    "dqn": {"hidden": 128, "grad_clip": 1.0},
    "fdqn": {"grad_clip": 1.0},
    "coma": {"lr": 5e-4, "eps_start": 0.5, "eps_end": 0.01},
    # beyond the paper (not in Table 4); their PPO settings are in ppo.PPOSettings
    "mappo": {"lr": 1e-3},
    "ippo": {"lr": 1e-3},
}


def check_algo(algo: str, config: str) -> None:
    """Raise ConfigError if `algo` is unknown or cannot run on `config`."""
    if algo not in METHODS:
        raise ConfigError(f"unknown algorithm {algo!r}; available: {', '.join(METHODS)}")
    cfg = get_config(config)
    if algo == "dqn":
        check_joint_space(config, cfg.agents, cfg.num_actions)


def make(tc: TrainConfig):
    """Return the method object for a training config (weights initialised from tc.seed)."""
    check_algo(tc.algo, tc.config)
    cfg = env_config(tc)
    torch.manual_seed(tc.seed)
    return METHODS[tc.algo](input_width(tc), cfg.agents, cfg.num_actions, tc)


def paper_config(config: str, algo: str, **overrides) -> TrainConfig:
    """Return a TrainConfig with the paper's settings for (config, algo), then `overrides`."""
    check_algo(algo, config)
    cfg = get_config(config)
    total = overrides.get("total_steps", cfg.train_steps or 2_000_000)
    base: dict[str, Any] = {"config": config, "algo": algo, "total_steps": total,
                            **METHOD_DEFAULTS.get(algo, {})}
    if algo in TABLE4:
        base["lr"], base["eps_frac"] = TABLE4[algo][size_class(config)]
    if algo == "coma":
        base["eps_frac"] = min(1.0, 100_000 / max(1, total))
    return TrainConfig(**{**base, **overrides})


def train_configs(config: str, algo: str, seeds: list[int], *, steps: int | None = None,
                  utd: float = 8.0, num_envs: int | None = None, eval_every: int = 10_000,
                  eval_episodes: int = 20, arch: str = "mlp", lr: float | None = None,
                  eps_anneal_steps: int | None = None,
                  num_bins: int | None = None, memory: bool = False) -> list[TrainConfig]:
    """Return one TrainConfig per seed for a sweep (the paper's settings, then these);
    ConfigError names a bad choice.

    `lr` replaces the paper's learning rate and `eps_anneal_steps` the length of the linear
    epsilon decay (recorded as eps_frac = eps_anneal_steps / total steps), the two settings
    the paper's grid varies (its Appendix D). `num_bins` replaces the paper's 5 distance
    bins of the observation: a richer observation, filed under a "+binsK" label. `memory`
    gives the agents the observation memory (envs/stat/memory.py; pair networks under MAPPO
    or IPPO only), filed under "+mem".
    """
    from .core import check_arch

    check_algo(algo, config)
    num_envs = num_envs or (8 if algo == "coma" else 32)
    if steps is not None and steps < num_envs:
        raise ConfigError(f"--steps must be at least --num-envs ({num_envs})")
    if eval_episodes < 1 or eval_every < 1 or not utd > 0:
        raise ConfigError("--eval-episodes, --eval-every and --utd must be positive")
    overrides: dict[str, Any] = {"utd": utd, "num_envs": num_envs, "eval_every": eval_every,
                                 "eval_episodes": eval_episodes}
    check_arch(arch, algo)
    extra: dict[str, Any] = {}
    if arch != "mlp":
        extra["arch"] = arch
    if num_bins is not None:
        if not MIN_BINS <= num_bins <= MAX_BINS:
            raise ConfigError(f"--num-bins must be in {MIN_BINS}..{MAX_BINS}, got {num_bins}")
        if num_bins != DEFAULT_NUM_BINS:  # the paper's own count is the paper's observation
            extra["num_bins"] = int(num_bins)
    if memory:
        if arch not in ("pair", "pair-seq") or algo not in MEMORY_ALGOS:
            raise ConfigError(f"--memory needs --arch pair or pair-seq under "
                              f"{' or '.join(MEMORY_ALGOS)}; got --arch {arch} with {algo}")
        extra["memory"] = True
    if extra:
        overrides["extra"] = extra
    if steps is not None:
        overrides["total_steps"] = steps
    if lr is not None:
        if not lr > 0:
            raise ConfigError(f"--lr must be positive, got {lr}")
        overrides["lr"] = float(lr)
    out = [paper_config(config, algo, seed=s, **overrides) for s in seeds]
    if eps_anneal_steps is not None:
        if eps_anneal_steps < 1:
            raise ConfigError(f"--eps-anneal-steps must be >= 1, got {eps_anneal_steps}")
        if algo in ON_POLICY_TRAIN and algo != "coma":  # PPO samples its policy: no epsilon
            raise ConfigError(f"--eps-anneal-steps sets epsilon-greedy exploration, which "
                              f"{algo} does not use (it samples from its policy)")
        for tc in out:
            tc.eps_frac = eps_anneal_steps / tc.total_steps
    return out


def train(tc: TrainConfig, method=None, log=None, snapshots=None) -> dict[str, Any]:
    """Train (a new method for `tc`, or `method`); return the curve and summary numbers.
    With `snapshots` (learn/snapshot.py) the run continues from its last snapshot."""
    method = method if method is not None else make(tc)
    if getattr(method, "on_policy", False):
        return ON_POLICY_TRAIN[tc.algo](tc, method, log, snapshots)
    return train_off_policy(tc, method, log, snapshots)


def checkpoint_bytes(tc: TrainConfig, method) -> bytes:
    """Return a checkpoint (online networks and TrainConfig) as bytes."""
    return serialize({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                      "train_config": asdict(tc),
                      # clones: the learners' parameters are views of one flat tensor
                      # (core.FlatAdam), which torch.save would otherwise store whole
                      "networks": {k: {name: t.clone() for name, t in v.state_dict().items()}
                                   for k, v in method.networks().items()}})


def save_checkpoint(path: Path, tc: TrainConfig, method) -> None:
    """Write the method's checkpoint to `path` atomically."""
    write_atomic_bytes(Path(path), checkpoint_bytes(tc, method))


def load_checkpoint(path: Path) -> tuple[TrainConfig, Any]:
    """Return (TrainConfig, method with the saved weights) from a checkpoint file."""
    blob = read_checkpoint(path, CHECKPOINT_FORMAT, "coordbench STAT policy", CheckpointError)
    if blob.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"checkpoint {path} has version {blob.get('version')!r}; "
                              f"this coordbench reads version {CHECKPOINT_VERSION}")
    known = {f.name for f in fields(TrainConfig)}
    try:
        tc = TrainConfig(**{k: v for k, v in blob["train_config"].items() if k in known})
        method = make(tc)
        for name, net in method.networks().items():
            net.load_state_dict(blob["networks"][name])
    except (KeyError, RuntimeError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint {path} does not match its method "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") from None
    method.sync_target()
    return tc, method


@functools.lru_cache(maxsize=8)
def _cached(path: str) -> tuple[TrainConfig, Any]:
    return load_checkpoint(Path(path))


def checkpoint_policy(path: str):
    """Return a StatPolicy (env, rng) -> actions playing a checkpoint's greedy policy; the
    environment must have the checkpoint's config."""
    tc, method = _cached(str(Path(path).resolve()))

    bins = env_config(tc).num_bins

    def policy(env, rng) -> Any:
        if env.cfg.name != tc.config:
            raise ConfigError(f"checkpoint {path} was trained on {tc.config}, not "
                              f"{env.cfg.name}")
        if env.cfg.num_bins != bins:
            raise ConfigError(f"checkpoint {path} was trained on {bins} distance bins, not "
                              f"{env.cfg.num_bins}")
        return greedy_actions(method, env)

    policy.config = tc.config  # type: ignore[attr-defined]
    policy.num_bins = bins  # type: ignore[attr-defined]
    return policy
