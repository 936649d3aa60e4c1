"""FrameHang: two robots standing side by side take a wide picture frame by its side bars out
of a rack, lift it together, thread the eyelet on its top over a wall peg and let it hang.
Low base movement (arms, torso and small sideways steps), high physical coupling: one rigid
frame in two hands, so any mismatch in height or reach twists it off the peg."""

from __future__ import annotations

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..robot import SH_H, SH_X, ik2
from ..scene import world_xml
from .base import Phase, Task
from .shapes import FRICTION

WALL_X = 1.0
PEG_LEN, PEG_R = 0.10, 0.012
FRAME_X = WALL_X - 0.35  # the frame's plane in its rack
HALF_W, HALF_H = 0.45, 0.20  # frame half width and height
SIDE_Y = 0.43  # side bars (the grasp points)
RACK_H = 0.20
FRAME_Z = RACK_H + HALF_H + 0.001  # frame centre at spawn
HOLE = (0.03, 0.23)  # eyelet hole: half width, centre height above the frame centre
HOLE_HALF_H = 0.03
PEG_Z = FRAME_Z + HOLE[1] + 0.15  # nominal peg height (the frame must rise ~15 cm)
STANDOFF = 0.55


class FrameHang(Task):
    """Robot 0 at +y and robot 1 at -y, both facing the wall (+x)."""

    def __init__(self) -> None:
        super().__init__(
            name="FrameHang", n_robots=2, movement="low", coupling="high", limit=1000,
            phases=(Phase("grasp", "both robots hold the frame", False),
                    Phase("lift", "both hold it >= 10 cm above its spawn height", True),
                    Phase("hang", "the peg passed through the eyelet while both held the "
                          "frame; now released, still threaded, tilt <= 35 deg, |v| < 0.2 m/s, "
                          "|w| < 0.8 rad/s, for 0.2 s", True)),
            instructions={"joint": "Hang the picture frame on the wall peg together.",
                          "robot0": "Hold the frame's left side bar; lift it with your partner, "
                                    "thread its eyelet over the peg and let go.",
                          "robot1": "Hold the frame's right side bar; lift it with your "
                                    "partner, thread its eyelet over the peg and let go."},
            adaptation="A 0.9 x 0.4 m, 1.6 kg frame standing in a floor rack, held by its two "
                       "side bars; a 6 x 6 cm eyelet on its top edge goes over a 10 cm wall "
                       "peg. The arms reach the wall; the bases only step sideways to line up "
                       "with the peg.")

    def xml(self) -> str:
        bar = f'rgba=".45 .3 .15 1" {FRICTION}'
        hw, hh = HALF_W, HALF_H
        hole_w, hole_z = HOLE
        frame = (f'<body name="object" pos="{FRAME_X} 0 {FRAME_Z}"><freejoint name="object"/>'
                 f'<geom name="top" type="box" size="0.01 {hw} 0.02" pos="0 0 {hh - 0.02}" '
                 f'mass="0.3" {bar}/>'
                 f'<geom name="bottom" type="box" size="0.01 {hw} 0.02" pos="0 0 {-hh + 0.02}" '
                 f'mass="0.3" {bar}/>'
                 f'<geom name="side0" type="box" size="0.01 0.02 {hh - 0.04}" '
                 f'pos="0 {SIDE_Y} 0" mass="0.3" {bar}/>'
                 f'<geom name="side1" type="box" size="0.01 0.02 {hh - 0.04}" '
                 f'pos="0 {-SIDE_Y} 0" mass="0.3" {bar}/>'
                 f'<geom name="canvas" type="box" size="0.004 {SIDE_Y - 0.02} {hh - 0.04}" '
                 'mass="0.3" rgba=".9 .8 .6 1" contype="0" conaffinity="0"/>'
                 f'<geom name="eye_l" type="box" size="0.005 0.01 {HOLE_HALF_H}" '
                 f'pos="0 {hole_w + 0.01} {hole_z}" mass="0.03" rgba=".7 .7 .7 1"/>'
                 f'<geom name="eye_r" type="box" size="0.005 0.01 {HOLE_HALF_H}" '
                 f'pos="0 {-hole_w - 0.01} {hole_z}" mass="0.03" rgba=".7 .7 .7 1"/>'
                 f'<geom name="eye_top" type="box" size="0.005 {hole_w + 0.02} 0.01" '
                 f'pos="0 0 {hole_z + HOLE_HALF_H + 0.01}" mass="0.03" rgba=".7 .7 .7 1"/>'
                 f'<site name="eyelet" pos="0 0 {hole_z}" size="0.01"/>'
                 f'<site name="grip0" pos="0 {SIDE_Y} 0" size="0.01"/>'
                 f'<site name="grip1" pos="0 {-SIDE_Y} 0" size="0.01"/></body>')
        rail = f'type="box" size="0.01 {hw + 0.05} 0.02" rgba=".4 .4 .4 1"'
        statics = (f'<geom name="wall" type="box" size="0.05 1.5 0.9" pos="{WALL_X + 0.05} 0 0.9" '
                   'rgba=".85 .85 .8 1"/>'
                   f'<geom name="peg" type="cylinder" fromto="{WALL_X} 0 {PEG_Z} '
                   f'{WALL_X - PEG_LEN} 0 {PEG_Z}" size="{PEG_R}" rgba=".3 .3 .3 1"/>'
                   f'<geom name="rack" type="box" size="0.08 {hw + 0.05} {RACK_H / 2}" '
                   f'pos="{FRAME_X} 0 {RACK_H / 2}" rgba=".5 .4 .3 1"/>'
                   f'<geom name="rail0" {rail} pos="{FRAME_X + 0.025} 0 {RACK_H + 0.02}"/>'
                   f'<geom name="rail1" {rail} pos="{FRAME_X - 0.025} 0 {RACK_H + 0.02}"/>'
                   '<geom name="goal" type="sphere" size="0.005" pos="0 0 0" rgba="0 1 0 0" '
                   'contype="0" conaffinity="0"/>')
        robots = [(FRAME_X - STANDOFF, SIDE_Y, 0.0), (FRAME_X - STANDOFF, -SIDE_Y, 0.0)]
        return world_xml(self.name, robots, frame, statics=statics)

    def grasp_geoms(self) -> list[list[str]]:
        return [["side0"], ["side1"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        m = env.model
        shared = rng.uniform(-0.05, 0.05)  # the peg and the frame share a sideways offset
        peg = np.array([WALL_X - PEG_LEN / 2, shared, PEG_Z + rng.uniform(-0.04, 0.0)])
        pid = m.geom("peg").id
        m.geom_pos[pid] = [WALL_X - PEG_LEN / 2, peg[1], peg[2]]
        adr = m.jnt_qposadr[m.joint("object").id]
        env.data.qpos[adr + 1] += shared + rng.uniform(-0.03, 0.03)
        env.data.qpos[adr] += rng.uniform(-0.005, 0.005)
        env.goal = peg  # the peg's midpoint
        self.threaded_held = False

    def threaded(self, env) -> bool:
        """Return True if the peg's axis passes through the eyelet's hole."""
        d, m = env.data, env.model
        sid = m.site("eyelet").id
        R = d.site_xmat[sid].reshape(3, 3)
        base = np.array([WALL_X, env.goal[1], env.goal[2]])
        tip = base - np.array([PEG_LEN, 0, 0])
        n = R[:, 0]
        den = float(n @ (tip - base))
        if abs(den) < 1e-9:
            return False
        t = float(n @ (d.site_xpos[sid] - base)) / den
        if not 0.0 <= t <= 1.0:
            return False
        rel = R.T @ (base + t * (tip - base) - d.site_xpos[sid])
        return bool(abs(rel[1]) < HOLE[0] and abs(rel[2]) < HOLE_HALF_H)

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        holds = env.holds()
        lift = env.data.xpos[env.obj][2] - env.obj_z0
        threaded = self.threaded(env)
        self.threaded_held |= bool(threaded and holds.all())
        p1 = bool(holds.all())
        p2 = bool(holds.all() and lift >= 0.10)
        v, w = env.obj_speed()
        p3 = bool(self.threaded_held and threaded and not holds.any()
                  and env.obj_tilt_deg() <= 35 and v < 0.2 and w < 0.8)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return FrameHanger(rng, noise)


class FrameHanger(ArmOperator):
    """reach -> grasp -> lift (to the peg's height) -> thread (reach toward the wall, step
    sideways to line up) -> lower onto the peg -> release -> retreat. Both robots servo the
    frame they see toward the same peg, so they move together without talking."""

    def eyelet(self, s: Sensing) -> np.ndarray:
        """Return where the eyelet hole's centre is (world), from the frame's pose."""
        return s.obj_pos + s.obj_up * HOLE[1]

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grasp_pt = s.handle + np.array([0, 0, self.dz])
        grip = self.grasp_at(s, grasp_pt, STANDOFF, "lift")
        if self.stage in ("lift", "thread", "lower"):
            grip = 1.0
            if self.t_stage <= dt and self.stage == "lift":
                self.top = self.lift + float(s.goal[2] + 0.012 - self.eyelet(s)[2])
            if self.t_stage <= dt and self.stage == "thread":
                h = s.to_robot(s.hand)
                self.target = [float(h[0]), float(s.hand[2])]
            err = s.to_robot(s.base_xy + (s.goal - self.eyelet(s))[:2])  # robot frame
        if self.stage == "lift":
            self.lift = min(self.top, self.lift + 0.10 * self.speed * dt)
            if self.lift >= self.top and s.obj_lift > self.top - 0.03 and self._ready(0.3):
                self._go("thread")
        elif self.stage == "thread":  # reach toward the wall, step sideways to line up
            self.v = np.array([0.0, float(np.clip(2.0 * err[1], -0.1, 0.1))])
            ez = float(s.goal[2] + 0.012 - self.eyelet(s)[2])  # an outstretched arm sags
            step = 0.1 * self.speed * dt
            self.target[0] += float(np.clip(err[0], -step, step))
            self.target[1] += float(np.clip(ez, -step, step))
            self.arm = ik2(self.target[0] - SH_X, self.target[1] - (SH_H + s.joints[0]))
            if abs(err[0]) < 0.01 and abs(err[1]) < 0.01 and self._ready(0.5):
                self.bottom = self.lift - 0.045
                self._go("lower")
        elif self.stage == "lower":  # the arm holds still; the torso lowers the frame
            self.lift = max(self.bottom, self.lift - 0.05 * self.speed * dt)
            if self.lift <= self.bottom and self._ready(0.3):
                self._go("release")
        self.let_go(s, up=-0.05)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        return "thread" if s.obj_lift > 0.10 else "lift"

    def resume(self, s: Sensing) -> None:
        super().resume(s)
        self.top = self.lift + float(s.goal[2] + 0.012 - self.eyelet(s)[2])
