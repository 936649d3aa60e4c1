"""CartService: robot 0 pushes a service trolley with a bottle on it to a parking mark beside
a table; robot 1, waiting at the table, takes the bottle off the parked trolley and sets it
on the table's goal. High base movement, low physical coupling: each robot handles its own
object, but robot 1 can only serve once robot 0 has delivered."""

from __future__ import annotations

import math

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..scene import world_xml
from .base import Phase, Task
from .handover import BOTTLE_H, Taker
from .shapes import FRICTION

TOP = 0.40  # trolley deck and table top height
MARK = np.array([0.70, -0.40])  # where the trolley's centre parks
START_Y = -1.25  # trolley start (before randomization)
DECK = (0.22, 0.18)  # deck half sizes
BOTTLE_AT = -0.08  # bottle position on the deck (x, trolley frame): toward robot 1
PUSH_FWD = 0.62  # robot 0's base stays this far behind its grasp point
GOAL = np.array([0.62, 0.45])


class CartService(Task):
    """Robot 1 at the origin faces +x with the table to its front left; robot 0 starts
    behind the trolley, facing +y."""

    def __init__(self) -> None:
        super().__init__(
            name="CartService", n_robots=2, movement="high", coupling="low", limit=2000,
            phases=(Phase("park", "the trolley's centre within 35 cm of the parking mark",
                          False),
                    Phase("lift bottle", "robot 1 lifts the bottle >= 10 cm above where it "
                          "stood on the trolley", False),
                    Phase("serve", "released upright (<= 15 deg), still, within 6 cm of the "
                          "table goal on each axis, for 0.2 s", False)),
            instructions={"joint": "Bring the trolley to the table and serve the bottle onto "
                                   "the green mark.",
                          "robot0": "Push the trolley to the parking mark beside the table, "
                                    "then let go and step back.",
                          "robot1": "Once the trolley is parked, take the bottle from it and "
                                    "set it upright on the green mark on the table."},
            adaptation="A 6 kg four-wheeled trolley (low-friction spheres for wheels) with a "
                       "vertical push handle and a bottle in a holder on its deck; robot 0 "
                       "holds the handle and drives its base; the table top and the deck are "
                       "at the same height. As in the paper, every phase is done by one robot; "
                       "the task is collaborative as a whole (robot 1 serves from the trolley "
                       "robot 0 delivers).",
            extra_bodies=("trolley",),
            object_holders=(1,))

    def xml(self) -> str:
        dx, dy = DECK
        wheel = ('type="sphere" size="0.03" mass="0.2" rgba=".1 .1 .1 1" friction="0.05 0 0" '
                 'priority="1"')  # priority: the wheels, not the floor, set the friction
        legs = "".join(
            f'<geom type="box" size="0.015 0.015 {(TOP - 0.08) / 2:.3f}" '
            f'pos="{sx * (dx - 0.03):.3f} {sy * (dy - 0.03):.3f} {-(TOP - 0.08) / 2 - 0.02:.3f}" '
            f'mass="0.3" rgba=".6 .6 .6 1"/>'
            f'<geom name="wheel{k}" {wheel} pos="{sx * (dx - 0.03):.3f} {sy * (dy - 0.03):.3f} '
            f'{-(TOP - 0.03) - 0.0:.3f}"/>'
            for k, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))))
        holder = "".join(
            f'<geom type="box" size="{hx} {hy} 0.015" pos="{BOTTLE_AT + px} {py} 0.015" '
            'mass="0.02" rgba=".6 .6 .6 1"/>'
            for hx, hy, px, py in ((0.004, 0.04, 0.036, 0), (0.004, 0.04, -0.036, 0),
                                   (0.04, 0.004, 0, 0.036), (0.04, 0.004, 0, -0.036)))
        trolley = (f'<body name="trolley" pos="{MARK[0]} {START_Y} {TOP}">'
                   '<freejoint name="trolley"/>'
                   f'<geom name="deck" type="box" size="{dx} {dy} 0.02" pos="0 0 -0.02" '
                   f'mass="4" rgba=".7 .5 .3 1"/>{legs}{holder}'
                   f'<geom name="push_handle" type="box" size="0.02 0.025 0.12" '
                   f'pos="0 {-dy - 0.025} 0.16" mass="0.3" rgba=".9 .9 .9 1" {FRICTION}/>'
                   f'<site name="grip0" pos="0 {-dy - 0.025} 0.16" size="0.01"/></body>')
        bottle = (f'<body name="object" pos="{MARK[0] + BOTTLE_AT} {START_Y} '
                  f'{TOP + BOTTLE_H + 0.001}"><freejoint name="object"/>'
                  f'<geom name="bottle" type="cylinder" size="0.028 {BOTTLE_H}" mass="0.4" '
                  f'rgba=".3 .1 .4 1" {FRICTION}/>'
                  '<site name="grip1" pos="0 0 0.06" size="0.01"/></body>')
        table = (f'<geom name="table" type="box" size="0.30 0.35 {TOP / 2}" '
                 f'pos="0.75 0.55 {TOP / 2}" rgba=".5 .4 .3 1"/>'
                 f'<geom name="goal" type="cylinder" size="0.06 0.001" '
                 f'pos="{GOAL[0]} {GOAL[1]} {TOP + 0.001}" rgba="0 1 0 .4" contype="0" '
                 'conaffinity="0"/>'
                 f'<geom name="mark" type="box" size="{dx} {dy} 0.001" '
                 f'pos="{MARK[0]} {MARK[1]} 0.001" rgba="1 1 0 .3" contype="0" conaffinity="0"/>')
        handle_y = START_Y - dy - 0.025
        robots = [(MARK[0], handle_y - PUSH_FWD, math.pi / 2), (0.0, 0.0, 0.0)]
        return world_xml(self.name, robots, trolley + bottle, statics=table)

    def grasp_geoms(self) -> list[list[str]]:
        return [["push_handle"], ["bottle"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        m = env.model
        shift = np.array([rng.uniform(-0.10, 0.10), rng.uniform(-0.30, 0.08)])
        for j in ("trolley", "object"):
            adr = m.jnt_qposadr[m.joint(j).id]
            env.data.qpos[adr:adr + 2] += shift
        env.data.qpos[env.qadr[0, :2]] += shift  # robot 0 starts behind the handle
        env.goal = np.array([GOAL[0] + rng.uniform(-0.04, 0.04),
                             GOAL[1] + rng.uniform(-0.04, 0.04), TOP])
        env.model.geom_pos[env.model.geom("goal").id][:2] = env.goal[:2]

    def robot_goal(self, env, i: int) -> np.ndarray:
        return np.array([MARK[0], MARK[1], 0.0]) if i == 0 else env.goal

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        d = env.data
        cart = d.xpos[env.extras[0]]
        p1 = bool(np.linalg.norm(cart[:2] - MARK) <= 0.35)
        bottle = d.xpos[env.obj]
        p2 = bool(env.holds()[1] and bottle[2] - env.obj_z0 >= 0.10)
        v, w = env.obj_speed()
        off = np.abs(bottle[:2] - env.goal[:2])
        p3 = bool(not env.holds().any() and (off <= 0.06).all() and env.obj_tilt_deg() <= 15
                  and v < 0.05 and w < 0.15 and abs(bottle[2] - (TOP + BOTTLE_H)) < 0.02)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return (Pusher if i == 0 else Server)(rng, noise)


class Pusher(ArmOperator):
    """reach the trolley's handle -> grasp -> push it to the mark -> release -> back off."""

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grasp_pt = s.handle + np.array([0, 0, self.dz])
        grip = self.grasp_at(s, grasp_pt, PUSH_FWD, "push")
        if self.stage == "push":
            grip = 1.0
            err = s.goal[:2] - s.extras[0][:2]
            self.tow(s, err, 0.3 * self.speed, 1.0, grasp_pt)  # the bottle rides loose
            if np.linalg.norm(err) < 0.02 and self._ready(0.5):
                self._go("release")
        self.let_go(s, base_back=0.15)
        return self.out(grip)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "retreat" if np.linalg.norm(s.goal[:2] - s.extras[0][:2]) < 0.05 else "reach"
        return "push"


class Server(Taker):
    """wait for the trolley to stop at the mark -> reach the bottle -> grasp -> lift ->
    carry it over the table goal -> lower -> release -> retreat."""

    after_grasp = "lift"

    def _offered(self, s: Sensing) -> bool:
        return bool(np.linalg.norm(s.extras[0][:2] - MARK) < 0.03)

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        if self.stage == "lift":
            self.t_stage += dt
            self.lift = min(0.22, self.lift + 0.2 * self.speed * dt)
            if self.lift >= 0.22 and s.obj_lift > 0.10 and self._ready(0.2):
                self._go("carry")
            return self.out(1.0)
        return super().act(s, dt)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        return "carry" if s.obj_lift > 0.10 else "lift"


# -- the G1 version ------------------------------------------------------------------------------
G1_TOP = 0.45  # deck and table top: the basket's bar then sits at a G1's palm height
G1_DECK = (0.22, 0.25)  # the trolley deck's half sizes (m)
G1_BASKET = (0.12, 0.17, 0.08)  # the served basket's half sizes (Handover's, on the G1)
G1_BASKET_BAR = 0.28  # its bar above its centre
G1_PUSH_Z = 0.90  # the trolley's push bar: a G1's palm height
G1_MARK = np.array([0.75, -0.45])  # where the trolley's centre parks
G1_GOAL = np.array([0.75, 0.45])  # the basket's place on the table
G1_START_Y = -1.30  # the trolley's start (before randomization)


class CartServiceG1(CartService):
    """CartService on G1s: robot 0 pinches the trolley's push bar in its right hand and
    pushes it to the parking mark; robot 1 pinches the bar over the basket on the deck,
    lifts it off, steps sideways until it hangs over the table's goal and sets it down."""

    g1_hands = ("right",)  # each G1 here holds with its right hand alone

    def __init__(self) -> None:
        super().__init__()
        self.embodiment = "g1"
        self.demo_perturb = 0.25
        self.adaptation = (
            "A 6 kg wheeled trolley (deck at 0.45 m) with a horizontal push bar across its "
            "back at 0.9 m, and on its deck a 0.6 kg basket (24 x 34 x 16 cm) with a bar "
            "handle 28 cm over its centre; the pusher pinches the push bar in its right hand "
            "(fingers over and in front, thumb behind) and pushes, the server pinches the "
            "basket's bar, lifts it off the deck, steps sideways to the table and sets it "
            "down on the goal. Every phase is done by one robot, as in the paper.")

    def xml(self) -> str:
        dx, dy = G1_DECK
        wheel = ('type="sphere" size="0.03" mass="0.2" rgba=".1 .1 .1 1" friction="0.05 0 0" '
                 'priority="1"')
        leg = (G1_TOP - 0.08) / 2
        legs = "".join(
            f'<geom type="box" size="0.015 0.015 {leg:.3f}" pos="{sx * (dx - 0.03):.3f} '
            f'{sy * (dy - 0.03):.3f} {-leg - 0.02:.3f}" mass="0.3" rgba=".6 .6 .6 1"/>'
            f'<geom name="wheel{k}" {wheel} pos="{sx * (dx - 0.03):.3f} '
            f'{sy * (dy - 0.03):.3f} {-(G1_TOP - 0.03):.3f}"/>'
            for k, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))))
        post = (G1_PUSH_Z - G1_TOP) / 2
        push = (f'<geom name="push_handle" type="capsule" size="0.013" fromto="-0.12 '
                f'{-dy - 0.03} {G1_PUSH_Z - G1_TOP} 0.12 {-dy - 0.03} {G1_PUSH_Z - G1_TOP}" '
                f'mass="0.1" rgba=".9 .9 .9 1" friction="1.5 0.02 0.002" condim="4"/>'
                + "".join(f'<geom type="box" size="0.01 0.01 {post:.3f}" pos="{e * 0.11} '
                          f'{-dy - 0.03} {post:.3f}" mass="0.1" rgba=".9 .9 .9 1"/>'
                          for e in (-1, 1))
                + f'<site name="grip0" pos="0 {-dy - 0.03} {G1_PUSH_Z - G1_TOP}" '
                'size="0.01"/>')
        trolley = (f'<body name="trolley" pos="{G1_MARK[0]} {G1_START_Y} {G1_TOP}">'
                   '<freejoint name="trolley"/>'
                   f'<geom name="deck" type="box" size="{dx} {dy} 0.02" pos="0 0 -0.02" '
                   f'mass="4" rgba=".7 .5 .3 1"/>{legs}{push}</body>')
        hx, hy, hz = G1_BASKET
        basket = (f'<body name="object" pos="{G1_MARK[0]} {G1_START_Y} {G1_TOP + hz + 0.001}">'
                  '<freejoint name="object"/>'
                  f'<geom name="basket" type="box" size="{hx} {hy} {hz}" mass="0.45" '
                  'rgba=".3 .1 .4 1"/>'
                  f'<geom name="bar" type="capsule" size="0.013" fromto="0 {-hy} '
                  f'{G1_BASKET_BAR} 0 {hy} {G1_BASKET_BAR}" mass="0.05" rgba=".9 .9 .9 1" '
                  'friction="1.5 0.02 0.002" condim="4"/>'
                  + "".join(f'<geom type="box" size="0.01 0.01 '
                            f'{(G1_BASKET_BAR - hz) / 2:.4f}" pos="0 {e * hy:.3f} '
                            f'{(G1_BASKET_BAR + hz) / 2:.4f}" mass="0.05" rgba=".9 .9 .9 1"/>'
                            for e in (-1, 1))
                  + f'<site name="grip1" pos="0 0 {G1_BASKET_BAR}" size="0.01"/></body>')
        table = (f'<geom name="table" type="box" size="0.30 0.30 {G1_TOP / 2}" '
                 f'pos="{G1_GOAL[0] + 0.1} {G1_GOAL[1] + 0.1} {G1_TOP / 2}" '
                 'rgba=".5 .4 .3 1"/>'
                 f'<geom name="goal" type="cylinder" size="0.06 0.001" '
                 f'pos="{G1_GOAL[0]} {G1_GOAL[1]} {G1_TOP + 0.001}" rgba="0 1 0 .4" '
                 'contype="0" conaffinity="0"/>'
                 f'<geom name="mark" type="box" size="{dx} {dy} 0.001" '
                 f'pos="{G1_MARK[0]} {G1_MARK[1]} 0.001" rgba="1 1 0 .3" contype="0" '
                 'conaffinity="0"/>')
        bar_y = G1_START_Y - dy - 0.03
        robots = [(G1_MARK[0] + 0.07, bar_y - 0.40 - 0.25, math.pi / 2), (0.0, 0.0, 0.0)]
        return world_xml(self.name, robots, trolley + basket, statics=table, embodiment="g1")

    def grasp_geoms(self) -> list[list[str]]:
        return [["push_handle"], ["bar"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        m = env.model
        shift = np.array([rng.uniform(-0.08, 0.08), rng.uniform(-0.25, 0.08)])
        for j in ("trolley", "object"):
            adr = m.jnt_qposadr[m.joint(j).id]
            env.data.qpos[adr:adr + 2] += shift
        env.data.qpos[env.qadr[0, :2]] += shift  # robot 0 starts behind the push bar
        env.goal = np.array([G1_GOAL[0] + rng.uniform(-0.04, 0.04),
                             G1_GOAL[1] + rng.uniform(-0.04, 0.04), G1_TOP])
        env.model.geom_pos[env.model.geom("goal").id][:2] = env.goal[:2]

    def robot_goal(self, env, i: int) -> np.ndarray:
        return np.array([G1_MARK[0], G1_MARK[1], 0.0]) if i == 0 else env.goal

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        d = env.data
        cart = d.xpos[env.extras[0]]
        p1 = bool(np.linalg.norm(cart[:2] - G1_MARK) <= 0.35)
        basket = d.xpos[env.obj]
        p2 = bool(env.holds()[1] and basket[2] - env.obj_z0 >= 0.10)
        v, w = env.obj_speed()
        off = np.abs(basket[:2] - env.goal[:2])
        p3 = bool(not env.holds().any() and (off <= 0.06).all() and env.obj_tilt_deg() <= 15
                  and v < 0.05 and w < 0.15 and abs(basket[2] - (G1_TOP + G1_BASKET[2])) < 0.02)
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        from ..g1_operators import G1Pusher, G1Server

        if i == 0:
            return G1Pusher(rng, noise, env.model_path)
        ex = G1Server(rng, noise, env.model_path)
        ex.parked_at = G1_MARK
        return ex
