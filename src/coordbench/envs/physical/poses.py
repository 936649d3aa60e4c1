"""Pose samples of a PhysicalEnv: what places every body, so a scene can be drawn again from a
sample without simulating.

A sample is three arrays: per robot its base x, y (world) and yaw and its joint positions
(a CoBot's seven in the order of `robot.JOINTS`; a G1's 31 upper-body joints in the order of
`g1.UPPER_JOINTS`), every free body's world position and quaternion,
and the task's other joints (MoveHouse's door hinge). Together they are the whole `qpos` of
the model, so `apply` followed by a forward pass reproduces the sampled scene.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

FREE_WIDTH = 7  # position (3) and quaternion (w, x, y, z)


@dataclass(frozen=True)
class PoseLayout:
    """Where the sampled values live in a model's qpos."""

    robot_qadr: np.ndarray  # (n, width) qpos address of each robot joint
    base_xy: np.ndarray  # (n, 2) world position of each base at zero slide (its spawn)
    bodies: tuple[str, ...]  # free bodies, in qpos order
    body_qadr: np.ndarray  # (B,) first qpos address of each free body's joint
    joints: tuple[str, ...]  # the task's other one-dof joints
    joint_qadr: np.ndarray  # (J,)


def pose_layout(env) -> PoseLayout:
    """Return the layout of a physical environment's model (its robots' joints from
    `env.qadr`: base x, y, yaw first); raises ValueError for a joint kind no task uses (a
    ball joint), which a sample could not hold."""
    model = env.model
    robot_qadr = np.asarray(env.qadr, dtype=np.int64)
    n_robots = len(robot_qadr)
    # the slides move the base relative to where the model placed it; a sample holds the
    # world position, which is what a viewer draws
    base_xy = np.array([model.body_pos[b][:2] for b in env.base_bodies],
                       dtype=float).reshape(n_robots, 2)
    taken = set(robot_qadr.ravel().tolist())
    bodies, body_qadr, joints, joint_qadr = [], [], [], []
    for j in range(model.njnt):
        adr = int(model.jnt_qposadr[j])
        if adr in taken:
            continue
        kind = int(model.jnt_type[j])
        if kind == int(mujoco.mjtJoint.mjJNT_FREE):
            bodies.append(model.body(model.jnt_bodyid[j]).name)
            body_qadr.append(adr)
        elif kind in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            joints.append(model.joint(j).name)
            joint_qadr.append(adr)
        else:
            raise ValueError(f"joint {model.joint(j).name!r}: a ball joint cannot be sampled")
    return PoseLayout(robot_qadr, base_xy, tuple(bodies), np.array(body_qadr, dtype=np.int64),
                      tuple(joints), np.array(joint_qadr, dtype=np.int64))


def sample(data: mujoco.MjData, lay: PoseLayout
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (robots (n, width), bodies (B, 7), joints (J,)) of the current state."""
    q = data.qpos
    robots = q[lay.robot_qadr]  # fancy indexing copies
    robots[:, :2] += lay.base_xy
    bodies = q[lay.body_qadr[:, None] + np.arange(FREE_WIDTH)]
    return robots, bodies, q[lay.joint_qadr]


def apply(model: mujoco.MjModel, data: mujoco.MjData, lay: PoseLayout, robots: np.ndarray,
          bodies: np.ndarray, joints: np.ndarray) -> None:
    """Set the model's configuration to a sample and recompute every body, geom, camera and
    light pose (no time passes, nothing is simulated)."""
    r = np.array(robots, dtype=float)
    r[:, :2] -= lay.base_xy
    data.qpos[lay.robot_qadr] = r
    if len(lay.bodies):
        data.qpos[lay.body_qadr[:, None] + np.arange(FREE_WIDTH)] = bodies
    if len(lay.joints):
        data.qpos[lay.joint_qadr] = joints
    data.qvel[:] = 0.0
    mujoco.mj_forward(model, data)


def free_camera(lookat: np.ndarray, distance: float, azimuth: float,
                elevation: float) -> mujoco.MjvCamera:
    """Return a free camera looking at `lookat` (world) from `distance` m, `azimuth` and
    `elevation` in degrees (azimuth 90, elevation < 0: from the -y side, looking down)."""
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = lookat
    cam.distance, cam.azimuth, cam.elevation = distance, azimuth, elevation
    return cam


def video_renderer(model: mujoco.MjModel, width: int, height: int) -> mujoco.Renderer:
    """Return a headless renderer of `width` x `height` for `model` (whose offscreen buffer
    the scenes keep small, for egocentric frames, and which is enlarged here)."""
    vis = model.vis.global_
    vis.offwidth, vis.offheight = max(width, vis.offwidth), max(height, vis.offheight)
    return mujoco.Renderer(model, height=height, width=width)
