"""Method names -> classes, and the paper's per-config hyperparameters (Table 4)."""

from __future__ import annotations

from coordbench.envs.stat.config import get_config
from coordbench.errors import ConfigError

from .core import TrainConfig
from .fdqn import FDQN
from .iql import IQL
from .qmix import QMIX
from .vdn import VDN

METHODS = {"iql": IQL, "vdn": VDN, "qmix": QMIX, "fdqn": FDQN}


def size_class(config: str) -> str:
    """Return the paper's setting class: small (3 agents), large (50x30), medium (else)."""
    cfg = get_config(config)
    if cfg.agents == 3:
        return "small"
    return "large" if cfg.width >= 50 else "medium"


# (lr, epsilon-decay fraction) per method and size class (paper Table 4)
TABLE4 = {
    "fdqn": {"small": (3e-4, 0.2), "medium": (1e-3, 0.2), "large": (3e-4, 0.4)},
    "vdn": {"small": (1e-3, 0.2), "medium": (1e-3, 0.2), "large": (1e-3, 0.2)},
    "qmix": {"small": (1e-3, 0.2), "medium": (1e-3, 0.4), "large": (1e-3, 0.4)},
    "iql": {"small": (1e-3, 0.2), "medium": (1e-3, 0.4), "large": (1e-3, 0.2)},
}


def make(tc: TrainConfig):
    """Return the method object for a training config."""
    if tc.algo not in METHODS:
        raise ConfigError(f"unknown algorithm {tc.algo!r}; available: {', '.join(METHODS)}")
    cfg = get_config(tc.config)
    return METHODS[tc.algo](cfg.obs_dim, cfg.agents, cfg.num_actions, tc)


def paper_config(config: str, algo: str, **overrides) -> TrainConfig:
    """Return a TrainConfig with the paper's lr and epsilon schedule for (config, algo)."""
    if algo not in TABLE4:
        raise ConfigError(f"unknown algorithm {algo!r}; available: {', '.join(TABLE4)}")
    lr, frac = TABLE4[algo][size_class(config)]
    cfg = get_config(config)
    base = {"config": config, "algo": algo, "lr": lr, "eps_frac": frac,
            "total_steps": cfg.train_steps or 2_000_000}
    return TrainConfig(**{**base, **overrides})
