"""Carry tasks: several robots grasp one object by its handles, lift it together, carry it
to a goal region and set it down (CoCarry with 2 robots, BigTable with 3)."""

from __future__ import annotations

import math

import numpy as np

from ..operators import STANDOFF, CarryExpert, wrap
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
    obj_xy: tuple[float, float] = (0.0, 0.0)
    first_robots: tuple[tuple[float, float, float], ...] = ()  # robots other than carriers
    scene_objects: str = ""  # MJCF of other movable bodies and of fixed scenery
    scene_statics: str = ""

    def xml(self) -> str:
        handles = []
        for k, th in enumerate(self.handle_dirs):
            hx, hy = self.r_handle * math.cos(th), self.r_handle * math.sin(th)
            handles.append(f'<geom name="handle{k}" {HANDLE} pos="{hx:.4f} {hy:.4f} '
                           f'{self.handle_z}" euler="0 0 {th:.5f}"/>'
                           f'<site name="hsite{k}" pos="{hx:.4f} {hy:.4f} {self.handle_z}" '
                           f'size="0.01"/>')
        x0, y0 = self.obj_xy
        obj = (f'<body name="object" pos="{x0} {y0} {self.obj_z}"><freejoint name="object"/>'
               f'{self.body_geoms}{"".join(handles)}</body>')
        goal = ('<geom name="goal" type="cylinder" size="0.15 0.001" pos="0 0 0.001" '
                'rgba="0 1 0 .4" contype="0" conaffinity="0"/>')
        r_base = self.r_handle + STANDOFF + SH_OFFSET
        robots = [(x0 + r_base * math.cos(th), y0 + r_base * math.sin(th), th + math.pi)
                  for th in self.handle_dirs]
        return world_xml(self.name, list(self.first_robots) + robots, obj + self.scene_objects,
                         statics=goal + self.scene_statics)

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
# a 1.0 x 0.4 m four-legged table, its top's surface at the body origin (TableAlign, MoveHouse)
TABLE_GEOMS = ('<geom name="top" type="box" size="0.5 0.2 0.02" pos="0 0 -0.02" '
               'rgba=".8 .7 .4 1" mass="2.8"/>' + "".join(
                   f'<geom name="foot{k}" type="box" size="0.02 0.02 0.205" '
                   f'pos="{sx * 0.46} {sy * 0.16} -0.245" rgba=".6 .5 .3 1" mass="0.2"/>'
                   for k, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1)))))


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


class TableAlign(CarryTask):
    """Two robots carry a table, turn it on the way and set it down square in front of a
    chair."""

    def __init__(self) -> None:
        super().__init__(
            name="TableAlign", n_robots=2, movement="high", coupling="high", limit=1100,
            phases=(Phase("lift", "both hold and the table is >= 3 cm above standing height",
                          True),
                    Phase("carry", "both hold it inside the goal region (centre within 15 cm) "
                          "with every foot >= 1 cm off the floor", True),
                    Phase("align", "released, still, centre 33.5-46.5 cm in front of the "
                          "chair, within 13 cm sideways and 4 cm of standing height, square "
                          "to the chair within 4 deg, for 0.2 s", False)),
            instructions={"joint": "Carry the table to the chair, turning it on the way, and "
                                   "set it down square in front of the chair.",
                          "robot0": "Hold the table's left end; carry and turn it with your "
                                    "partner and put it down in front of the chair.",
                          "robot1": "Hold the table's right end; carry and turn it with your "
                                    "partner and put it down in front of the chair."},
            adaptation="A 1.0 x 0.4 m, 5.6 kg four-legged table with an end handle each side; "
                       "it turns 30-50 degrees while carried (each robot walks its handle "
                       "along its arc and turns its base with the table, so the grips see no "
                       "torsion; a quarter turn made the grip slip). The chair is static. "
                       "Demonstrations use half the usual action perturbation: at full "
                       "strength the jostled grips let the table slip in 3 of 4 attempts.",
            demo_perturb=0.25)
        self.body_geoms = TABLE_GEOMS
        self.r_handle, self.handle_z, self.obj_z = 0.525, -0.02, 0.4505
        self.handle_dirs = (math.pi, 0.0)

    def chair_xml(self) -> str:
        """Return the static chair (placed at reset)."""
        return ('<body name="chair" pos="0 3 0">'
                '<geom type="box" size="0.18 0.15 0.02" pos="0 0 0.35" rgba=".4 .3 .6 1"/>'
                '<geom type="box" size="0.18 0.02 0.2" pos="0 0.13 0.57" rgba=".4 .3 .6 1"/>'
                + "".join(f'<geom type="box" size="0.015 0.015 0.165" pos="{sx * 0.15} '
                          f'{sy * 0.12} 0.165" rgba=".4 .3 .6 1"/>'
                          for sx in (-1, 1) for sy in (-1, 1)) + '</body>')

    def xml(self) -> str:
        return super().xml().replace("</worldbody>", self.chair_xml() + "</worldbody>")

    def reset(self, env, rng: np.random.Generator) -> None:
        super().reset(env, rng)
        yaw = math.copysign(rng.uniform(math.radians(30), math.radians(50)), rng.uniform(-1, 1))
        env.goal_yaw = yaw
        m = env.model
        chair = m.body("chair").id
        # the chair stands 40 cm off the table's long side, facing it
        m.body_pos[chair] = [env.goal[0] - 0.40 * math.sin(yaw),
                             env.goal[1] + 0.40 * math.cos(yaw), 0.0]
        m.body_quat[chair] = [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        holds = env.holds()
        d = env.data
        dz = d.xpos[env.obj][2] - env.obj_z0
        p1 = bool(holds.all() and dz >= 0.03)
        p2 = bool(holds.all() and self._in_goal(env) and dz >= 0.01)
        yaw = env.goal_yaw
        chair = d.xpos[env.model.body("chair").id]
        rel = d.xpos[env.obj][:2] - chair[:2]
        ahead = -(-math.sin(yaw) * rel[0] + math.cos(yaw) * rel[1])  # the chair faces -y
        side = math.cos(yaw) * rel[0] + math.sin(yaw) * rel[1]
        x = d.xmat[env.obj].reshape(3, 3)[:, 0]
        off = abs(math.degrees(wrap(math.atan2(x[1], x[0]) - yaw)))
        square = min(off, 180 - off) <= 4  # the table is symmetric end to end
        v, w = env.obj_speed()
        p3 = bool(not holds.any() and 0.335 <= ahead <= 0.465 and abs(side) <= 0.13
                  and abs(dz) <= 0.04 and square and env.obj_tilt_deg() <= 15 and v < 0.05
                  and w < 0.15)
        return p1, p2, p3


STAND_H = 0.70  # the G1 tasks' stands and shelves: a G1's palms reach 0.65-1.0 m
STAND = ('<geom type="box" size="0.12 0.12 {h}" pos="0 0 {h}" rgba=".45 .45 .5 1" '
         'contype="1" conaffinity="1"/>')


def table_geoms(height: float, half: tuple[float, float] = (0.5, 0.2), mass: float = 2.8
                ) -> str:
    """Return a four-legged table's geoms, its top's surface at the body origin `height`
    above the floor (a 1.0 x 0.4 m top by default)."""
    leg = (height - 0.04) / 2
    hx, hy = half
    return (f'<geom name="top" type="box" size="{hx} {hy} 0.02" pos="0 0 -0.02" '
            f'rgba=".8 .7 .4 1" mass="{mass}"/>' + "".join(
                f'<geom name="foot{k}" type="box" size="0.02 0.02 {leg:.4f}" '
                f'pos="{sx * (hx - 0.04):.3f} {sy * (hy - 0.04):.3f} {-0.04 - leg:.4f}" '
                f'rgba=".6 .5 .3 1" mass="0.2"/>'
                for k, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1)))))


def bar_handles(dirs: tuple[float, ...], radius: float, z: float, gap: float = 0.06) -> str:
    """Return one bar handle per direction: a 20 cm bar across the direction at `radius`
    from the body origin and height `z`, on two posts reaching `gap` inward (to the object's
    side), with the site `hsiteK` at its middle (the fingers hook under it)."""
    out = []
    for k, th in enumerate(dirs):
        c, s = math.cos(th), math.sin(th)
        hx, hy = radius * c, radius * s
        bar = " ".join(f"{v:.4f}" for v in (hx - 0.10 * s, hy + 0.10 * c, z,
                                             hx + 0.10 * s, hy - 0.10 * c, z))
        out.append(f'<geom name="handle{k}" type="capsule" size="0.015" fromto="{bar}" '
                   f'rgba=".9 .9 .9 1" mass="0.1" friction="1.5 0.02 0.002" condim="4"/>'
                   + "".join(f'<geom type="box" size="{gap / 2:.3f} 0.01 0.01" pos="'
                             f'{hx - gap / 2 * c - 0.09 * e * s:.4f} '
                             f'{hy - gap / 2 * s + 0.09 * e * c:.4f} {z}" '
                             f'euler="0 0 {th:.5f}" rgba=".9 .9 .9 1" mass="0.02"/>'
                             for e in (-1, 1))
                   + f'<site name="hsite{k}" pos="{hx:.4f} {hy:.4f} {z}" size="0.01"/>')
    return "".join(out)


class G1Carry:
    """The G1 variant of a carry: each humanoid hooks both hands' fingers under a bar
    handle at its end of the object (`bar_handles`), at palm height: a basket on a stand (a
    shelf) that goes onto a second stand at the goal (`g1_stand`), or a table standing on
    the floor with its top at 0.84 m (counter height). The same phases, criteria and goal
    draw as the CoBot's task."""

    g1_standoff = 0.40  # pelvis to the bar (m)
    g1_stand = False  # the object rests on a stand, and goes onto one at the goal
    g1_gap = 0.06  # between a bar handle and the object's side: room for the fingers (m)

    def __init__(self) -> None:
        super().__init__()  # the CoBot task's fields, phases and goal draw
        self.embodiment = "g1"

    def xml(self) -> str:
        x0, y0 = self.obj_xy
        obj = (f'<body name="object" pos="{x0} {y0} {self.obj_z}">'
               f'<freejoint name="object"/>{self.body_geoms}'
               f'{bar_handles(self.handle_dirs, self.r_handle, self.handle_z, self.g1_gap)}'
               f'</body>')
        top = STAND_H if self.g1_stand else 0.0
        statics = (f'<geom name="goal" type="cylinder" size="0.15 0.001" '
                   f'pos="0 0 {top + 0.001}" rgba="0 1 0 .4" contype="0" conaffinity="0"/>')
        if self.g1_stand:
            h = STAND_H / 2
            statics += (f'<body name="stand" pos="{x0} {y0} 0">{STAND.format(h=h)}</body>'
                        f'<body name="goal_stand" pos="0 2 0">{STAND.format(h=h)}</body>')
        r = self.r_handle + self.g1_standoff + 0.2  # a step back: the hands start clear
        robots = [(x0 + r * math.cos(th), y0 + r * math.sin(th), th + math.pi)
                  for th in self.handle_dirs]
        return world_xml(self.name, robots, obj + self.g1_scene(),
                         statics=statics, embodiment="g1")

    def g1_scene(self) -> str:
        """Return the MJCF of the task's other bodies (none; TableAlign's chair)."""
        return ""

    def reset(self, env, rng: np.random.Generator) -> None:
        super().reset(env, rng)  # type: ignore[misc]
        if self.g1_stand:
            env.model.body_pos[env.model.body("goal_stand").id][:2] = env.goal[:2]

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        from ..g1_operators import G1CarryExpert

        ex = G1CarryExpert(rng, noise, env.model_path)
        ex.standoff, ex.bar_height = self.g1_standoff, self.handle_z
        return ex


class CoCarryG1(G1Carry, CoCarry):
    """CoCarry on G1s: two humanoids carry a basket shelf to shelf by its end handles."""

    g1_stand = True

    def __init__(self) -> None:
        super().__init__()
        # demonstrations at half the usual perturbation: at full strength the jostled hooks
        # let the basket go in every attempt of a sample of 8
        self.demo_perturb = 0.25
        self.adaptation = ("The paper's shelf-to-shelf basket carry on G1s: a 2 kg basket "
                           "(0.6 x 0.3 x 0.24 m) from a 0.7 m stand to a second stand at the "
                           "goal; each humanoid hooks both hands under a bar handle at its "
                           "end.")
        self.body_geoms = ('<geom name="basket" type="box" size="0.3 0.15 0.12" '
                           'rgba=".8 .7 .4 1" mass="1.8"/>')
        # a bar handle 6 cm out from each end, 2 cm below the rim: the fingers hook it
        self.r_handle, self.handle_z, self.obj_z = 0.36, 0.10, STAND_H + 0.1205


class BigTableG1(G1Carry, BigTable):
    """BigTable on G1s: three humanoids lift a round table by bar handles over its rim and
    move it onto the disc."""

    g1_standoff = 0.36

    def __init__(self) -> None:
        super().__init__()
        self.adaptation = ("A 6 kg four-legged round table (0.9 m across, its top at 0.84 m) "
                           "standing on the floor, with a bar handle over the rim at 120 "
                           "degrees for each humanoid's two hands; place is collaborative as "
                           "on the CoBot.")
        # four legs: a pedestal's round foot this tall rocks and bounces on its rim
        self.body_geoms = ('<geom name="top" type="cylinder" size="0.45 0.02" pos="0 0 -0.02" '
                           'rgba=".8 .7 .4 1" mass="4"/>' + "".join(
                               f'<geom name="foot{k}" type="box" size="0.025 0.025 0.40" '
                               f'pos="{0.3 * math.cos(a):.4f} {0.3 * math.sin(a):.4f} -0.44" '
                               f'rgba=".6 .5 .3 1" mass="0.5"/>'
                               for k, a in enumerate((0.0, math.pi / 2, math.pi,
                                                      1.5 * math.pi))))
        # bars 3 cm above the top, 8 cm out: the open fingers pass over the top, and close
        # in front of its edge and under the bar
        self.r_handle, self.handle_z, self.g1_gap, self.obj_z = 0.53, 0.03, 0.08, 0.84


class TableAlignG1(G1Carry, TableAlign):
    """TableAlign on G1s: two humanoids carry a table by its end handles, turn it on the way
    and set it down square in front of the chair."""

    g1_standoff = 0.36

    def __init__(self) -> None:
        super().__init__()
        self.adaptation = ("A 1.0 x 0.4 m, 3.6 kg table with its top at 0.84 m and a bar "
                           "handle over each end for a humanoid's two hands; it turns 30-50 "
                           "degrees while carried. The chair is static.")
        self.body_geoms = table_geoms(0.84)
        self.r_handle, self.handle_z, self.g1_gap, self.obj_z = 0.58, 0.03, 0.08, 0.84

    def g1_scene(self) -> str:
        return self.chair_xml()
