"""Recorded poses of a physical episode as arrays: a pure function of its trajectory.

`recorded_poses(trajectory)` decodes the episode's physical_poses event (see
`core.trajectory.PhysicalPosesEvent`) into numpy arrays. It needs neither MuJoCo nor the run
directory, so viewers and notebooks can draw robots and objects from a trajectory alone;
`video.render_video` draws them with MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coordbench.core.trajectory import PhysicalPosesEvent, Trajectory
from coordbench.errors import ConfigError, RunDirError

# the columns of `PhysicalPoses.robots` (the order of envs/physical/robot.JOINTS, with the
# base in world coordinates)
ROBOT_FIELDS = ("x", "y", "yaw", "lift", "shoulder", "elbow", "wrist_pitch", "wrist_roll",
                "finger_left", "finger_right")


def robot_fields(embodiment: str) -> tuple[str, ...]:
    """Return the columns of a robot's pose sample: ROBOT_FIELDS for a CoBot; base x, y, yaw
    and the 31 upper-body joints for a G1."""
    if embodiment == "g1":
        from coordbench.envs.physical.g1 import UPPER_JOINTS

        return ("x", "y", "yaw", *UPPER_JOINTS)
    return ROBOT_FIELDS


@dataclass(frozen=True)
class PhysicalPoses:
    """The poses of one physical episode at its K recorded steps.

    steps (K,) control steps, sampled every `every` steps of `dt` seconds and at the last
    step; t (K,) seconds of simulated time; robots (K, n, width) with the columns of
    `robot_fields(embodiment)` (base x, y in m, world; yaw and joints in rad; a CoBot's lift
    and fingers in m); bodies {name: (K, 7)} world position and quaternion (w, x, y, z) of
    each free body (the task's object first where it has one); joints {name: (K,)} the
    task's other joints.
    """

    task: str
    seed: int
    dt: float
    every: int
    steps: np.ndarray
    t: np.ndarray
    robots: np.ndarray
    bodies: dict[str, np.ndarray]
    joints: dict[str, np.ndarray]
    embodiment: str = "cobot"

    def __len__(self) -> int:
        """Return K, the number of recorded steps."""
        return len(self.steps)


def _decode(rows: list, shape: tuple[int, ...], unit: float, what: str) -> np.ndarray:
    counts = np.asarray(rows, dtype=np.int64)
    if counts.shape != shape:
        raise RunDirError(f"the recorded poses are corrupt: {what} has shape {counts.shape}, "
                          f"expected {shape}")
    # integers summed exactly, scaled once: no drift however long the episode
    return np.cumsum(counts, axis=0) * unit


def no_poses_reason(schema_version: str) -> str:
    """Return why an episode written with `schema_version` has no poses."""
    try:
        older = tuple(int(x) for x in schema_version.split(".")) < (1, 5)
    except ValueError:
        older = False
    if older:
        return (f"written with trajectory schema {schema_version}; poses are recorded since "
                "1.5")
    return f"its trajectory (schema {schema_version}) holds no physical_poses event"


def recorded_poses(trajectory: Trajectory) -> PhysicalPoses:
    """Return the recorded poses of a physical episode as arrays (see PhysicalPoses).

    Raises ConfigError for an episode of another suite and RunDirError for one recorded
    without poses (before trajectory schema 1.5) or with inconsistent ones."""
    h = trajectory.header
    if h.suite != "physical":
        raise ConfigError(f"episode {h.episode_id} is a {h.suite} episode, not a physical one; "
                          "only physical episodes have poses")
    events = trajectory.steps(PhysicalPosesEvent)
    if not events:
        why = no_poses_reason(h.schema_version)
        raise RunDirError(f"episode {h.episode_id} has no recorded poses ({why}): rerun the "
                          "condition into a new run directory to record them")
    e = events[-1]
    k, n = len(e.steps), len(h.team)
    steps = np.asarray(e.steps, dtype=np.int64)
    dt = float(h.params.get("control_dt", 0.02))
    embodiment = str(h.params.get("embodiment", "cobot"))
    return PhysicalPoses(
        task=h.task_id, seed=h.seed, dt=dt, every=e.every, steps=steps, t=steps * dt,
        robots=_decode(e.robots, (k, n, len(robot_fields(embodiment))), e.unit, "robots"),
        bodies={name: _decode(v, (k, 7), e.unit, f"body {name}") for name, v in e.bodies.items()},
        joints={name: _decode(v, (k,), e.unit, f"joint {name}") for name, v in e.joints.items()},
        embodiment=embodiment)
