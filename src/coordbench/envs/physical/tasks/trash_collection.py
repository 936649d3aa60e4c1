"""TrashCollection: robot 0 picks a bin up off the floor and carries it to the end of a bench,
holding it just below the bench top; robot 1 sweeps a bottle along the bench and over the
edge into the bin. High base movement, low physical coupling: the robots never touch the
same object, but the sweep only pays off where and while the partner holds the bin."""

from __future__ import annotations

import math

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..scene import world_xml
from .base import Phase, Task
from .shapes import open_box

BENCH_TOP = 0.40
BENCH = (0.50, 0.20)  # half sizes (x, y); the bench spans x in [-0.5, 0.5]
LINE_Y = 0.55  # the bench's centre line
BIN = (0.12, 0.15, 0.12)  # outer half sizes
BIN_X0 = 1.30  # where the bin starts on the floor
CARRY_X = BENCH[0] + BIN[0] + 0.02  # bin centre at the carry point, beside the bench's end
HELD_Z = BENCH_TOP - 0.005 - BIN[2]  # bin centre when held: rim just below the bench top
BOTTLE_R, BOTTLE_H = 0.028, 0.09
BOTTLE_X = 0.20
SWEEP_Z = 0.045  # sweep height above the bench top (low: the bottle slides, not tips)
FINGER_OUT = 0.023  # closed fingers' outer face from the hand centre


class TrashCollection(Task):
    """Robot 0 starts at +x behind the bin, facing -x; robot 1 stands at the bench's front
    (-y side), facing +y."""

    def __init__(self) -> None:
        super().__init__(
            name="TrashCollection", n_robots=2, movement="high", coupling="low", limit=1000,
            phases=(Phase("lift bin", "robot 0 holds the bin >= 2 cm off the floor", False),
                    Phase("deliver bin", "robot 0 holds it aloft within 25 cm of the carry "
                          "point beside the bench's end, its rim <= 1 cm above the bench top",
                          False),
                    Phase("sweep", "the bottle inside the bin, robot 0 still holding it",
                          True)),
            instructions={"joint": "Put the bottle on the bench into the bin.",
                          "robot0": "Pick the bin up and hold it at the end of the bench, "
                                    "just below the bench top, until the bottle is in.",
                          "robot1": "Once the bin is in place, sweep the bottle along the bench "
                                    "and over its end into the bin."},
            adaptation="A 24 cm, 0.45 kg bin with a side handle (with more torsional grip "
                       "friction than the other handles: held from one side, its weight twists "
                       "it in the fingers), carried 0.65 m; a light 18 cm plastic "
                       "bottle (friction 0.4) standing on the bench, pushed low with the closed "
                       "gripper so that it slides rather than tips.",
            extra_bodies=("bottle",),
            object_holders=(0,))

    def xml(self) -> str:
        bin_geoms, _ = open_box("bin", BIN, 0.012, 0.4, ".3 .5 .3 1")
        hx = BIN[0] + 0.04
        objects = (f'<body name="object" pos="{BIN_X0} {LINE_Y} {BIN[2] + 0.001}">'
                   f'<freejoint name="object"/>{bin_geoms}'
                   f'<geom name="bin_handle" type="box" size="0.04 0.02 0.05" pos="{hx} 0 0" '
                   'mass="0.05" rgba=".9 .9 .9 1" friction="1.5 0.06 0.002" condim="4"/>'
                   f'<site name="grip0" pos="{hx + 0.012} 0 0" size="0.01"/></body>'
                   f'<body name="bottle" pos="{BOTTLE_X} {LINE_Y} {BENCH_TOP + BOTTLE_H + 0.001}">'
                   f'<freejoint name="bottle"/><geom name="bottle" type="cylinder" '
                   f'size="{BOTTLE_R} {BOTTLE_H}" mass="0.1" rgba=".8 .9 1 1" '
                   'friction="0.4 0.01 0.001" condim="4"/>'
                   '<site name="grip1" size="0.01"/></body>')
        statics = (f'<geom name="bench" type="box" size="{BENCH[0]} {BENCH[1]} {BENCH_TOP / 2}" '
                   f'pos="0 {LINE_Y} {BENCH_TOP / 2}" rgba=".5 .4 .3 1"/>'
                   f'<geom name="goal" type="box" size="{BIN[0]} {BIN[1]} 0.001" '
                   f'pos="{CARRY_X} {LINE_Y} 0.001" rgba="0 1 0 .3" contype="0" '
                   'conaffinity="0"/>')
        robots = [(BIN_X0 + hx + 0.012 + 0.62, LINE_Y, math.pi),
                  (BOTTLE_X - BOTTLE_R - FINGER_OUT - 0.01, LINE_Y - 0.62, math.pi / 2)]
        return world_xml(self.name, robots, objects, statics=statics)

    def grasp_geoms(self) -> list[list[str]]:
        return [["bin_handle"], ["bottle"]]  # robot 1 never grasps; it pushes

    def reset(self, env, rng: np.random.Generator) -> None:
        m, q = env.model, env.data.qpos
        d_bin = np.array([rng.uniform(-0.15, 0.15), rng.uniform(-0.05, 0.05)])
        adr = m.jnt_qposadr[m.joint("object").id]
        q[adr:adr + 2] += d_bin
        q[env.qadr[0, :2]] += d_bin  # robot 0 starts behind the bin's handle
        adr = m.jnt_qposadr[m.joint("bottle").id]
        q[adr:adr + 2] += [rng.uniform(-0.10, 0.10), rng.uniform(-0.06, 0.06)]
        env.goal = np.array([CARRY_X, LINE_Y + rng.uniform(-0.04, 0.04), HELD_Z])
        m.geom_pos[m.geom("goal").id][:2] = env.goal[:2]

    def bottle_in_bin(self, env) -> bool:
        """Return True if the bottle's centre lies inside the bin's inner volume."""
        d = env.data
        rel = d.xmat[env.obj].reshape(3, 3).T @ (d.xpos[env.extras[0]] - d.xpos[env.obj])
        return bool(abs(rel[0]) < BIN[0] - 0.012 and abs(rel[1]) < BIN[1] - 0.012
                    and -BIN[2] < rel[2] < BIN[2])

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        d = env.data
        held = bool(env.holds()[0])
        lift = d.xpos[env.obj][2] - env.obj_z0
        p1 = held and lift >= 0.02
        rim = d.xpos[env.obj][2] + BIN[2]
        near = np.linalg.norm(d.xpos[env.obj][:2] - env.goal[:2]) <= 0.25
        p2 = held and lift >= 0.02 and near and rim <= BENCH_TOP + 0.01
        p3 = held and self.bottle_in_bin(env)
        return bool(p1), bool(p2), bool(p3)

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return (BinCarrier if i == 0 else Sweeper)(rng, noise)


class BinCarrier(ArmOperator):
    """reach the bin's handle -> grasp -> lift -> carry to the bench's end -> hold there."""

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grasp_pt = s.handle + np.array([0, 0, self.dz])
        grip = self.grasp_at(s, grasp_pt, 0.62, "lift")
        if self.stage in ("lift", "carry"):
            grip = 1.0
        if self.stage == "lift":  # torso up until the rim is just below the bench top
            self.lift = min(0.28, self.lift + 0.2 * self.speed * dt)
            if s.obj_pos[2] >= s.goal[2] - 0.002 or self.lift >= 0.28:
                self.lift = float(s.joints[0])
                self._go("carry")
        elif self.stage == "carry":  # torso keeps the rim just below the bench top
            self.lift = float(np.clip(self.lift + 0.5 * dt * (s.goal[2] - s.obj_pos[2]), 0, 0.3))
            self.tow(s, s.goal[:2] - s.obj_pos[:2], 0.3 * self.speed, 1.2, grasp_pt, 0.62)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        return "carry" if s.obj_lift > 0.02 else "lift"


class Sweeper(ArmOperator):
    """hand beside the bottle, low over the bench (gripper closed) -> wait for the bin ->
    sweep along the bench past its end -> lift the hand away."""

    grasps = False

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        bottle = s.extras[0]
        behind = np.array([bottle[0] - BOTTLE_R - FINGER_OUT - 0.01 - self.dz, bottle[1],
                           BENCH_TOP + SWEEP_Z])
        if self.stage == "reach":  # line up behind the bottle (seen from the sweep direction)
            self.base(s, behind, 0.62)
            self._reach(s, behind)
            if self._closed_in() and self._ready(0.5):
                h = s.to_robot(s.hand)
                self.target = [float(h[0]), float(s.hand[2])]
                self._go("wait")
        elif self.stage == "wait":
            placed = np.linalg.norm(s.obj_pos[:2] - s.goal[:2]) < 0.03 and \
                s.obj_pos[2] + BIN[2] <= BENCH_TOP + 0.005
            if placed and self._ready(0.5):
                self._go("sweep")
        elif self.stage == "sweep":  # the base carries the hand along the bench (+x)
            speed = 0.12 * self.speed * min(1.0, 2 * self.t_stage)
            rel = s.to_robot(s.base_xy + np.array([speed, 0.0]))
            self.v = np.array([float(rel[0]), float(rel[1])])
            if s.hand[0] > BENCH[0] + 0.02 or bottle[2] < BENCH_TOP - 0.05:
                self._go("retreat")
        self.let_go(s, up=0.1)
        return self.out(1.0)  # the hand stays closed: a sweeping fist, never a grasp

    def _resume_stage(self, s: Sensing) -> str:
        return "retreat" if s.extras[0][2] < BENCH_TOP - 0.05 else "reach"
