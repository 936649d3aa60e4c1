"""Decentralized scripted experts: one phase machine per robot that reads only its own
`Sensing` (own body, the objects in view, its own touch, the instruction's goal), never its
partners' internal state. Partners coordinate through the object, as human operators do:
a robot starts carrying only once it sees the object lifted clear, which happens only when
every partner has lifted its end.

Operator variability per robot and episode (scaled by `noise`): reaction latency before
each stage change (0-0.3 s), speed (x0.8-1.2), grasp height offset (+-1 cm) and base
standoff (+-2 cm).
"""

from __future__ import annotations

import math

import numpy as np

from .env import Sensing
from .robot import SH_H, SH_X, ik2
from .scene import CONTROL_DT

STANDOFF = 0.62  # base-to-grasp-point distance while holding (m)
LIFT = 0.15  # torso rise that lifts the object (m)
LOWERED = 0.02  # torso height (m) below which a carried object counts as set down


def wrap(a: float) -> float:
    """Return angle `a` wrapped to [-pi, pi)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


class Operator:
    """One robot's phase machine clock and its operator variability: a reaction latency per
    stage change, a speed factor and a grasp height offset, all drawn once per episode."""

    grasps = True  # False for a robot that closes its hand without grasping (a sweeping fist)

    def __init__(self, rng: np.random.Generator, noise: float) -> None:
        self.latency = rng.uniform(0, 0.3 * noise, size=8)
        self.speed = 1.0 + rng.uniform(-0.2, 0.2) * noise
        self.dz = rng.uniform(-0.01, 0.01) * noise
        self.stage, self.t_stage, self.k = "reach", 0.0, 0
        self.arm = (1.2, -2.4)
        self.lift = 0.0

    def gripping(self, action: np.ndarray) -> bool:
        """Return True where `action` (this robot's) closes its hand."""
        return bool(action[8] >= 0.5)

    def rest_action(self) -> np.ndarray:
        """Return the action that holds this robot still at its current targets, hand
        open (what a skill-controlled robot keeps before its first skill)."""
        return np.array([0.0, 0.0, 0.0, self.lift, self.arm[0], self.arm[1], 0.0, 0.0, 0.0])

    def _go(self, stage: str) -> None:
        self.stage, self.t_stage = stage, 0.0
        self.k += 1

    def _ready(self, after: float) -> bool:
        """Return True once `after` seconds plus this robot's reaction latency have passed."""
        return self.t_stage >= after + self.latency[self.k % len(self.latency)]


class CarryExpert(Operator):
    """reach -> grasp -> lift -> carry (to the goal) -> lower -> release -> retreat."""

    def __init__(self, rng: np.random.Generator, noise: float,
                 carry_speed: float = 0.35) -> None:
        super().__init__(rng, noise)
        self.dr = rng.uniform(-0.02, 0.02) * noise
        self.carry_speed = carry_speed
        self.yaw_offset = 0.0

    def resume(self, s: Sensing) -> None:
        """Pick up mid-task (phase-level evaluation from a restored state): infer the stage
        from own sensing only."""
        if s.holding:
            self.lift = float(s.joints[0])
            self.arm = (float(s.joints[1]), float(s.joints[2]))
            if np.linalg.norm(s.goal[:2] - s.obj_pos[:2]) < 0.05:
                self.stage = "lower"  # already there (maybe already setting it down)
            else:
                self.stage = "carry" if self.lift >= 0.7 * LIFT else "lift"
        else:
            self.stage = "reach"
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 9-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        fwd, lat = float(h[0]), float(h[1])
        lift_q = float(s.joints[0])
        vx = vy = wz = 0.0
        grip = 0.0
        if self.stage == "reach":
            ex, ey = fwd - (STANDOFF + self.dr), lat
            vx, vy = 2.0 * ex, 2.0 * ey
            wz = 2.0 * math.atan2(lat, max(fwd, 0.1))
            r, z = fwd - SH_X, h[2] + self.dz - (SH_H + lift_q)
            if self.t_stage < 0.6:  # come from above and behind the grasp point
                z, r = z + 0.12, r - 0.15
            elif self.t_stage < 1.1:
                r -= 0.15
            self.arm = ik2(r, z)
            if self._ready(1.5) and abs(ex) < 0.03 and abs(ey) < 0.03:
                self._go("grasp")
        elif self.stage == "grasp":
            grip = 1.0
            if self._ready(0.5):
                self._go("lift" if s.holding else "regrasp")
        elif self.stage == "regrasp":  # open, back off and try again
            self.arm = ik2(fwd - SH_X - 0.15, h[2] - (SH_H + lift_q))
            if self.t_stage > 0.4:
                self._go("reach")
        elif self.stage == "lift":
            grip = 1.0
            self.lift = min(LIFT, self.lift + 0.25 * self.speed * dt)
            if self.lift >= LIFT and s.obj_lift > 0.7 * LIFT and self._ready(0.3):
                self._go("carry")
        elif self.stage == "carry":
            grip = 1.0
            err = s.goal[:2] - s.obj_pos[:2]
            v = np.clip(1.2 * err, -self.carry_speed * self.speed, self.carry_speed * self.speed)
            turned = True
            if s.goal_yaw is not None:  # turn on the way: every handle moves on its arc
                heading = math.atan2(float(s.obj_x[1]), float(s.obj_x[0]))
                if self.t_stage <= dt:
                    self.yaw_offset = s.yaw - heading
                e_yaw = wrap(s.goal_yaw - heading)
                omega = float(np.clip(1.0 * e_yaw, -0.25 * self.speed, 0.25 * self.speed))
                r = s.handle[:2] - s.obj_pos[:2]
                v = v + omega * np.array([-r[1], r[0]])
                wz = omega + 2.0 * wrap(heading + self.yaw_offset - s.yaw)
                turned = abs(e_yaw) < 0.02
            # stay at the grasp point: the object's motion (partners' pull) leads the base
            ex, ey = fwd - (STANDOFF + self.dr), lat
            c, sn = math.cos(s.yaw), math.sin(s.yaw)
            vx = c * v[0] + sn * v[1] + 1.5 * ex
            vy = -sn * v[0] + c * v[1] + 1.5 * ey
            # 3 cm: partners with different standoffs pull against each other, and their
            # tug-of-war can hold the object up to ~3 cm short of the goal
            if np.linalg.norm(err) < 0.03 and turned and self._ready(0.5):
                self._go("lower")
        elif self.stage == "lower":
            grip = 1.0
            self.lift = max(0.0, self.lift - 0.25 * self.speed * dt)
            # the torso itself must be down, not only its target: a phase machine labelling
            # another policy's robot (DAgger) would otherwise release what is still held up
            if self.lift <= 0.0 and s.joints[0] < LOWERED and self._ready(0.4):
                self._go("release")
        elif self.stage == "release":
            if self._ready(0.4):
                self._go("retreat")
        elif self.stage == "retreat":
            vx = -0.15 if self.t_stage < 1.0 else 0.0
            self.arm = (1.2, -2.4)
        return np.array([vx, vy, wz, self.lift, self.arm[0], self.arm[1],
                         0.0, 0.0, grip])


class ArmOperator(Operator):
    """An operator that works at arm's length: base line-up and arm IK to a world point
    (the handover, pouring and serving experts)."""

    def __init__(self, rng: np.random.Generator, noise: float) -> None:
        super().__init__(rng, noise)
        self.v = np.zeros(2)
        self.target = [0.0, 0.0]
        self.near_for = 0.0
        self.back, self.closed_for = 0.15, 0.0

    def _ik(self, s: Sensing, p: np.ndarray, back: float = 0.0, up: float = 0.0) -> None:
        h = s.to_robot(p)
        self.arm = ik2(float(h[0]) - SH_X - back, float(h[2]) + up - (SH_H + s.joints[0]))

    def _reach(self, s: Sensing, p: np.ndarray) -> None:
        """Approach `p` from above and behind, then close in once lined up with it."""
        if self.t_stage < 0.6:
            self.back, self.closed_for = 0.15, 0.0
            self._ik(s, p, back=0.15, up=0.12)
        elif self.t_stage < 1.1 or abs(float(s.to_robot(p)[1])) > 0.01:
            # close in only when lined up: an open finger would knock the object over
            self._ik(s, p, back=self.back)
        else:  # and at a steady pace: a jump in the arm target swings the hand through it
            self.back = max(0.0, self.back - 0.4 * CONTROL_DT)
            self.closed_for = self.closed_for + CONTROL_DT if self.back == 0.0 else 0.0
            self._ik(s, p, back=self.back)

    def grasp_at(self, s: Sensing, p: np.ndarray, standoff: float, then: str) -> float:
        """Run the "reach" and "grasp" stages toward grasp point `p` (base `standoff` behind
        it), then go to stage `then` (back to "reach" if the grasp missed). Return the grip
        command (0 in any other stage)."""
        if self.stage == "reach":
            self.base(s, p, standoff)
            self._reach(s, p)
            if self._ready(1.5) and abs(float(s.to_robot(p)[1])) < 0.01 and self._closed_in():
                self._go("grasp")
        elif self.stage == "grasp":
            if self._ready(0.5):
                self._go(then if s.holding else "reach")
            return 1.0
        return 0.0

    def tow(self, s: Sensing, err: np.ndarray, cap: float, ease: float, grasp_pt: np.ndarray,
            standoff: float | None = None) -> None:
        """Set the base velocity that moves a held object by `err` (world x, y): up to `cap`
        m/s, ramped up over the stage's first second and easing in at `ease` x the distance
        left (a loose load rides along); the hand stays lined up with the grasp point (and
        `standoff` behind it, where given)."""
        dist = max(float(np.linalg.norm(err)), 1e-9)
        speed = min(cap * min(1.0, self.t_stage), ease * dist)
        rel = s.to_robot(s.base_xy + err / dist * speed)
        h = s.to_robot(grasp_pt)
        fwd = 0.0 if standoff is None else 1.5 * (float(h[0]) - standoff)
        self.v = np.array([float(rel[0]) + fwd, float(rel[1]) + 1.5 * float(h[1])])

    def let_go(self, s: Sensing, up: float = 0.05, base_back: float = 0.0) -> None:
        """Run the "release" stage (open, wait 0.4 s) and the "retreat" stage (hand back 15
        cm and `up`, base backing off at `base_back` m/s for 1.5 s, arm folded after 1 s)."""
        if self.stage == "release":
            if self._ready(0.4):
                self._go("retreat")
        elif self.stage == "retreat":
            self._ik(s, s.hand, back=0.15, up=up)
            if base_back:
                self.v = np.array([-base_back if self.t_stage < 1.5 else 0.0, 0.0])
            if self.t_stage > 1.0:
                self.arm = (1.2, -2.4)

    def _closed_in(self) -> bool:
        """Return True once the hand has been at the grasp point for 0.3 s."""
        return self.closed_for >= 0.3

    def base(self, s: Sensing, p: np.ndarray, standoff: float | None) -> None:
        """Servo the base to face `p` from `standoff` (None: keep the distance, only line up)."""
        h = s.to_robot(p)
        self.v = np.array([0.0 if standoff is None else 2.0 * (float(h[0]) - standoff),
                           2.0 * float(h[1])])

    def out(self, grip: float, roll: float = 0.0, pitch: float = 0.0) -> np.ndarray:
        """Return the 9-D action: the base velocity set this step, torso, arm, wrist, grip."""
        v, self.v = self.v, np.zeros(2)
        return np.array([v[0], v[1], 0.0, self.lift, self.arm[0], self.arm[1],
                         pitch, roll, grip])

    def resume(self, s: Sensing) -> None:
        """Mid-task restart from own sensing (phase-level evaluation)."""
        self.lift = float(s.joints[0])
        self.arm = (float(s.joints[1]), float(s.joints[2]))
        self.stage = self._resume_stage(s)
        self.t_stage = 0.0
