"""STAT configurations: the nine named settings of the paper and the fixed constants of its code."""

from __future__ import annotations

import re
from dataclasses import dataclass

from coordbench.errors import ConfigError

# Constants of the released environment (not configurable there; documented in docs/stat.md).
EXECUTE_STEPS = 3  # EXECUTE steps after arrival; the third one completes the task
ARRIVAL_RADIUS = 0.5  # an agent is "at" its task when strictly closer than this
STEAL_RADIUS = 1.0  # off-mask re-selection keeps the old assignee's target inside this radius
BASE_REWARD = 30.0
DECAY_PER_10_STEPS = 0.5
COMPLETION_BONUS = 0.1
STEP_PENALTY = -1.0
INVALID_MOVE_EXECUTE = -1.5
INVALID_SELECT = -3.0
DEFAULT_EPISODE_LIMIT = 700
DEFAULT_NUM_BINS = 5

# Per-agent actions.
IDLE, MOVE, EXECUTE = 0, 1, 2
SELECT0 = 3

# Agent modes as they appear in the observation.
MODE_IDLE, MODE_MOVING, MODE_EXECUTING = 0, 1, 2


@dataclass(frozen=True)
class StatConfig:
    """One STAT setting: team size, task count, plane size and the episode limit."""

    agents: int
    tasks: int
    width: float
    height: float
    episode_limit: int = DEFAULT_EPISODE_LIMIT
    num_bins: int = DEFAULT_NUM_BINS
    regime: str = "custom"
    train_steps: int = 0

    def __post_init__(self) -> None:
        if self.agents < 1:
            raise ConfigError(f"agents must be >= 1, got {self.agents}")
        if self.tasks < 1:
            raise ConfigError(f"tasks must be >= 1, got {self.tasks}")
        if not (self.width > 0 and self.height > 0):
            raise ConfigError(f"width and height must be > 0, got {self.width}x{self.height}")
        if self.episode_limit < 1:
            raise ConfigError(f"episode_limit must be >= 1, got {self.episode_limit}")
        if self.num_bins < 2:
            raise ConfigError(f"num_bins must be >= 2, got {self.num_bins}")

    @property
    def name(self) -> str:
        """Return the paper-style name, e.g. '5A-25T-50x30'."""
        return f"{self.agents}A-{self.tasks}T-{_fmt(self.width)}x{_fmt(self.height)}"

    @property
    def num_actions(self) -> int:
        """Return the per-agent action count 3 + m."""
        return SELECT0 + self.tasks

    @property
    def obs_dim(self) -> int:
        """Return the global state length n*m + n + 2m."""
        return self.agents * self.tasks + self.agents + 2 * self.tasks


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


CONFIGS: dict[str, StatConfig] = {
    c.name: c
    for c in [
        StatConfig(3, 6, 5, 3, regime="baseline", train_steps=2_000_000),
        StatConfig(3, 6, 10, 6, regime="baseline", train_steps=2_000_000),
        StatConfig(3, 12, 10, 6, regime="baseline", train_steps=2_000_000),
        StatConfig(5, 12, 10, 6, regime="baseline", train_steps=2_000_000),
        StatConfig(5, 25, 25, 15, regime="extreme", train_steps=20_000_000),
        StatConfig(5, 25, 50, 30, regime="extreme", train_steps=20_000_000),
        StatConfig(5, 50, 50, 30, regime="extreme", train_steps=20_000_000),
        StatConfig(5, 100, 50, 30, regime="extreme", train_steps=20_000_000),
        StatConfig(9, 25, 50, 30, regime="extreme", train_steps=20_000_000),
    ]
}

_NAME = re.compile(r"^(\d+)A-(\d+)T-(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)$")


def get_config(name: str, episode_limit: int | None = None) -> StatConfig:
    """Return the configuration called `name`.

    The nine paper names are known; any other name of the form 'nA-mT-WxH' builds a custom
    setting. Raises ConfigError for anything else.
    """
    cfg = CONFIGS.get(name)
    if cfg is None:
        match = _NAME.match(name)
        if match is None:
            known = ", ".join(CONFIGS)
            raise ConfigError(f"unknown STAT config {name!r}; known: {known} (or nA-mT-WxH)")
        n, m, w, h = match.groups()
        cfg = StatConfig(int(n), int(m), float(w), float(h))
    if episode_limit is not None:
        cfg = StatConfig(cfg.agents, cfg.tasks, cfg.width, cfg.height, episode_limit,
                         cfg.num_bins, cfg.regime, cfg.train_steps)
    return cfg
