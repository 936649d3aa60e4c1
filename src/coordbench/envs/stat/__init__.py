"""STAT: commitment-constrained spatial task allocation (vectorized core + standard wrappers)."""

from .config import CONFIGS, StatConfig, get_config
from .vec import StatState, StatVecEnv

__all__ = ["CONFIGS", "StatConfig", "StatState", "StatVecEnv", "get_config"]
