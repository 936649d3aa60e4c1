"""Handover: robot 0 picks a bottle up and holds it out; robot 1 takes it over the middle
and sets it upright on its pad. Low base movement, low physical coupling: the two hold the
bottle together only during the exchange."""

from __future__ import annotations

import math

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..robot import SH_H, SH_X, ik2
from ..scene import world_xml
from .base import Phase, Task

GAP = 0.8  # each robot's base stands this far from the handover point
BOTTLE_H = 0.10  # half height
STAND_H = 0.30  # the bottle starts on a stand and ends on another
GIVER_Z = -0.02  # grasp heights relative to the bottle centre
TAKER_Z = 0.06
PICK_FWD = 0.62  # where the bottle starts, in front of the giver
PAD_FWD = 0.60  # where the pad is, in front of the taker


class Handover(Task):
    """Robot 0 (giver) at -x facing +x, robot 1 (taker) at +x facing -x."""

    def __init__(self) -> None:
        super().__init__(
            name="Handover", n_robots=2, movement="low", coupling="low", limit=1000,
            phases=(Phase("pick", "robot 0 holds the bottle >= 3 cm up", False),
                    Phase("exchange", "both held it together, then robot 1 alone holds it "
                          ">= 3 cm up with robot 0's hand off", True),
                    Phase("place", "released, upright within 15 deg, still, within 6 cm of "
                          "robot 1's pad, for 0.2 s", False)),
            instructions={"joint": "Hand the bottle from the left robot to the right robot, "
                                   "which puts it on its pad.",
                          "robot0": "Pick up the bottle and hold it out to your partner; let "
                                    "go once your partner has it.",
                          "robot1": "Take the bottle from your partner above its hand and put "
                                    "it upright on your pad."},
            adaptation="A 20 cm, 0.3 kg bottle; the giver grasps low, the taker high, with "
                       "parallel grippers; both bases stay put (arm reach and torso lift do the "
                       "work).",
            holders_needed=1)
        self.both_held = False

    def xml(self) -> str:
        bottle = (f'<body name="object" pos="{-GAP + PICK_FWD} 0 {STAND_H + BOTTLE_H}">'
                  '<freejoint name="object"/>'
                  f'<geom name="bottle" type="cylinder" size="0.028 {BOTTLE_H}" mass="0.4" '
                  'rgba=".2 .6 .9 1" friction="1.5 0.02 0.002" condim="4"/>'
                  f'<site name="grip0" pos="0 0 {GIVER_Z}" size="0.01"/>'
                  f'<site name="grip1" pos="0 0 {TAKER_Z}" size="0.01"/></body>')
        half = STAND_H / 2
        pad = (f'<geom name="stand0" type="box" size="0.12 0.16 {half}" '
               f'pos="{-GAP + PICK_FWD} 0 {half}" rgba=".5 .4 .3 1"/>'
               f'<geom name="stand1" type="box" size="0.12 0.2 {half}" '
               f'pos="{GAP - PAD_FWD} 0 {half}" rgba=".5 .4 .3 1"/>'
               f'<geom name="goal" type="cylinder" size="0.06 0.001" pos="0 0 {STAND_H + 0.001}" '
               'rgba="0 1 0 .4" contype="0" conaffinity="0"/>')
        robots = [(-GAP, 0.0, 0.0), (GAP, 0.0, math.pi)]
        return world_xml(self.name, robots, bottle, statics=pad)

    def grasp_geoms(self) -> list[list[str]]:
        return [["bottle"], ["bottle"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        adr = env.model.jnt_qposadr[env.model.joint("object").id]
        env.data.qpos[adr:adr + 2] += rng.uniform(-0.03, 0.03, 2)
        env.goal = np.array([GAP - PAD_FWD + rng.uniform(-0.04, 0.04),
                             rng.uniform(-0.10, 0.10), STAND_H])
        env.model.geom_pos[env.model.geom("goal").id][:2] = env.goal[:2]
        self.both_held = False

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        holds = env.holds()
        lift = env.data.xpos[env.obj][2] - env.obj_z0
        self.both_held |= bool(holds.all())
        p1 = bool(holds[0] and lift >= 0.03)
        p2 = bool(self.both_held and holds[1] and not holds[0] and lift >= 0.03)
        v, w = env.obj_speed()
        near = np.linalg.norm(env.data.xpos[env.obj][:2] - env.goal[:2]) <= 0.06
        p3 = bool(not holds.any() and near and env.obj_tilt_deg() <= 15 and v < 0.05
                  and w < 0.15 and abs(lift) < 0.02)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return (Giver if i == 0 else Taker)(rng, noise)


class Giver(ArmOperator):
    """reach -> grasp -> lift -> offer (arm out to the middle) -> hold until the partner's
    hand is on the bottle -> release -> retreat."""

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grasp_pt = s.handle + np.array([0, 0, self.dz])
        mid = np.array([0.0, s.obj_pos[1], grasp_pt[2]])
        grip = self.grasp_at(s, grasp_pt, PICK_FWD, "lift")
        if self.stage == "lift":
            grip = 1.0
            self.lift = min(0.10, self.lift + 0.2 * self.speed * dt)
            if self.lift >= 0.10 and self._ready(0.2):
                self._go("offer")
        elif self.stage == "offer":  # move the hand to the middle at constant height
            grip = 1.0
            if self.t_stage <= dt:
                h = s.to_robot(s.hand)
                self.target = [float(h[0]), float(s.hand[2]) + 0.02]
            goal = float(s.to_robot(mid)[0])
            self.target[0] = min(goal, self.target[0] + 0.3 * self.speed * dt)
            self.arm = ik2(self.target[0] - SH_X, self.target[1] - (SH_H + s.joints[0]))
            # let go once the partner's hand has stayed on the bottle's upper part for a while
            # (seen, not told: the giver cannot feel the partner's grip)
            upper = s.obj_pos + s.obj_up * TAKER_Z
            near = np.linalg.norm(s.partner_hands[0] - upper) < 0.04
            self.near_for = self.near_for + dt if near else 0.0
            if self.near_for >= 1.2 and self._ready(0.0):
                self._go("release")
        self.let_go(s)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:  # still on its stand: pick it up; otherwise it has been handed over
            return "reach" if s.obj_lift < 0.02 else "retreat"
        return "offer" if s.obj_lift > 0.07 else "lift"


class Taker(ArmOperator):
    """wait until the bottle is held out in the middle -> reach its upper part -> grasp ->
    wait for the partner's hand to leave -> carry over the pad -> lower -> release."""

    after_grasp = "wait"

    def _offered(self, s: Sensing) -> bool:
        """Return True once the bottle is held out over the middle."""
        return s.obj_lift > 0.07 and abs(s.obj_pos[0]) < 0.08

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grip = 0.0
        take_pt = s.handle + np.array([0, 0, self.dz])
        if self.stage == "reach":  # wait (arm folded) until the bottle is offered
            self.lift = min(0.10, self.lift + 0.2 * dt)
            if self._offered(s) and self._ready(0.2):
                self._go("approach")
        elif self.stage == "approach":
            self.base(s, take_pt, None)
            self._reach(s, take_pt)
            lat = abs(float(s.to_robot(take_pt)[1]))
            if self._ready(1.4) and lat < 0.01 and self._closed_in():
                self._go("grasp")
        elif self.stage == "grasp":
            grip = 1.0
            self._ik(s, take_pt)
            if self._ready(0.5):
                self._go(self.after_grasp if s.holding else "approach")
        elif self.stage == "wait":  # both hold; the giver lets go when it sees our hand
            grip = 1.0
            free = np.linalg.norm(s.partner_hands[0] - s.obj_pos) > 0.15
            if free and self._ready(0.3):
                self._go("carry")
        elif self.stage == "carry":  # the bottle over the pad: arm in, base sideways
            grip = 1.0
            if self.t_stage <= dt:
                h = s.to_robot(s.hand)
                self.target = [float(h[0]), float(s.hand[2]) + 0.02]
            err = s.to_robot(s.goal)[:2] - s.to_robot(s.obj_pos)[:2]
            self.target[0] += float(np.clip(err[0], -0.3 * self.speed * dt,
                                            0.3 * self.speed * dt))
            self.arm = ik2(self.target[0] - SH_X, self.target[1] - (SH_H + s.joints[0]))
            self.v = np.array([0.0, 2.0 * float(err[1])])
            if np.abs(err).max() < 0.01 and self._ready(0.5):
                self._go("lower")
        elif self.stage == "lower":  # hand down (arm) until the bottle stands on the pad
            grip = 1.0
            if s.obj_lift > 0.003:
                self.target[1] -= 0.1 * self.speed * dt
            self.arm = ik2(self.target[0] - SH_X, self.target[1] - (SH_H + s.joints[0]))
            if s.obj_lift <= 0.003 and self._ready(0.3):
                self._go("release")
        self.let_go(s)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        free = np.linalg.norm(s.partner_hands[0] - s.obj_pos) > 0.15
        return "carry" if free else "wait"


# -- the G1 version ------------------------------------------------------------------------------
G1_STAND_H = 0.45  # both stands: the basket's bar then sits at a G1's palm height
G1_BASKET = (0.12, 0.17, 0.08)  # the basket's half sizes (m)
G1_BAR_Z = 0.28  # the bar above the basket's centre: high, so one hook tilts it little
G1_GRIP_Y = 0.055  # each robot's grasp point this far from the bar's middle (its right)
G1_START = -0.30  # the basket's x on the giver's stand; the taker's pad is at -G1_START
G1_GAP = 0.90  # each G1's pelvis starts this far from the middle


class HandoverG1(Handover):
    """Handover on G1s: robot 0 pinches the bar handle over a basket in its right hand, lifts
    it off its stand and holds it out over the middle; robot 1 pinches the same bar on the
    middle's other side; robot 0 lets go; robot 1 sets the basket on its stand's pad."""

    g1_hands = ("right",)  # a G1 here holds with its right hand alone

    def __init__(self) -> None:
        super().__init__()
        self.embodiment = "g1"
        # demonstrations at half the usual perturbation: at full strength 61% of the
        # perturbed attempts were rejected
        self.demo_perturb = 0.25
        self.adaptation = ("A 0.6 kg basket (24 x 34 x 16 cm) with a bar handle 28 cm over its "
                           "centre, from a 0.45 m stand to a second stand across the middle; "
                           "each humanoid pinches the bar in its right hand (fingers over and "
                           "in front, thumb behind), the giver on its side of the bar's "
                           "middle, the taker on the other; the giver steps to the middle, the "
                           "taker steps back to its stand.")
        self.instructions = {**self.instructions,
                             "joint": "Hand the basket from the left robot to the right robot, "
                                      "which puts it on its stand's pad."}

    def xml(self) -> str:
        hx, y, hz = G1_BASKET
        basket = (f'<body name="object" pos="{G1_START} 0 {G1_STAND_H + hz}">'
                  '<freejoint name="object"/>'
                  f'<geom name="basket" type="box" size="{hx} {y} {hz}" mass="0.45" '
                  'rgba=".8 .7 .4 1"/>'
                  f'<geom name="bar" type="capsule" size="0.013" fromto="0 {-y} {G1_BAR_Z} '
                  f'0 {y} {G1_BAR_Z}" mass="0.05" rgba=".9 .9 .9 1" friction="1.5 0.02 0.002" '
                  'condim="4"/>'
                  + "".join(f'<geom type="box" size="0.01 0.01 {(G1_BAR_Z - hz) / 2:.4f}" '
                            f'pos="0 {e * y:.3f} {(G1_BAR_Z + hz) / 2:.4f}" mass="0.05" '
                            'rgba=".9 .9 .9 1"/>' for e in (-1, 1))
                  + f'<site name="grip0" pos="0 {-G1_GRIP_Y} {G1_BAR_Z}" size="0.01"/>'
                  f'<site name="grip1" pos="0 {G1_GRIP_Y} {G1_BAR_Z}" size="0.01"/></body>')
        half = G1_STAND_H / 2
        stands = (f'<geom name="stand0" type="box" size="0.14 0.2 {half}" '
                  f'pos="{G1_START} 0 {half}" rgba=".5 .4 .3 1"/>'
                  f'<geom name="stand1" type="box" size="0.16 0.26 {half}" '
                  f'pos="{-G1_START} 0 {half}" rgba=".5 .4 .3 1"/>'
                  '<geom name="goal" type="cylinder" size="0.06 0.001" '
                  f'pos="0 0 {G1_STAND_H + 0.001}" rgba="0 1 0 .4" contype="0" '
                  'conaffinity="0"/>')
        robots = [(-G1_GAP, 0.0, 0.0), (G1_GAP, 0.0, math.pi)]
        return world_xml(self.name, robots, basket, statics=stands, embodiment="g1")

    def grasp_geoms(self) -> list[list[str]]:
        return [["bar"], ["bar"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        adr = env.model.jnt_qposadr[env.model.joint("object").id]
        env.data.qpos[adr:adr + 2] += rng.uniform(-0.03, 0.03, 2)
        env.goal = np.array([-G1_START + rng.uniform(-0.04, 0.04), rng.uniform(-0.08, 0.08),
                             G1_STAND_H])
        env.model.geom_pos[env.model.geom("goal").id][:2] = env.goal[:2]
        self.both_held = False

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        from ..g1_operators import G1Giver, G1Taker

        ex = (G1Giver if i == 0 else G1Taker)(rng, noise, env.model_path)
        ex.partner_offset = 2 * G1_GRIP_Y
        return ex
