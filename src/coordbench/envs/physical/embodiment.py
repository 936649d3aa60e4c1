"""The physical suite's two embodiments, by name: `cobot` (the fast stand-in: a holonomic
base, a planar arm, a parallel gripper; `robot.py`) and `g1` (Unitree G1 humanoids with
Dex3-1 hands; `g1.py`, `g1_env.py`). One place turns a task name and an embodiment into an
environment, and tells an embodiment's action and proprioception widths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import g1, g1_env, robot
from .env import PhysicalEnv
from .tasks import EMBODIMENTS, get_task


@dataclass(frozen=True)
class Embodiment:
    """What a policy of an embodiment sees and commands, per robot."""

    name: str
    action_dim: int
    proprio_dim: int
    # per action dimension, the scale of DART perturbations while recording demonstrations
    perturb_scale: np.ndarray
    action_names: tuple[str, ...] = ()  # one robot's action, column by column
    position_names: tuple[str, ...] = ()  # the first half of its proprioception

    @property
    def proprio_names(self) -> tuple[str, ...]:
        """Return the names of one robot's proprioception columns (positions, then their
        velocities)."""
        return (*self.position_names, *(f"{n}_vel" for n in self.position_names))


def _g1_perturb() -> np.ndarray:
    scale = np.zeros(g1_env.ACTION_DIM)
    scale[:2] = 0.03  # base vx, vy (m/s)
    # shoulders and elbows (rad); not the wrists: their motors give 5 N m, and noise on
    # their targets spends it, so the hooked fingers let go; nor the waist or the fingers
    for first in (6, 13):  # each arm's first joint in the action
        scale[first:first + 4] = 0.01
    return scale


_COBOT_ARM = ("lift", "shoulder", "elbow", "wrist_pitch", "wrist_roll")
_BASE = ("base_x", "base_y", "base_yaw")
KINDS = {
    "cobot": Embodiment("cobot", robot.ACTION_DIM, robot.PROPRIO_DIM,
                        np.array([0.1, 0.1, 0.0, 0.0, 0.08, 0.08, 0.0, 0.0, 0.0]),
                        action_names=("base_vx", "base_vy", "base_wz", *_COBOT_ARM, "grip"),
                        position_names=(*_BASE, *_COBOT_ARM, "finger")),
    "g1": Embodiment("g1", g1_env.ACTION_DIM, g1_env.PROPRIO_DIM, _g1_perturb(),
                     action_names=("base_vx", "base_vy", "base_wz", *g1.UPPER_JOINTS),
                     position_names=(*_BASE, *g1.UPPER_JOINTS)),
}
assert tuple(KINDS) == EMBODIMENTS
assert all(len(k.action_names) == k.action_dim and len(k.proprio_names) == k.proprio_dim
           for k in KINDS.values())


def obs_names(task_name: str, embodiment: str = "cobot") -> tuple[str, ...]:
    """Return the names of one robot's state observation columns (`local_obs`), in its own
    frame: proprioception, then the object, grasp point, goal, touch, time, headings and
    the task's extra bodies."""
    xyz = ("x", "y", "z")
    extras = get_task(task_name, embodiment).extra_bodies
    return (*KINDS[embodiment].proprio_names, *(f"object_{a}" for a in xyz),
            *(f"object_up_{a}" for a in xyz), *(f"grasp_point_{a}" for a in xyz),
            *(f"goal_{a}" for a in xyz), "holding", "time",
            *(f"object_heading_{a}" for a in xyz), "goal_heading_cos", "goal_heading_sin",
            *(f"{body}_{a}" for body in extras for a in xyz))


def action_bounds(embodiment: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (low, high) of one robot's action: the CoBot's constants; a G1's base limits
    and its upper-body joints' ranges (read from the G1 model the machine has)."""
    if embodiment == "cobot":
        return robot.ACTION_LOW, robot.ACTION_HIGH
    if embodiment not in _BOUNDS:
        from .g1 import resolve_model
        from .g1_ik import _solo

        _BOUNDS[embodiment] = g1_env.action_bounds(_solo(resolve_model()))
    return _BOUNDS[embodiment]


_BOUNDS: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def embodiment_of(env: PhysicalEnv) -> Embodiment:
    """Return the embodiment record of an environment."""
    return KINDS[getattr(env, "embodiment", "cobot")]


def make_env(task_name: str, embodiment: str = "cobot",
             g1_model: str | Path | None = None) -> PhysicalEnv:
    """Return a new environment of `task_name` played by `embodiment`'s robots (a G1 model
    file from `g1_model`, else where `g1.resolve_model` finds one)."""
    task = get_task(task_name, embodiment)
    if embodiment == "g1":
        return g1_env.G1Env(task, Path(g1_model) if g1_model else None)
    return PhysicalEnv(task)


def use_g1_model(path: str | Path | None) -> None:
    """Make `path` (a `--g1-model`) the G1 model of this process and the workers it starts
    (they read $COORDBENCH_G1_MODEL); checked now, so a bad path fails before any work."""
    from .g1 import ENV_VAR, require_model

    if path is not None:
        os.environ[ENV_VAR] = str(Path(require_model(path)).resolve())
