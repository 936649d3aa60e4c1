"""G1Env: a physical task played by Unitree G1 humanoids with Dex3-1 hands (`g1.py`), with
the CoBot environment's scoring, sensing, state and rendering.

Action per robot (34): [vx, vy, wz] of the planar base in the robot's frame (m/s, rad/s),
then position targets (rad) of the 31 upper-body joints in `g1.UPPER_JOINTS` order (waist
yaw, roll, pitch; the left arm's seven; the right arm's seven; the left hand's seven; the
right hand's seven), at 50 Hz. A target is clipped to its joint's range and to within
TARGET_REACH of where the joint is. Proprioception per robot (68): base x, y, yaw and the 31
joint positions, then their velocities.

The task's MJCF (written for `embodiment="g1"`) holds the scene without robots and names
each robot's pose in a custom numeric `robotK_pose` (x, y, yaw); the robots are attached
here with `MjSpec`. The compiled scene is cached per task layout and model file, and each
environment gets its own copy (tasks move bodies of the model at reset).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import mujoco
import numpy as np

from . import g1
from .env import PhysicalEnv, Sensing

N_UPPER = len(g1.UPPER_JOINTS)
ACTION_DIM = 3 + N_UPPER
PROPRIO_DIM = 2 * (3 + N_UPPER)
BASE_LIMIT = np.array([0.6, 0.6, 1.0])  # |vx|, |vy| (m/s), |wz| (rad/s)
TARGET_REACH = 0.3  # rad: how far a joint's target may be from the joint


class G1Env(PhysicalEnv):
    """One task instance played by G1s (see the module docstring); the same interface as
    PhysicalEnv: `reset(seed)`, `step((n, 34) actions)`, `sense(i)`, `local_obs()` ..."""

    embodiment = "g1"

    def __init__(self, task, model_path: Path | None = None) -> None:
        self.task = task
        self.n = task.n_robots
        self.model_path = g1.resolve_model(model_path)
        self.model = _scene(task, self.model_path)
        m = self.model
        pre = [f"robot{i}/" for i in range(self.n)]
        names = ("base_x", "base_y", "base_yaw", *g1.UPPER_JOINTS)
        self.act_ids = np.array([[m.actuator(p + a).id for a in names] for p in pre])
        self.qadr = np.array([[m.jnt_qposadr[m.joint(p + j).id] for j in names] for p in pre])
        self.vadr = np.array([[m.jnt_dofadr[m.joint(p + j).id] for j in names] for p in pre])
        self.chassis = [m.body(p + "pelvis").id for p in pre]
        self.base_bodies = self.chassis
        self.palms = np.array([[m.site(p + f"{side}_palm").id for side in ("left", "right")]
                               for p in pre])
        # the hand partners see and `Sensing.hand` names: the right palm (`Sensing.palms`
        # has both)
        self.tcp = [m.site(p + "right_palm").id for p in pre]
        bodies = [m.body(m.geom_bodyid[g]).name for g in range(m.ngeom)]
        self.robot_geoms = [np.array([g for g in range(m.ngeom) if bodies[g].startswith(p)])
                            for p in pre]
        self._index([self._touch_groups(bodies, p, i) for i, p in enumerate(pre)])
        self.action_low, self.action_high = action_bounds(m, pre[0])

    def _touch_groups(self, bodies: list[str], prefix: str, i: int = 0) -> list[list[int]]:
        """Return robot i's two touch groups: its two hands (a G1 holds what both its
        hands touch), or for a robot that holds in one hand (the task's `g1_hands`, or
        `g1_hands_of(i)`), that hand's fingers and the rest of that hand (palm, thumb)."""
        def hand(side: str) -> list[int]:
            return [g for g, body in enumerate(bodies) if body.startswith(prefix + side)
                    and self.model.geom_contype[g] and g1.is_hand(body[len(prefix):])]
        of = getattr(self.task, "g1_hands_of", None)
        sides = of(i) if of else getattr(self.task, "g1_hands", ("left", "right"))
        if len(sides) == 2:
            return [hand(side) for side in sides]
        geoms = hand(sides[0])
        fingers = [g for g in geoms if re.search(r"_(index|middle)_", bodies[g])]
        return [fingers, [g for g in geoms if g not in fingers]]

    def _start_pose(self) -> None:
        """Keep the model's zero pose: forearms forward, hands open (the tasks place the
        robots a step back from what they grasp)."""

    def step(self, actions: np.ndarray) -> None:
        """Apply one control step of (n, 34) actions, simulate 4 physics steps, score."""
        a = self._checked(actions, self.action_low, self.action_high)
        # a joint's target at most TARGET_REACH from where the joint is, as a robot's
        # low-level controller limits a target's jump: arms whipping through an untrained
        # policy's random targets blew the simulation up in 6 of 6 episodes within 300 steps
        q = self.data.qpos[self.qadr[:, 3:]]
        a[:, 3:] = np.minimum(np.maximum(a[:, 3:], q - TARGET_REACH), q + TARGET_REACH)
        yaw = self.data.qpos[self.qadr[:, 2]]
        c, s = np.cos(yaw), np.sin(yaw)
        ctrl = a.copy()
        ctrl[:, 0] = c * a[:, 0] - s * a[:, 1]  # robot-frame velocity -> world slides
        ctrl[:, 1] = s * a[:, 0] + c * a[:, 1]
        self.data.ctrl[self._ctrl_ids] = ctrl.ravel()
        self._simulate()

    def sense(self, i: int) -> Sensing:
        """Return what robot i perceives (`joints`: its 31 upper-body joint positions;
        `hand`: its grasping palm; `palms`: both palms, left then right)."""
        d = self.data
        q = d.qpos[self.qadr[i]]
        bodies = d.xpos[self._sensed_bodies[i]]
        sites = d.site_xpos[self._sensed_sites[i]]
        axes = d.xmat[self.obj].reshape(3, 3).T.copy()
        return Sensing(
            base_xy=bodies[0, :2], yaw=float(q[2]), joints=q[3:].copy(), handle=sites[0],
            obj_pos=bodies[1], obj_up=axes[2], obj_lift=float(bodies[1, 2] - self.obj_z0),
            goal=np.array(self.task.robot_goal(self, i), dtype=float),
            holding=bool(self._held()[i]), t=self.t, hand=sites[1], partner_hands=sites[2:],
            extras=bodies[2:], obj_x=axes[0], goal_yaw=self.goal_yaw,
            palms=d.site_xpos[self.palms[i]].copy())

    def proprio(self) -> np.ndarray:
        """Return (n, 68): base x, y, yaw and the 31 upper-body joints, then their
        velocities."""
        d = self.data
        out = np.zeros((self.n, PROPRIO_DIM))
        half = PROPRIO_DIM // 2
        for i in range(self.n):
            out[i, :half] = d.qpos[self.qadr[i]]
            out[i, :2] = d.xpos[self.chassis[i]][:2]
            out[i, half:] = d.qvel[self.vadr[i]]
        return out

    @property
    def obs_dim(self) -> int:
        """Return the width of one robot's state observation (87 + 3 per extra body)."""
        return PROPRIO_DIM + 19 + 3 * len(self.extras)

    def render_ego(self, i: int, width: int = 96, height: int = 96) -> np.ndarray:
        """Return robot i's head camera frame (height, width, 3) uint8 (headless GL)."""
        if self._renderer is None or self._renderer.width != width or \
                self._renderer.height != height:
            self.close()
            self._renderer = mujoco.Renderer(self.model, height=height, width=width)
        self._renderer.update_scene(self.data, camera=f"robot{i}/ego")
        return self._renderer.render().copy()


def action_bounds(model: mujoco.MjModel, prefix: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Return (low, high) of one G1's action in `model` (its joints named `prefix`...): the
    base's speed limits, then each upper-body joint's range."""
    ranges = model.jnt_range[[model.joint(prefix + j).id for j in g1.UPPER_JOINTS]]
    return np.r_[-BASE_LIMIT, ranges[:, 0]], np.r_[BASE_LIMIT, ranges[:, 1]]


_SCENES: dict[tuple[str, str], mujoco.MjModel] = {}


def _scene(task, path: Path) -> mujoco.MjModel:
    """Return a fresh copy of the compiled scene of `task` with its G1s."""
    xml = task.xml()
    key = (xml, str(Path(path).resolve()))
    if key not in _SCENES:
        spec = mujoco.MjSpec.from_string(xml)
        poses = []
        for i in range(task.n_robots):
            numeric = spec.numeric(f"robot{i}_pose")
            if numeric is None:
                raise ValueError(f"{task.name}'s G1 scene names no robot{i}_pose")
            x, y, yaw = numeric.data
            poses.append((x, y, yaw))
        g1.add_robots(spec, path, poses)
        _SCENES[key] = spec.compile()
    return copy.copy(_SCENES[key])
