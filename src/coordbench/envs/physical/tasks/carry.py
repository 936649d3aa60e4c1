"""Carry tasks: several robots grasp one object by its handles, lift it together, carry it
to a goal region and set it down (CoCarry with 2 robots, BigTable with 3)."""

from __future__ import annotations

import math

import numpy as np

from ..expert import STANDOFF, CarryExpert
from ..scene import world_xml
from .base import Phase, Task

HANDLE = 'type="box" size="0.025 0.02 0.05" rgba=".9 .9 .9 1" mass="0.05" ' \
         'friction="1.5 0.02 0.002" condim="4"'


class CarryTask(Task):
    """Object with one handle per robot at angles `handle_dirs` and radius `r_handle`."""

    body_geoms: str = ""
    r_handle: float = 0.6
    handle_z: float = 0.0
    obj_z: float = 0.12
    handle_dirs: tuple[float, ...] = ()
    goal_dist: tuple[float, float] = (1.0, 1.4)

    def xml(self) -> str:
        handles = []
        for k, th in enumerate(self.handle_dirs):
            hx, hy = self.r_handle * math.cos(th), self.r_handle * math.sin(th)
            handles.append(f'<geom name="handle{k}" {HANDLE} pos="{hx:.4f} {hy:.4f} '
                           f'{self.handle_z}" euler="0 0 {th:.5f}"/>'
                           f'<site name="hsite{k}" pos="{hx:.4f} {hy:.4f} {self.handle_z}" '
                           f'size="0.01"/>')
        obj = (f'<body name="object" pos="0 0 {self.obj_z}"><freejoint name="object"/>'
               f'{self.body_geoms}{"".join(handles)}</body>')
        goal = ('<geom name="goal" type="cylinder" size="0.15 0.001" pos="0 0 0.001" '
                'rgba="0 1 0 .4" contype="0" conaffinity="0"/>')
        r_base = self.r_handle + STANDOFF + SH_OFFSET
        robots = [(r_base * math.cos(th), r_base * math.sin(th), th + math.pi)
                  for th in self.handle_dirs]
        return world_xml(self.name, robots, obj, statics=goal)

    def grasp_geoms(self) -> list[list[str]]:
        return [[f"handle{k}"] for k in range(self.n_robots)]

    def handle_sites(self) -> list[str]:
        return [f"hsite{k}" for k in range(self.n_robots)]

    def reset(self, env, rng: np.random.Generator) -> None:
        adr = env.model.jnt_qposadr[env.model.joint("object").id]
        env.data.qpos[adr:adr + 2] += rng.uniform(-0.05, 0.05, 2)
        yaw = rng.uniform(-math.radians(4), math.radians(4))
        env.data.qpos[adr + 3:adr + 7] = [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]
        ang = math.pi / 2 + rng.uniform(-math.radians(30), math.radians(30))
        dist = rng.uniform(*self.goal_dist)
        env.goal = np.array([dist * math.cos(ang), dist * math.sin(ang), 0.0])
        env.model.geom_pos[env.model.geom("goal").id][:2] = env.goal[:2]

    def _in_goal(self, env) -> bool:
        return bool(np.linalg.norm(env.data.xpos[env.obj][:2] - env.goal[:2]) <= 0.15)

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        holds = env.holds()
        dz = env.data.xpos[env.obj][2] - env.obj_z0
        p1 = bool(holds.all() and dz >= 0.03)
        p2 = bool(holds.all() and self._in_goal(env) and dz >= 0.01)
        v, w = env.obj_speed()
        p3 = bool(not holds.any() and self._in_goal(env) and env.obj_tilt_deg() <= 15
                  and v < 0.05 and w < 0.15 and abs(dz) < 0.06)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float) -> CarryExpert:
        return CarryExpert(rng, noise)


SH_OFFSET = 0.0  # the base stands STANDOFF behind the grasp point


class CoCarry(CarryTask):
    """Two robots carry a long basket by its end handles to a goal region."""

    def __init__(self) -> None:
        super().__init__(
            name="CoCarry", n_robots=2, movement="high", coupling="high", limit=1000,
            phases=(Phase("lift", "both robots hold and the basket is >= 3 cm above its rest "
                          "height", True),
                    Phase("transport", "both hold, the basket is within 15 cm of the goal "
                          "centre, >= 1 cm clear of the floor", True),
                    Phase("place", "released by both, inside the goal, tilt <= 15 deg, "
                          "|v| < 0.05 m/s, |w| < 0.15 rad/s, within 6 cm of rest height, for "
                          "0.2 s", False)),
            instructions={"joint": "Carry the basket together to the green goal and set it "
                                   "down there.",
                          "robot0": "Grasp the basket's left handle, lift it with your "
                                    "partner, carry it to the goal and put it down.",
                          "robot1": "Grasp the basket's right handle, lift it with your "
                                    "partner, carry it to the goal and put it down."},
            adaptation="The paper's shelf-to-shelf basket carry becomes a floor-to-goal-region "
                       "carry of a 3 kg basket (1.1 x 0.36 x 0.24 m) with a handle at each "
                       "end; parallel grippers instead of dexterous hands.")
        self.body_geoms = ('<geom name="basket" type="box" size="0.55 0.18 0.12" '
                           'rgba=".8 .7 .4 1" mass="3"/>')
        self.r_handle, self.handle_z, self.obj_z = 0.6, 0.0, 0.1205
        self.handle_dirs = (math.pi, 0.0)


class BigTable(CarryTask):
    """Three robots move a round pedestal table, each by one of its three handles."""

    def __init__(self) -> None:
        super().__init__(
            name="BigTable", n_robots=3, movement="high", coupling="high", limit=1000,
            phases=(Phase("lift", "all three hold and the table is >= 3 cm above rest", True),
                    Phase("transport", "all three hold, the table is within 15 cm of the goal "
                          "centre, >= 1 cm clear", True),
                    Phase("place", "released by all, inside the goal, upright within 15 deg, "
                          "still, within 6 cm of rest height, for 0.2 s", True)),
            instructions={"joint": "Move the round table together onto the green disc.",
                          "robot0": "Hold the table at your handle and move it with the others "
                                    "onto the disc.",
                          "robot1": "Hold the table at your handle and move it with the others "
                                    "onto the disc.",
                          "robot2": "Hold the table at your handle and move it with the others "
                                    "onto the disc."},
            adaptation="A 6 kg round pedestal table with three handles at 120 degrees; the "
                       "three robots stand at the handles. Place is collaborative: a robot "
                       "letting go early tips the table while the others still hold it.")
        self.body_geoms = ('<geom name="top" type="cylinder" size="0.50 0.06" pos="0 0 0.06" '
                           'rgba=".8 .7 .4 1" mass="4"/>'
                           '<geom name="leg" type="cylinder" size="0.06 0.09" pos="0 0 -0.09" '
                           'rgba=".6 .5 .3 1" mass="1"/>'
                           '<geom name="foot" type="cylinder" size="0.22 0.02" pos="0 0 -0.17" '
                           'rgba=".6 .5 .3 1" mass="1" condim="6" friction="1 0.05 0.01"/>')
        # rolling friction on the round foot: without it the placed table rocks on the
        # foot's rim forever and never counts as still
        self.r_handle, self.handle_z, self.obj_z = 0.55, 0.06, 0.1905
        self.handle_dirs = (math.pi, math.pi / 3, -math.pi / 3)
