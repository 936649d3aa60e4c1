"""Task layouts: the paper's Python-`random` draws, and coordbench's own seeded uniform layouts."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from coordbench.errors import ConfigError

from .config import StatConfig

LAYOUT_KINDS = ("paper", "uniform")


MAX_SEED = 2**32 - 1


def paper_layout(cfg: StatConfig, seed: int) -> np.ndarray:
    """Return the (m, 2) task positions the released environment draws for `seed`.

    Reproduces `random.seed(seed)` followed, per task in index order, by
    `random.uniform(0, 1)` (unused), `x = random.uniform(0, W)`, `y = random.uniform(0, H)`.
    """
    rng = random.Random(seed)
    out = np.empty((cfg.tasks, 2), dtype=np.float64)
    for j in range(cfg.tasks):
        rng.uniform(0, 1)
        out[j, 0] = rng.uniform(0, cfg.width)
        out[j, 1] = rng.uniform(0, cfg.height)
    return out


def paper_eval_seed(episode: int) -> int:
    """Return the layout seed of evaluation episode `episode`: s*1000 + i, s = episode // 20.

    Episodes 0..99 are the paper's 100 evaluation layouts (training seeds s = 0..4, i = 0..19).
    """
    return (episode // 20) * 1000 + episode % 20


def uniform_layout(cfg: StatConfig, seed: int, episode: int) -> np.ndarray:
    """Return (m, 2) task positions i.i.d. uniform on [0, W) x [0, H), from (seed, episode)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, episode]))
    return rng.random((cfg.tasks, 2)) * np.array([cfg.width, cfg.height])


def layout_seed(kind: str, seed: int, episode: int) -> int:
    """Return the integer that identifies episode `episode`'s layout under `kind`; a seed
    outside 0..2**32-1 is refused here, before numpy's SeedSequence fails on it mid-run."""
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed must be between 0 and {MAX_SEED}, got {seed}")
    if kind == "paper":
        return paper_eval_seed(episode)
    if kind == "uniform":
        return episode
    raise ConfigError(f"unknown layout kind {kind!r}; use one of {', '.join(LAYOUT_KINDS)}")


def make_layouts(cfg: StatConfig, kind: str, seed: int, episodes: Sequence[int]) -> np.ndarray:
    """Return the (len(episodes), m, 2) task positions of the given evaluation episodes."""
    if kind == "paper":
        return np.stack([paper_layout(cfg, paper_eval_seed(e)) for e in episodes]) if len(
            episodes) else np.empty((0, cfg.tasks, 2))
    if kind == "uniform":
        return np.stack([uniform_layout(cfg, seed, e) for e in episodes]) if len(
            episodes) else np.empty((0, cfg.tasks, 2))
    raise ConfigError(f"unknown layout kind {kind!r}; use one of {', '.join(LAYOUT_KINDS)}")


class LayoutStream:
    """An endless source of layouts for auto-resetting vectorized envs, owned by the env.

    `uniform` draws from one numpy Generator; `paper` walks the paper seeds 0, 1, 2, ... (each
    layout a pure function of its seed), so no global RNG state is shared with learners.
    """

    def __init__(self, cfg: StatConfig, kind: str = "uniform", seed: int = 0) -> None:
        if kind not in LAYOUT_KINDS:
            raise ConfigError(f"unknown layout kind {kind!r}; use one of {', '.join(LAYOUT_KINDS)}")
        self.cfg = cfg
        self.kind = kind
        self._rng = np.random.default_rng(seed)
        self._next_seed = seed
        self._scale = np.array([cfg.width, cfg.height])

    def draw(self, k: int) -> np.ndarray:
        """Return the next `k` layouts as a (k, m, 2) array."""
        if self.kind == "uniform":
            out = self._rng.random((k, self.cfg.tasks, 2))
            out *= self._scale
            return out
        seeds = range(self._next_seed, self._next_seed + k)
        self._next_seed += k
        return np.stack([paper_layout(self.cfg, s) for s in seeds]) if k else np.empty(
            (0, self.cfg.tasks, 2))
