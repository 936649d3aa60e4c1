"""Decentralized scripted experts of the G1 humanoids: one phase machine per robot that reads
only its own `Sensing`, as the CoBot's (`operators.py`), with the same operator variability.

A G1 operator sets palm targets in its own frame (x forward, y left, z up from the floor),
which inverse kinematics (`g1_ik.ArmIK`) turns into arm joint targets, and a grasp synergy
for each Dex3-1 hand: one number from open to closed that moves the seven finger joints
together. The base is driven by velocity, as the CoBot's.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .door import door_angle, rot
from .env import Sensing
from .g1 import HAND, UPPER_JOINTS
from .g1_ik import ArmIK
from .operators import Operator, wrap

SIDES = ("left", "right")
ACCEL = 0.5  # a carrying base's acceleration limit (m/s^2)
# the grasp synergy's closed pose per finger joint of the left hand (the right mirrors it:
# its finger joints close the other way)
CLOSED = {"thumb_0": 0.0, "thumb_1": 0.6, "thumb_2": 1.0, "middle_0": -1.0, "middle_1": -1.0,
          "index_0": -1.0, "index_1": -1.0}
WAIST = 3
ARM_AT = {"left": WAIST, "right": WAIST + 7}
HAND_AT = {"left": WAIST + 14, "right": WAIST + 21}
PALMS_FORWARD = np.eye(3)  # wrist frames along the robot's: fingers forward, palms facing in
# palms down, fingers forward (the wrist frames' axes as columns, in the robot's frame)
PALMS_DOWN = {"left": np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),
              "right": np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])}
REST = {"left": (0.20, 0.22, 0.88), "right": (0.20, -0.22, 0.88)}  # palms out of the way
# a one-hand pinch's palm over a bar that cannot rise (a door's, a trolley's): a light
# basket's bar rises into the curled fingers as the thumb closes, these cannot, so the palm
# sits lower (on the door's bar the grasp held with the palm 0.4 to 1.6 cm over it)
FIXED_BAR_ABOVE = 0.01
_IK: dict[tuple[str, str], ArmIK] = {}


def arm_ik(path: Path, side: str) -> ArmIK:
    """Return the (shared) inverse kinematics of one side's arm of the model at `path`."""
    key = (str(path), side)
    if key not in _IK:
        _IK[key] = ArmIK(path, side)
    return _IK[key]


def synergy(side: str, g: float, thumb_last: bool = False) -> np.ndarray:
    """Return the seven finger joint targets of one hand at grasp synergy `g` (0 open, 1
    closed); `thumb_last`: the fingers close over the first half, then the thumb."""
    sign = 1.0 if side == "left" else -1.0
    gf, gt = (min(1.0, 2 * g), max(0.0, 2 * g - 1)) if thumb_last else (g, g)
    return np.array([(gt if j.startswith("thumb") else gf) * CLOSED[j]
                     * (sign if j != "thumb_0" else 1.0) for j in HAND])


class G1Operator(Operator):
    """A G1's phase machine clock, variability, palm targets and output."""

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path) -> None:
        super().__init__(rng, noise)
        self.ik = {side: arm_ik(model_path, side) for side in SIDES}
        self.q = {side: np.zeros(7) for side in SIDES}
        self.palm = {side: np.array(REST[side]) for side in SIDES}
        self.grip = {side: 0.0 for side in SIDES}
        self.waist = np.zeros(3)

    orient: dict[str, np.ndarray] = {"left": PALMS_FORWARD, "right": PALMS_FORWARD}
    thumb_last = False  # the grasp synergy closes the fingers first, then the thumb

    def palms_at(self, left: np.ndarray, right: np.ndarray) -> None:
        """Aim both palms (robot frame)."""
        self.palm = {"left": np.asarray(left, dtype=float), "right": np.asarray(right,
                                                                                 dtype=float)}

    def gripping(self, action: np.ndarray) -> bool:
        """Return True where `action` (this robot's) closes a hand (synergy past half)."""
        return any(self.grip[side] >= 0.5 for side in SIDES)

    def rest_action(self) -> np.ndarray:
        """Return the action that holds this robot still at its current targets."""
        return self.out(0.0, 0.0, 0.0)

    def out(self, vx: float, vy: float, wz: float) -> np.ndarray:
        """Return the 34-D action: the base velocity, the waist, both arms solved for their
        palm targets, both hands at their synergy."""
        a = np.zeros(3 + len(UPPER_JOINTS))
        a[:3] = vx, vy, wz
        a[3:3 + WAIST] = self.waist
        for side in SIDES:
            self.q[side], _ = self.ik[side].solve(self.q[side], self.palm[side],
                                                  self.orient[side], self.waist)
            a[3 + ARM_AT[side]:3 + ARM_AT[side] + 7] = self.q[side]
            a[3 + HAND_AT[side]:3 + HAND_AT[side] + 7] = synergy(side, self.grip[side],
                                                                  self.thumb_last)
        return a


class G1CarryExpert(G1Operator):
    """A two-handed carry by the object's bar handle: reach (palms down, above and behind
    the bar) -> grasp (palms onto the bar, then the fingers hook under it) -> lift -> carry
    (to the goal) -> lower -> release -> retreat."""

    standoff = 0.40  # pelvis to the bar while holding (m)
    spread = 0.07  # each palm this far from the bar's middle (m)
    behind = 0.01  # the palm's centre over the bar: the fingers close in front of it and under (m)
    above = 0.022  # the palm's surface just clear of the bar (m)
    lift_by = 0.12  # how far the palms rise to lift (m)
    bar_height = 0.10  # the bar above the object's body origin (the task's)
    arrive = 0.03  # the object this near the goal ends the carry (m)

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path,
                 carry_speed: float = 0.3) -> None:
        super().__init__(rng, noise, model_path)
        self.dr = rng.uniform(-0.02, 0.02) * noise
        self.carry_speed = carry_speed
        self.bar: np.ndarray | None = None  # where the bar was when the grasp began (robot)
        self.rise = 0.0
        self.yaw_offset = 0.0
        self.orient = PALMS_DOWN
        self.v = np.zeros(2)  # the object's commanded way (world, m/s)

    def resume(self, s: Sensing) -> None:
        """Pick up mid-task from own sensing only (phase-level evaluation)."""
        self.bar = s.to_robot(s.handle)
        if s.holding:
            self.rise = max(0.0, s.obj_lift)
            self.bar[2] -= self.rise
            self.grip = {side: 1.0 for side in SIDES}
            self.stage = "lower" if np.linalg.norm(s.goal[:2] - s.obj_pos[:2]) < 0.05 else (
                "carry" if self._lifted(s) else "lift")
        else:
            self.stage = "reach"
        self.t_stage = 0.0

    def _hands(self, bar: np.ndarray, back: float = 0.0, up: float = 0.0) -> None:
        x = bar[0] - self.behind - back
        z = bar[2] + self.above + up + self.rise + self.dz
        self.palms_at([x, bar[1] + self.spread, z], [x, bar[1] - self.spread, z])

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx = vy = wz = 0.0
        ex, ey = float(h[0]) - (self.standoff + self.dr), float(h[1])
        if self.stage == "reach":  # palms above and behind the bar, step up to it
            vx, vy = 2.0 * ex, 2.0 * ey
            wz = 2.0 * math.atan2(float(h[1]), max(float(h[0]), 0.1))
            near = np.array([min(float(h[0]), self.standoff), h[1], h[2]])
            self._hands(near, back=0.10, up=0.08)
            if self._ready(1.0) and abs(ex) < 0.015 and abs(ey) < 0.015:
                self.bar = h.copy()
                self._go("place")
        elif self.stage == "place":  # palms onto the bar, fingers straight
            self._hands(self.bar)
            if self._ready(0.6):
                self._go("grasp")
        elif self.stage == "grasp":  # the fingers close under the bar
            self.grip = {side: min(1.0, self.t_stage / 0.4) for side in SIDES}
            self._hands(self.bar)
            if self._ready(0.6):
                self._go("lift" if s.holding else "regrasp")
        elif self.stage == "regrasp":
            self.grip = {side: 0.0 for side in SIDES}
            self._hands(self.bar, back=0.10, up=0.08)
            if self.t_stage > 0.5:
                self._go("reach")
        elif self.stage == "lift":
            # rise with the partners: an end of the object higher than its centre means
            # some partner has not lifted (or not grasped) yet; the object stays on its
            # stand for them until then
            if float(s.handle[2] - s.obj_pos[2]) - self.bar_height < 0.015:
                self.rise = min(self.lift_by, self.rise + 0.15 * self.speed * dt)
            self._hands(self.bar)
            if self.rise >= self.lift_by and self._lifted(s) and self._ready(0.3):
                self._go("carry")
        elif self.stage == "carry":
            vx, vy, wz, turned = self._carry(s, dt, ey)
            self._hands(self.bar)
            if np.linalg.norm(s.goal[:2] - s.obj_pos[:2]) < self.arrive and turned and \
                    self._ready(0.5):
                self._go("lower")
        elif self.stage == "lower":
            self.rise = max(0.0, self.rise - 0.15 * self.speed * dt)
            self._hands(self.bar)
            if self.rise <= 0.0 and s.obj_lift < 0.04 and self._ready(0.4):
                self._go("release")
        elif self.stage == "release":
            self.grip = {side: 0.0 for side in SIDES}
            self._hands(self.bar, up=0.02 if self.t_stage < 0.3 else 0.08)
            if self._ready(0.5):
                self._go("retreat")
        elif self.stage == "retreat":
            vx = -0.15 if self.t_stage < 1.0 else 0.0
            self._hands(self.bar, back=0.10, up=0.08)
        return self.out(vx, vy, wz)

    def _lifted(self, s: Sensing) -> bool:
        """Return True while the object is up and level: every partner holds its end up."""
        return s.obj_lift > 0.06 and float(s.obj_up[2]) > math.cos(math.radians(8))

    def _carry(self, s: Sensing, dt: float, ey: float
               ) -> tuple[float, float, float, bool]:
        """Return (vx, vy, wz, turned): the object's way to the goal, the base kept at its
        grasp point (the object's motion, partners' pull included, leads the base)."""
        err = s.goal[:2] - s.obj_pos[:2]
        cap = self.carry_speed * self.speed
        # wait while the object hangs from fewer hands than it needs (a partner that has not
        # lifted yet, or has lost its grip, or this robot's own): walking on would pull it
        # out of the others'
        want = np.clip(1.2 * err, -cap, cap) if self._lifted(s) and s.holding else np.zeros(2)
        # at most 0.5 m/s^2: a step change of speed jerks the object out of the hooks
        dv = np.clip(want - self.v, -ACCEL * dt, ACCEL * dt)
        self.v = v = self.v + dv
        heading = math.atan2(float(s.obj_x[1]), float(s.obj_x[0]))
        if self.t_stage <= dt:
            self.yaw_offset = s.yaw - heading
        omega, turned = 0.0, True
        if s.goal_yaw is not None:  # turn on the way: every grasp point moves on its arc
            e_yaw = wrap(s.goal_yaw - heading)
            omega = float(np.clip(1.0 * e_yaw, -0.25 * self.speed, 0.25 * self.speed))
            r = s.handle[:2] - s.obj_pos[:2]
            v = v + omega * np.array([-r[1], r[0]])
            turned = abs(e_yaw) < 0.02
        # the base keeps its heading to the object: a velocity servo alone lets the load's
        # torque turn it
        wz = omega + 2.0 * wrap(heading + self.yaw_offset - s.yaw)
        c, sn = math.cos(s.yaw), math.sin(s.yaw)
        # the palms hold the object where they closed: every base moves with the object's
        # way, and none chases its grasp point along the carry (partners that did would
        # tug the object out of each other's hands)
        vx = c * v[0] + sn * v[1]
        vy = -sn * v[0] + c * v[1] + 0.5 * ey
        return vx, vy, wz, turned


class G1HookOperator(G1Operator):
    """A G1 that holds a bar in its right hand alone (the grasp point `s.handle` on it): palm
    down, the index and middle fingers curling over and in front of the bar, then the thumb
    pinching it from behind. The left hand stays at rest. Stages shared by the one-hand
    experts (`_grasp_stages`): reach (the base to its standoff, the palm high and behind the
    bar), over (level over it), place (straight down), grasp (or regrasp); `_let_go`:
    release (the palm rises off the bar) and retreat."""

    standoff = 0.40  # pelvis to the grasp point while holding (m)
    # the bar between the closed fingertips and the closed thumb: the open thumb hangs
    # behind it, the fingers curl over and in front of it, then the thumb pinches it
    thumb_last = True
    side = -0.07  # the grasp point's place across the robot: in front of the right shoulder
    behind = 0.045
    above = 0.012
    clear = 0.12  # the palm this far higher while it moves over the bar

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path) -> None:
        super().__init__(rng, noise, model_path)
        self.dr = rng.uniform(-0.02, 0.02) * noise
        self.orient = PALMS_DOWN
        self.bar: np.ndarray | None = None  # the grasp point when the grasp began (robot)
        self.rise = 0.0
        self.v = np.zeros(2)  # the base's commanded way (robot frame, m/s)
        self.yaw0: float | None = None

    def gripping(self, action: np.ndarray) -> bool:
        return self.grip["right"] >= 0.5

    def _palm(self, bar: np.ndarray, back: float = 0.0, up: float = 0.0) -> None:
        self.palm["right"] = np.array([bar[0] - self.behind - back, bar[1],
                                       bar[2] + self.above + up + self.rise + self.dz])

    def _toward(self, want: np.ndarray, dt: float) -> np.ndarray:
        """Return the base velocity stepped toward `want` at the carrying acceleration limit
        (a hanging load swings at a step change of speed)."""
        self.v = self.v + np.clip(want - self.v, -ACCEL * dt, ACCEL * dt)
        return self.v

    def _heading(self, s: Sensing) -> float:
        """Return the yaw rate that keeps the base at its first heading (facing the task;
        a load hanging from one hand turns, and a base that followed it would swing the
        hand sideways)."""
        if self.yaw0 is None:
            self.yaw0 = s.yaw
        return 2.0 * wrap(self.yaw0 - s.yaw)

    def _grasp_stages(self, s: Sensing, h: np.ndarray, after: str
                      ) -> tuple[float, float, float]:
        """Run reach / place / grasp / regrasp; on a held grasp go to `after`. Return the
        base velocity."""
        vx = vy = wz = 0.0
        if self.stage == "reach":
            ex, ey = float(h[0]) - (self.standoff + self.dr), float(h[1]) - self.side
            vx, vy = float(np.clip(2.0 * ex, -0.3, 0.3)), float(np.clip(2.0 * ey, -0.3, 0.3))
            wz = self._heading(s)
            self._palm(np.array([min(float(h[0]), self.standoff), h[1], h[2]]), back=0.10,
                       up=self.clear)
            if self._ready(1.0) and abs(ex) < 0.015 and abs(ey) < 0.015:
                self.bar = h.copy()
                self._go("over")
        elif self.stage == "over":  # level over the bar first, the hanging thumb clear of
            # it (a light load on a high bar tips over at a diagonal sweep's touch)
            self._palm(self.bar, back=0.10 * max(0.0, 1.0 - self.t_stage / 0.4),
                       up=self.clear)
            if self._ready(0.6):
                self._go("place")
        elif self.stage == "place":  # then straight down onto it, slowly
            self._palm(self.bar, up=self.clear * max(0.0, 1.0 - self.t_stage / 0.5))
            if self._ready(0.6):
                self._go("grasp")
        elif self.stage == "grasp":
            self.grip["right"] = min(1.0, self.t_stage / 0.5)
            self._palm(self.bar)
            if self._ready(0.8):
                self._go(after if s.holding else "regrasp")
        elif self.stage == "regrasp":  # open, up, then back
            self.grip["right"] = 0.0
            self._palm(self.bar, back=0.10 * (self.t_stage > 0.4), up=self.clear)
            if self.t_stage > 0.8:
                self._go("reach")
        return vx, vy, wz

    def _set_down(self, s: Sensing, dt: float) -> tuple[float, float, float]:
        """Run carry (the base steps until the held load hangs over the goal) and lower
        (the hand sinks until the load stands, then release); return the base velocity."""
        vx = vy = wz = 0.0
        self._palm(self.bar)
        if self.stage == "carry":
            err = s.to_robot(s.goal)[:2] - s.to_robot(s.obj_pos)[:2]
            vx, vy = self._toward(np.clip(1.0 * err, -0.15, 0.15), dt)
            wz = self._heading(s)
            if np.abs(err).max() < 0.01 and np.abs(self.v).max() < 0.02 and \
                    self._ready(0.5):
                self.v[:] = 0.0
                self._go("lower")
        elif self.stage == "lower":
            if s.obj_lift > 0.003:
                self.rise -= 0.08 * self.speed * dt
            if s.obj_lift <= 0.003 and self._ready(0.3):
                self._go("release")
        return float(vx), float(vy), wz

    def _let_go(self, dt: float) -> float:
        """Run release (the fingers open, the palm rises) and retreat; return vx."""
        if self.stage == "release":
            self.grip["right"] = 0.0
            self._palm(self.bar, up=0.02 if self.t_stage < 0.3 else 0.10)
            if self._ready(0.5):
                self._go("retreat")
        elif self.stage == "retreat":
            self._palm(self.bar, back=0.15, up=0.10)
            return -0.15 if self.t_stage < 1.0 else 0.0
        return 0.0


class G1Giver(G1HookOperator):
    """Handover's giver: reach -> over -> place -> grasp -> lift -> offer (the base steps
    until the basket hangs over the middle; held until the partner's palm has stayed on its
    grasp point) -> release -> retreat."""

    lift_by = 0.10
    partner_offset = 0.0  # the partner's grasp point from this one along the bar (the task's)

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path) -> None:
        super().__init__(rng, noise, model_path)
        self.near_for = 0.0

    def resume(self, s: Sensing) -> None:
        self.bar = s.to_robot(s.handle)
        if s.holding:
            self.grip["right"] = 1.0
            self.rise = max(0.0, s.obj_lift)
            self.bar[2] -= self.rise
            self.stage = "offer" if s.obj_lift > 0.07 else "lift"
        else:
            self.stage = "reach" if s.obj_lift < 0.02 else "retreat"
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx, vy, wz = self._grasp_stages(s, h, "lift")
        if self.stage == "lift":
            self.rise = min(self.lift_by, self.rise + 0.15 * self.speed * dt)
            self._palm(self.bar)
            if self.rise >= self.lift_by and s.obj_lift > 0.06 and self._ready(0.3):
                self._go("offer")
        elif self.stage == "offer":  # step forward until the bar is over the middle
            self._palm(self.bar)
            err = -float(s.handle[0]) * math.cos(s.yaw)  # the middle, x = 0, is ahead
            vx = float(self._toward(np.array([np.clip(1.0 * err, -0.2, 0.2), 0.0]), dt)[0])
            wz = self._heading(s)
            # let go once the partner's palm has stayed on its grasp point a while (seen:
            # the giver cannot feel the partner's grip)
            across = np.cross(s.obj_up, s.obj_x)
            theirs = s.handle + across * self.partner_offset
            near = np.linalg.norm(s.partner_hands[0] - theirs) < 0.05
            self.near_for = self.near_for + dt if near else 0.0
            if self.near_for >= 1.5 and self._ready(0.0):
                self._go("release")
        vx += self._let_go(dt)
        return self.out(vx, vy, wz)


class G1Taker(G1HookOperator):
    """Handover's taker: wait until the basket is held out over the middle -> reach its grasp
    point -> place -> grasp -> wait for the giver's hand to leave -> carry over the pad ->
    lower -> release -> retreat."""

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path) -> None:
        super().__init__(rng, noise, model_path)
        self.stage = "await"

    def resume(self, s: Sensing) -> None:
        self.bar = s.to_robot(s.handle)
        if s.holding:
            self.grip["right"] = 1.0
            free = np.linalg.norm(s.partner_hands[0] - s.handle) > 0.15
            self.stage = "carry" if free else "wait"
        else:
            self.stage = "await"
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx = vy = wz = 0.0
        if self.stage == "await":
            if s.obj_lift > 0.07 and abs(float(s.obj_pos[0])) < 0.08 and self._ready(0.2):
                self._go("reach")
        else:
            vx, vy, wz = self._grasp_stages(s, h, "wait")
        if self.stage == "wait":  # both hold; the giver lets go when it sees this hand
            self._palm(self.bar)
            free = np.linalg.norm(s.partner_hands[0] - s.handle) > 0.15
            if free and self._ready(0.3):
                self._go("carry")
        elif self.stage in ("carry", "lower"):  # the basket over the pad, then down
            vx, vy, wz = self._set_down(s, dt)
        vx += self._let_go(dt)
        return self.out(vx, vy, wz)


class G1DoorOpener(G1HookOperator):
    """MoveHouse's door opener: reach -> over -> place -> grasp (the door's bar handle, as
    a one-hand hook) -> open: the base walks the bar along its arc about the hinge and turns
    with the leaf, so the hand keeps the grip it closed, until the door is open; then holds
    it there."""

    rate = 0.35  # rad/s the door is opened at
    above = FIXED_BAR_ABOVE

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path,
                 hinge: np.ndarray, open_at: float, open_to: float) -> None:
        super().__init__(rng, noise, model_path)
        self.hinge, self.open_at, self.open_to = np.asarray(hinge, dtype=float), open_at, \
            open_to
        self.theta_t = 0.0
        self.rel: tuple[np.ndarray, float] | None = None  # the base in the leaf's frame

    def _go(self, stage: str) -> None:
        if stage == "regrasp":  # a missed grasp: the operator corrects its height offset
            self.dz *= 0.3
        super()._go(stage)

    def resume(self, s: Sensing) -> None:
        self.bar = s.to_robot(s.handle)
        self.grip["right"] = 1.0 if s.holding else 0.0
        self.stage = "open" if s.holding else "reach"
        self.rel = None
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx, vy, wz = self._grasp_stages(s, h, "open")
        if self.stage == "open":
            self._palm(self.bar)
            theta = door_angle(s.extras[0])
            if self.rel is None:  # the base's pose in the leaf's frame, as grasped
                self.theta_t = theta
                self.rel = rot(-theta, s.base_xy - self.hinge), s.yaw + theta
            # the planned angle leads the door's by at most 0.15 rad: a door that lags
            # (its closer, a slipping grip) is waited for, not dragged
            self.theta_t = min(self.open_to, self.theta_t + self.rate * self.speed * dt,
                               theta + 0.15)
            p, yaw = self.rel
            want = self.hinge + rot(self.theta_t, p)
            v = np.clip(3.0 * (want - s.base_xy), -0.4, 0.4)
            c, sn = math.cos(s.yaw), math.sin(s.yaw)
            vx, vy = c * v[0] + sn * v[1], -sn * v[0] + c * v[1]
            wz = float(np.clip(3.0 * wrap(yaw - self.theta_t - s.yaw), -0.8, 0.8))
        return self.out(vx, vy, wz)


class G1DoorwayCarrier(G1CarryExpert):
    """The G1 carry expert, but it waits with the table lifted until it sees the door
    open (`open_at` rad about `hinge`)."""

    open_at = 1.45
    # the table's feet go onto 10 cm marks: a noisy partner's late lowering drags the
    # table a few centimetres
    arrive = 0.015

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        if self.stage == "carry" and door_angle(s.extras[0]) < self.open_at:
            self.t_stage = 0.0
            self.v[:] = 0.0
            self._hands(self.bar)
            return self.out(0.0, 0.0, 0.0)
        return super().act(s, dt)


class G1Pusher(G1HookOperator):
    """CartService's pusher: reach -> over -> place -> grasp (the trolley's push bar, a
    one-hand pinch) -> push (the base walks the trolley to the parking mark) -> release ->
    retreat."""

    above = FIXED_BAR_ABOVE
    thumb_last = False
    push_speed = 0.25  # m/s

    def resume(self, s: Sensing) -> None:
        self.bar = s.to_robot(s.handle)
        parked = np.linalg.norm(s.goal[:2] - s.extras[0][:2]) < 0.05
        self.grip["right"] = 1.0 if s.holding else 0.0
        self.stage = ("release" if parked else "push") if s.holding else (
            "retreat" if parked else "reach")
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx, vy, wz = self._grasp_stages(s, h, "push")
        if self.stage == "push":
            self._palm(self.bar)
            err = s.goal[:2] - s.extras[0][:2]  # the trolley to its mark (world)
            cap = self.push_speed * self.speed
            w = np.clip(1.0 * err, -cap, cap)
            c, sn = math.cos(s.yaw), math.sin(s.yaw)
            vx, vy = self._toward(np.array([c * w[0] + sn * w[1], -sn * w[0] + c * w[1]]), dt)
            wz = self._heading(s)
            if np.linalg.norm(err) < 0.02 and self._ready(0.5):
                self.v[:] = 0.0
                self._go("release")
        vx += self._let_go(dt)
        return self.out(vx, vy, wz)


class G1Server(G1HookOperator):
    """CartService's server: await (the trolley parked) -> reach -> over -> place -> grasp
    (the basket's bar, a one-hand pinch) -> lift -> carry (the base steps until the basket
    hangs over the table's goal) -> lower -> release -> retreat."""

    lift_by = 0.14
    parked_at = np.zeros(2)  # the trolley's parking mark (the task's)

    def __init__(self, rng: np.random.Generator, noise: float, model_path: Path) -> None:
        super().__init__(rng, noise, model_path)
        self.stage = "await"

    def resume(self, s: Sensing) -> None:
        self.bar = s.to_robot(s.handle)
        if s.holding:
            self.grip["right"] = 1.0
            self.rise = max(0.0, s.obj_lift)
            self.bar[2] -= self.rise
            self.stage = "carry" if s.obj_lift > 0.10 else "lift"
        else:
            self.stage = "await"
        self.t_stage = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        """Return this robot's 34-D action."""
        self.t_stage += dt
        h = s.to_robot(s.handle)
        vx = vy = wz = 0.0
        if self.stage == "await":
            parked = np.linalg.norm(s.extras[0][:2] - self.parked_at) < 0.03
            if parked and self._ready(0.3):
                self._go("reach")
        else:
            vx, vy, wz = self._grasp_stages(s, h, "lift")
        if self.stage == "lift":
            self.rise = min(self.lift_by, self.rise + 0.15 * self.speed * dt)
            self._palm(self.bar)
            if self.rise >= self.lift_by and s.obj_lift > 0.10 and self._ready(0.3):
                self._go("carry")
        elif self.stage in ("carry", "lower"):
            vx, vy, wz = self._set_down(s, dt)
        vx += self._let_go(dt)
        return self.out(vx, vy, wz)
