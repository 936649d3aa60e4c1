"""PhysicalEnv: one task's MuJoCo model, N CoBots, latched three-phase scoring, sensing,
observations, exact state save/restore and headless egocentric rendering."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass

import mujoco
import numpy as np

from coordbench.errors import ActionError

from .robot import ACTION_HIGH, ACTION_LOW, FINGER_CLOSED, JOINTS, PROPRIO_DIM
from .scene import CONTROL_DT, SUBSTEPS

STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


def _log_warning(message: str) -> None:
    # MuJoCo's own handler prints and appends to MUJOCO_LOG.TXT in whatever folder the user
    # is in; an episode that met an unstable state says so in its trajectory instead
    logging.getLogger("coordbench.physics").warning("MuJoCo: %s", message.strip())


if mujoco.get_mju_user_warning() is None:
    mujoco.set_mju_user_warning(_log_warning)

# MuJoCo's warnings of a state it found not finite (or beyond 1e10) and reset
BAD_STATE = [int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                              mujoco.mjtWarning.mjWARN_BADQACC)]


@dataclass(slots=True)
class Sensing:
    """What one robot perceives: its own body, the objects in view, and its instruction's
    goal. Experts and local observations read only this."""

    base_xy: np.ndarray  # (2,) world
    yaw: float
    joints: np.ndarray  # lift, shoulder, elbow, wrist pitch, wrist roll, finger opening
    handle: np.ndarray  # (3,) world position of this robot's grasp point
    obj_pos: np.ndarray  # (3,) world position of the main object
    obj_up: np.ndarray  # (3,) the object's local z axis in world
    obj_lift: float  # how far the object is above where it rests (m)
    goal: np.ndarray  # (3,) world goal of this task (from the instruction)
    holding: bool  # own hand's touch sensing: both fingers on the grasp part
    t: float  # seconds since reset
    hand: np.ndarray  # (3,) own hand (between the fingers), world
    partner_hands: np.ndarray  # (n-1, 3) the other robots' hands, world (seen, not told)
    extras: np.ndarray  # (k, 3) world positions of the task's other bodies in view
    obj_x: np.ndarray  # (3,) the main object's local x axis in world (its heading)
    goal_yaw: float | None = None  # the object's goal heading (rad), where the task has one
    palms: np.ndarray | None = None  # (2, 3) a G1's left and right palm (world); CoBot: None

    def to_robot(self, p: np.ndarray) -> np.ndarray:
        """Return world point p (x, y[, z]) in this robot's frame (forward, left[, up])."""
        dx, dy = p[0] - self.base_xy[0], p[1] - self.base_xy[1]
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        out = [c * dx + s * dy, -s * dx + c * dy]
        return np.array(out + ([p[2]] if len(p) > 2 else []))


JACOBIANS = {"auto": mujoco.mjtJacobian.mjJAC_AUTO, "dense": mujoco.mjtJacobian.mjJAC_DENSE,
             "sparse": mujoco.mjtJacobian.mjJAC_SPARSE}


class PhysicalEnv:
    """One task instance played by CoBots. `reset(seed)` draws object and goal poses;
    `step(actions)` takes (n, 9) CoBot actions at 50 Hz; `phase` is the number of phases
    completed (latched)."""

    embodiment = "cobot"

    def __init__(self, task) -> None:
        self.task = task
        self.n = task.n_robots
        self.model = mujoco.MjModel.from_xml_string(task.xml())
        m = self.model
        self.act_ids = np.array([[m.actuator(f"r{i}_{a}").id for a in
                                  ("vx", "vy", "wz", "lift", "sh", "el", "wp", "wr", "fl", "fr")]
                                 for i in range(self.n)])
        self.qadr = np.array([[m.jnt_qposadr[m.joint(f"r{i}_{j}").id] for j in JOINTS]
                              for i in range(self.n)])
        self.vadr = np.array([[m.jnt_dofadr[m.joint(f"r{i}_{j}").id] for j in JOINTS]
                              for i in range(self.n)])
        self.chassis = [m.body(f"r{i}_chassis").id for i in range(self.n)]
        # the bodies the base slides move (world-axis slides from where the model puts them)
        self.base_bodies = [m.body(f"r{i}_base").id for i in range(self.n)]
        self.tcp = [m.site(f"r{i}_tcp").id for i in range(self.n)]
        self.robot_geoms = [np.array([g for g in range(m.ngeom) if m.body(m.geom_bodyid[g]).name
                                      .startswith(f"r{i}_")]) for i in range(self.n)]
        self.fingers = np.array([[m.geom(f"r{i}_fl").id, m.geom(f"r{i}_fr").id]
                                 for i in range(self.n)])
        self._index([[[fl], [fr]] for fl, fr in self.fingers])

    def _index(self, touch: list[list[list[int]]]) -> None:
        """Build the lookups every embodiment shares, from the model and `touch`: per robot,
        its two groups of geoms that must both touch its grasp part for it to hold (the
        CoBot's two fingers; the G1's two hands, or a hand's thumb and fingers)."""
        m = self.model
        m.opt.jacobian = JACOBIANS[self.task.jacobian]
        self.data = mujoco.MjData(m)
        self._owner = np.full(m.ngeom, -1)  # geom -> robot, or -1
        for i, gs in enumerate(self.robot_geoms):
            self._owner[gs] = i
        self._partner_tcp = [[self.tcp[j] for j in range(self.n) if j != i]
                             for i in range(self.n)]
        self.grasp_geoms = [np.array([m.geom(g).id for g in names])
                            for names in self.task.grasp_geoms()]
        # contact pair (either order) -> 2 * robot + group where that touch group touches its
        # robot's grasp part, else -1; and -> True between two robots' bodies: one lookup
        # per contact answers the touch sensing and the collision count
        self._touch_slot = np.full((m.ngeom, m.ngeom), -1, dtype=np.int16)
        for i, gs in enumerate(self.grasp_geoms):
            for f, group in enumerate(touch[i]):
                for geom in group:
                    self._touch_slot[geom, gs] = self._touch_slot[gs, geom] = 2 * i + f
        a, b = self._owner[:, None], self._owner[None, :]
        self._cross_robot = (a >= 0) & (b >= 0) & (a != b)
        self._holds: np.ndarray | None = None
        self.handle_sites = [m.site(s).id for s in self.task.handle_sites()]
        self.obj = m.body(self.task.object_body).id
        self.obj_dof = m.jnt_dofadr[m.body_jntadr[self.obj]]
        self.extras = [m.body(b).id for b in self.task.extra_bodies]
        # sense(i) gathers each source array once (chassis, object, extras; grasp point, own
        # hand, partners' hands) and hands out rows of those copies
        self._sensed_bodies = [np.array([self.chassis[i], self.obj, *self.extras])
                               for i in range(self.n)]
        self._sensed_sites = [np.array([self.handle_sites[i], self.tcp[i],
                                        *self._partner_tcp[i]]) for i in range(self.n)]
        self._ctrl_ids = self.act_ids.ravel()
        self._renderer = None
        self.goal = np.zeros(3)
        self.goal_yaw: float | None = None
        self.rng = np.random.default_rng(0)
        self.seed = 0

    # -- episode ------------------------------------------------------------------------------
    def reset(self, seed: int) -> None:
        """Reset to the task's layout for `seed` (object and goal poses drawn from it)."""
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        mujoco.mj_resetData(self.model, self.data)
        self.goal_yaw = None
        self._start_pose()
        self.task.reset(self, self.rng)
        mujoco.mj_forward(self.model, self.data)
        self._holds = None
        self.obj_z0 = float(self.data.xpos[self.obj][2])
        self.obj_pos0 = self.data.xpos[self.obj].copy()
        self.extra_pos0 = self.data.xpos[self.extras].copy()
        self.phase = 0
        self.phase_step = [None, None, None]
        self.hold_timer = 0.0
        self.steps = 0
        self.unstable_at: int | None = None

    def _start_pose(self) -> None:
        """Fold the arms (the model's zero pose stretches them through the objects)."""
        for i in range(self.n):
            self.data.qpos[self.qadr[i, 4]] = 1.2
            self.data.qpos[self.qadr[i, 5]] = -2.4

    @property
    def t(self) -> float:
        """Return seconds of simulated time since reset."""
        return self.steps * CONTROL_DT

    def step(self, actions: np.ndarray) -> None:
        """Apply one control step of (n, 9) actions, simulate 4 physics steps, score phases."""
        a = self._checked(actions, ACTION_LOW, ACTION_HIGH)
        d = self.data
        yaw = d.qpos[self.qadr[:, 2]]
        ctrl: list[float] = []
        # per robot in Python floats: the same IEEE operations as numpy's on these tiny
        # arrays, without a dozen numpy calls of about 0.6 us each
        for (vx, vy, wz, lift, sh, el, wp, wr, grip), c, s in zip(
                a.tolist(), np.cos(yaw).tolist(), np.sin(yaw).tolist(), strict=True):
            finger = FINGER_CLOSED if grip >= 0.5 else 0.0
            ctrl += [c * vx - s * vy, s * vx + c * vy,  # robot-frame velocity -> world slides
                     wz, lift, sh, el, wp - (sh + el),  # pitch relative to level (pitches add)
                     wr, finger, finger]
        d.ctrl[self._ctrl_ids] = ctrl
        self._simulate()

    def _simulate(self) -> None:
        """Step the physics one control step and score it. Where MuJoCo found the positions,
        velocities or accelerations not finite it has reset the state (the robots and objects
        back at the model's origin): `unstable_at` names the step, and the episode is
        over."""
        mujoco.mj_step(self.model, self.data, nstep=SUBSTEPS)
        self._holds = None
        self.steps += 1
        if self.unstable_at is None and any(self.data.warning[w].number for w in BAD_STATE):
            self.unstable_at = self.steps
        self._score()

    def _checked(self, actions: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Return `actions` as (n, width) floats clipped to [low, high]; ActionError for
        another shape or a value that is not finite."""
        a = np.asarray(actions, dtype=float)
        if a.shape != (self.n, len(low)):
            raise ActionError(f"actions must have shape ({self.n}, {len(low)}), got {a.shape}")
        if not np.isfinite(a).all():
            raise ActionError("actions contain NaN or infinity")
        return np.minimum(np.maximum(a, low), high)  # np.clip, without its wrappers

    def _score(self) -> None:
        flags = self.task.phase_flags(self)
        if self.phase == 0 and flags[0]:
            self._latch(0)
        elif self.phase == 1 and flags[1]:
            self._latch(1)
        elif self.phase == 2:
            self.hold_timer = self.hold_timer + CONTROL_DT if flags[2] else 0.0
            if self.hold_timer >= self.task.settle_s - 1e-9:
                self._latch(2)

    def _latch(self, k: int) -> None:
        self.phase = k + 1
        self.phase_step[k] = self.steps

    @property
    def done(self) -> bool:
        """Return True once the last phase is complete, the step budget is spent or the
        simulation was unstable."""
        return self.phase == 3 or self.steps >= self.task.limit or self.unstable_at is not None

    def unstable_reason(self) -> str | None:
        """Return why the episode stopped early where the simulation was unstable."""
        if self.unstable_at is None:
            return None
        return (f"simulation unstable at step {self.unstable_at}: MuJoCo found the state not "
                "finite and reset it")

    # -- physical state -----------------------------------------------------------------------
    def holds(self) -> np.ndarray:
        """Return (n,) bools: both of robot i's fingers touch its designated grasp part."""
        return self._held().copy()

    def _held(self) -> np.ndarray:
        # experts, scoring and monitors all ask every step: computed once per step
        if self._holds is not None:
            return self._holds
        d = self.data
        touch = np.zeros(2 * self.n, dtype=bool)
        if d.ncon:
            g = d.contact.geom[:d.ncon]
            slot = self._touch_slot[g[:, 0], g[:, 1]]
            touch[slot[slot >= 0]] = True
        self._holds = touch.reshape(self.n, 2).all(axis=1)
        return self._holds

    def robot_contacts(self) -> int:
        """Return the number of contacts between bodies of different robots (collisions)."""
        d = self.data
        if not d.ncon:
            return 0
        g = d.contact.geom[:d.ncon]
        return int(self._cross_robot[g[:, 0], g[:, 1]].sum())

    def obj_tilt_deg(self) -> float:
        """Return the main object's tilt from upright (degrees)."""
        zz = self.data.xmat[self.obj].reshape(3, 3)[2, 2]
        return math.degrees(math.acos(min(max(float(zz), -1.0), 1.0)))

    def obj_speed(self) -> tuple[float, float]:
        """Return the main object's linear and angular speed."""
        v = self.data.qvel[self.obj_dof:self.obj_dof + 6]
        # norm's own formula for a real vector (sqrt of the dot), without its dispatch
        return math.sqrt(v[:3] @ v[:3]), math.sqrt(v[3:] @ v[3:])

    def sense(self, i: int) -> Sensing:
        """Return what robot i perceives."""
        d = self.data
        q = d.qpos[self.qadr[i]]
        bodies = d.xpos[self._sensed_bodies[i]]
        sites = d.site_xpos[self._sensed_sites[i]]
        axes = d.xmat[self.obj].reshape(3, 3).T.copy()  # rows: the object's x, y, z axes
        joints = q[3:9]
        joints[5] = FINGER_CLOSED - 0.5 * (q[8] + q[9])  # q is a copy: its own finger slot
        return Sensing(
            base_xy=bodies[0, :2], yaw=float(q[2]), joints=joints, handle=sites[0],
            obj_pos=bodies[1], obj_up=axes[2], obj_lift=float(bodies[1, 2] - self.obj_z0),
            goal=np.array(self.task.robot_goal(self, i), dtype=float),
            holding=bool(self._held()[i]), t=self.t, hand=sites[1], partner_hands=sites[2:],
            extras=bodies[2:], obj_x=axes[0], goal_yaw=self.goal_yaw)

    def proprio(self) -> np.ndarray:
        """Return (n, 18): base x, y, yaw, lift, shoulder, elbow, wrist pitch and roll, finger;
        then their velocities."""
        d = self.data
        out = np.zeros((self.n, PROPRIO_DIM))
        for i in range(self.n):
            q, v = d.qpos[self.qadr[i]], d.qvel[self.vadr[i]]
            out[i, :2] = d.xpos[self.chassis[i]][:2]
            out[i, 2:8] = q[2:8]
            out[i, 8] = 0.5 * (q[8] + q[9])
            out[i, 9:17] = v[:8]
            out[i, 17] = 0.5 * (v[8] + v[9])
        return out

    @property
    def obs_dim(self) -> int:
        """Return the width of one robot's state observation (37 + 3 per extra body)."""
        return 37 + 3 * len(self.extras)

    def local_obs(self) -> np.ndarray:
        """Return (n, obs_dim) state observations, each in its own robot's frame: proprio
        (18), object position (3) and up axis (3), own grasp point (3), goal (3), own touch
        (1), time (1), object heading (3), goal heading as cos, sin (2; zeros where the task
        sets none), then the task's extra bodies' positions (3 each)."""
        pro = self.proprio()
        rows = []
        for i in range(self.n):
            s = self.sense(i)
            c, sn = math.cos(s.yaw), math.sin(s.yaw)
            up, fwd = (np.array([c * a[0] + sn * a[1], -sn * a[0] + c * a[1], a[2]])
                       for a in (s.obj_up, s.obj_x))
            gy = [0.0, 0.0] if s.goal_yaw is None else [math.cos(s.goal_yaw - s.yaw),
                                                          math.sin(s.goal_yaw - s.yaw)]
            rows.append(np.concatenate([pro[i], s.to_robot(s.obj_pos), up, s.to_robot(s.handle),
                                        s.to_robot(s.goal), [float(s.holding), s.t], fwd, gy,
                                        *[s.to_robot(p) for p in s.extras]]))
        return np.asarray(rows, dtype=np.float32)

    def get_state(self) -> np.ndarray:
        """Return the full integration state (restores bit for bit with set_state)."""
        size = mujoco.mj_stateSize(self.model, STATE_SPEC)
        out = np.empty(size)
        mujoco.mj_getState(self.model, self.data, out, STATE_SPEC)
        return out

    def set_state(self, state: np.ndarray, steps: int, phase: int) -> None:
        """Restore a state saved by get_state, with its step count and completed phases."""
        mujoco.mj_setState(self.model, self.data, np.asarray(state, dtype=float), STATE_SPEC)
        mujoco.mj_forward(self.model, self.data)
        self._holds = None
        self.steps, self.phase, self.hold_timer = int(steps), int(phase), 0.0
        self.phase_step = [0 if k < phase else None for k in range(3)]
        for w in BAD_STATE:
            self.data.warning[w].number = 0
        self.unstable_at = None

    # -- rendering ----------------------------------------------------------------------------
    def render_ego(self, i: int, width: int = 96, height: int = 96) -> np.ndarray:
        """Return robot i's egocentric RGB frame (height, width, 3) uint8 (headless GL)."""
        if self._renderer is None or self._renderer.width != width or \
                self._renderer.height != height:
            self.close()
            os.environ.setdefault("MUJOCO_GL", "egl")
            self._renderer = mujoco.Renderer(self.model, height=height, width=width)
        self._renderer.update_scene(self.data, camera=f"r{i}_ego")
        return self._renderer.render().copy()

    def close(self) -> None:
        """Release the renderer's GL context."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
