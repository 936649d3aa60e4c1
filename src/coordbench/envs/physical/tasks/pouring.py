"""Pouring: robot 0 picks up a cup holding a marble, robot 1 picks up a beaker by its handle
and holds it out over the middle; robot 0 tips the cup over the beaker so the marble drops
in. Low base movement, low physical coupling: the robots never touch the same object, but
the pour only works where the partner holds the beaker."""

from __future__ import annotations

import math

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..robot import SH_H, SH_X, ik2
from ..scene import world_xml
from .base import Phase, Task
from .shapes import FRICTION, hollow_cylinder

GAP = 0.8
STAND_H = 0.30
CUP_R, CUP_H = 0.035, 0.045  # radius, half height
GLASS_R, GLASS_H = 0.065, 0.05
MARBLE_R = 0.012
HANDLE_L = 0.04  # half length; the grasp point sits 1.2 cm out from the handle's middle, so
# the fingertips stay clear of the vessel's wall
CUP_X = -GAP + 0.62 + CUP_R + HANDLE_L + 0.012  # the mug's grasp point is 0.62 m in front
HANDLE_X = GAP - 0.62  # of robot 0, the beaker's 0.62 m in front of robot 1
GLASS_X = HANDLE_X - GLASS_R - HANDLE_L - 0.012
GLASS_Z0 = STAND_H + GLASS_H
POUR_BACK = 0.02  # the hand stays this far short of the beaker's axis (toward robot 0)
POUR_UP = 0.16  # and this far above the beaker's rim (the tipped cup swings down)
TIP = -1.9  # wrist pitch when pouring (negative: the cup's mouth turns toward robot 1)


class Pouring(Task):
    """Robot 0 at -x facing +x holds the cup; robot 1 at +x facing -x holds the beaker."""

    def __init__(self) -> None:
        super().__init__(
            name="Pouring", n_robots=2, movement="low", coupling="low", limit=1000,
            settle_s=0.5,
            phases=(Phase("lift", "cup and beaker both >= 3 cm above their stands", False),
                    Phase("tip", "robot 0 holds the cup >= 3 cm up, tilted >= 60 deg", False),
                    Phase("pour", "the marble inside the beaker, the beaker >= 3 cm up, "
                          "for 0.5 s", True)),
            instructions={"joint": "Pour the marble from the cup into the beaker.",
                          "robot0": "Pick up the cup with the marble and pour the marble into "
                                    "the beaker your partner holds.",
                          "robot1": "Pick up the beaker by its handle and hold it out in the "
                                    "middle until the marble is in."},
            adaptation="The paper's cup and glass become a 7 cm mug and a 13 cm beaker, "
                       "each with a handle (a parallel gripper cannot span a glass that wide, "
                       "and thin walls slip through fast-closing fingers); the mug is tipped "
                       "with the wrist pitch. The vessels are symmetric, so their yaw is "
                       "not randomized.",
            extra_bodies=("beaker",),
            jacobian="sparse",
            object_holders=(0,))

    def xml(self) -> str:
        cup, _ = hollow_cylinder("cup", CUP_R, CUP_H, 0.006, 0.12, ".9 .5 .2 1")
        glass, _ = hollow_cylinder("glass", GLASS_R, GLASS_H, 0.004, 0.15, ".7 .9 1 .6")
        objects = (f'<body name="object" pos="{CUP_X} 0 {STAND_H + CUP_H}">'
                   f'<freejoint name="object"/>{cup}<geom name="cup_handle" type="box" '
                   f'size="{HANDLE_L} 0.02 0.035" pos="{-CUP_R - HANDLE_L} 0 0" mass="0.03" '
                   f'rgba=".9 .9 .9 1" {FRICTION}/>'
                   f'<site name="grip0" pos="{-CUP_R - HANDLE_L - 0.012} 0 0" size="0.01"/>'
                   '</body>'
                   f'<body name="beaker" pos="{GLASS_X} 0 {GLASS_Z0}"><freejoint name="beaker"/>'
                   f'{glass}<geom name="glass_handle" type="box" size="{HANDLE_L} 0.02 0.04" '
                   f'pos="{GLASS_R + HANDLE_L} 0 0" mass="0.04" rgba=".9 .9 .9 1" {FRICTION}/>'
                   f'<site name="grip1" pos="{GLASS_R + HANDLE_L + 0.012} 0 0" size="0.01"/>'
                   '</body>'
                   f'<body name="marble" pos="{CUP_X} 0 {STAND_H + 0.006 + MARBLE_R + 0.001}">'
                   f'<freejoint name="marble"/><geom name="marble" type="sphere" '
                   f'size="{MARBLE_R}" mass="0.02" rgba=".2 .2 .8 1" condim="6" '
                   'friction="0.8 0.005 0.0001"/></body>')
        half = STAND_H / 2
        # the stands end under the vessels, so the fingers around a handle clear them
        statics = (f'<geom name="stand0" type="box" size="0.05 0.16 {half}" '
                   f'pos="{CUP_X} 0 {half}" rgba=".5 .4 .3 1"/>'
                   f'<geom name="stand1" type="box" size="0.075 0.16 {half}" '
                   f'pos="{GLASS_X} 0 {half}" rgba=".5 .4 .3 1"/>'
                   '<geom name="goal" type="cylinder" size="0.01 0.001" pos="0 0 0.001" '
                   'rgba="0 1 0 .4" contype="0" conaffinity="0"/>')
        return world_xml(self.name, [(-GAP, 0.0, 0.0), (GAP, 0.0, math.pi)], objects,
                         statics=statics)

    def grasp_geoms(self) -> list[list[str]]:
        return [["cup_handle"], ["glass_handle"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        m = env.model
        cup = m.jnt_qposadr[m.joint("object").id]
        glass = m.jnt_qposadr[m.joint("beaker").id]
        marble = m.jnt_qposadr[m.joint("marble").id]
        d_cup = np.array([rng.uniform(-0.03, 0.03), rng.uniform(-0.06, 0.06)])
        env.data.qpos[cup:cup + 2] += d_cup
        env.data.qpos[glass:glass + 2] += [rng.uniform(-0.03, 0.03), rng.uniform(-0.06, 0.06)]
        env.data.qpos[marble:marble + 2] += d_cup + rng.uniform(-0.006, 0.006, 2)
        env.goal = env.data.qpos[glass:glass + 3].copy()  # the beaker is the pour target

    def marble_in_beaker(self, env) -> bool:
        """Return True if the marble's centre lies inside the beaker's inner volume."""
        d, m = env.data, env.model
        g = m.body("beaker").id
        rel = d.xmat[g].reshape(3, 3).T @ (d.xpos[m.body("marble").id] - d.xpos[g])
        return bool(np.hypot(rel[0], rel[1]) < GLASS_R - 0.004 and -GLASS_H < rel[2] < GLASS_H)

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        d = env.data
        cup_up = d.xpos[env.obj][2] - env.obj_z0
        glass_up = d.xpos[env.extras[0]][2] - env.extra_pos0[0][2]
        p1 = bool(cup_up >= 0.03 and glass_up >= 0.03)
        p2 = bool(env.holds()[0] and cup_up >= 0.03 and env.obj_tilt_deg() >= 60)
        p3 = bool(self.marble_in_beaker(env) and glass_up >= 0.03)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return (Pourer if i == 0 else BeakerHolder)(rng, noise)


class _Vessel(ArmOperator):
    """reach -> grasp -> lift, then the subclass's own stages; keeps the hand on a straight
    path at constant speed between targets."""

    up = 0.10

    def _pick(self, s: Sensing, dt: float) -> float:
        grip = self.grasp_at(s, s.handle + np.array([0, 0, self.dz]), 0.62, "lift")
        if self.stage == "lift":
            grip = 1.0
            self.lift = min(self.up, self.lift + 0.2 * self.speed * dt)
            if self.lift >= self.up and self._ready(0.2):
                h = s.to_robot(s.hand)
                self.target = [float(h[0]), float(s.hand[2])]
                self._go(self.after_lift)
        return grip

    def _move_hand(self, s: Sensing, goal_fwd: float, goal_z: float, dt: float) -> float:
        """Step the hand target toward (forward, height); return the remaining distance."""
        err = np.array([goal_fwd - self.target[0], goal_z - self.target[1]])
        dist = float(np.linalg.norm(err))
        step = 0.25 * self.speed * dt
        if dist > step:
            err *= step / dist
        self.target = [self.target[0] + float(err[0]), self.target[1] + float(err[1])]
        self.arm = ik2(self.target[0] - SH_X, self.target[1] - (SH_H + s.joints[0]))
        return dist

    def resume(self, s: Sensing) -> None:
        super().resume(s)
        h = s.to_robot(s.hand)
        self.target = [float(h[0]), float(s.hand[2])]


class Pourer(_Vessel):
    """pick the cup -> wait for the beaker to be held out -> bring the cup over it ->
    tip the wrist until the marble drops."""

    after_lift = "wait"

    def __init__(self, rng: np.random.Generator, noise: float) -> None:
        super().__init__(rng, noise)
        self.pitch = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grip = self._pick(s, dt)
        glass = s.extras[0]
        if self.stage == "wait":  # the beaker lifted and brought to the middle
            grip = 1.0
            offered = glass[2] - GLASS_Z0 > 0.05 and abs(glass[0]) < 0.03
            if offered and self._ready(0.3):
                self._go("bring")
        elif self.stage in ("bring", "tip"):
            grip = 1.0
            self.base(s, glass, None)
            g = s.to_robot(glass)
            z = float(g[2]) + GLASS_H + POUR_UP
            # rise first, then go over: a straight line would sweep the cup through the rim
            fwd = self.target[0] if self.target[1] < z - 0.01 else float(g[0]) - POUR_BACK
            dist = self._move_hand(s, fwd, z, dt) + abs(fwd - (float(g[0]) - POUR_BACK))
            if self.stage == "bring" and dist < 0.01 and self._ready(0.3):
                self._go("tip")
            if self.stage == "tip":
                self.pitch = max(TIP, self.pitch - 1.2 * self.speed * dt)
        return self.out(grip, pitch=self.pitch)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        return "wait" if s.obj_lift > 0.03 else "lift"


class BeakerHolder(_Vessel):
    """pick the beaker by its handle -> hold it out over the middle -> keep it there."""

    after_lift = "offer"
    goal_fwd = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grip = self._pick(s, dt)
        if self.stage == "offer":
            grip = 1.0
            glass = s.extras[0]
            if self.t_stage <= dt:  # where the hand must go to bring the beaker to x = 0
                g = s.to_robot(glass)
                self.goal_fwd = self.target[0] + float(s.to_robot(np.array([0.0, glass[1]]))[0]
                                                       - g[0])
            self.base(s, glass, None)
            self._move_hand(s, self.goal_fwd, GLASS_Z0 + 0.10 + self.dz, dt)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        return "offer" if s.extras[0][2] - GLASS_Z0 > 0.05 else "lift"
