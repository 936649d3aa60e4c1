"""CoPouring: two robots lift a tub of apples by its end handles, step sideways over a crate
and tip the tub together about the line between their hands until every apple has rolled
into the crate. Low base movement, high physical coupling: one robot cannot tip the tub
alone, and a partner that rolls its wrist out of step twists the tub in both grips."""

from __future__ import annotations

import math

import numpy as np

from ..env import Sensing
from ..operators import ArmOperator
from ..scene import world_xml
from .base import Phase, Task
from .shapes import FRICTION, open_box

TUB = (0.35, 0.15, 0.05)  # outer half sizes
STACK_H = 0.30
TUB_Z = STACK_H + TUB[2] + 0.001
CRATE = (0.35, 0.20, 0.10)
CRATE_Y = 0.52  # crate centre, sideways from the tub
N_APPLES = 4
APPLE_R = 0.03
HANDLE_X = TUB[0] + 0.04  # handle centre
GRIP_X = HANDLE_X + 0.012
STANDOFF = 0.62
POUR_FROM = 0.07  # the tub's centre stops this far short of the crate's (the rim overhangs)
MAX_TIP = 1.4  # rad


class CoPouring(Task):
    """Robot 0 at -x facing +x, robot 1 at +x facing -x; the crate is at +y."""

    def __init__(self) -> None:
        super().__init__(
            name="CoPouring", n_robots=2, movement="low", coupling="high", limit=1000,
            phases=(Phase("lift", "both hold the tub >= 3 cm above its stack", True),
                    Phase("tip", "both hold it tilted >= 25 deg", True),
                    Phase("pour", "all apples inside the crate, both still holding the tub",
                          True)),
            instructions={"joint": "Pour the apples from the tub into the crate together.",
                          "robot0": "Hold the tub's left handle, lift it with your partner, "
                                    "bring it over the crate and tip it with your partner.",
                          "robot1": "Hold the tub's right handle, lift it with your partner, "
                                    "bring it over the crate and tip it with your partner."},
            adaptation="A 0.7 m, 1 kg tub with end handles, a low pouring edge on one long "
                       "side (a wrist rolls < 100 deg) and four 6 cm apples; the crate "
                       "stands beside the tub's stack, so the robots step 0.45 m sideways "
                       "before tipping; the tub is tipped by rolling both wrists about the "
                       "line between the handles (each robot leads the tilt it sees by 0.25 "
                       "rad, so neither outruns the other).",
            extra_bodies=tuple(f"apple{k}" for k in range(N_APPLES)) + ("crate",))

    def xml(self) -> str:
        # a low pouring edge on the crate side: apples roll over it at ~60 deg of tilt
        tub, _ = open_box("tub", TUB, 0.012, 1.0, ".6 .45 .25 1", lip=0.012 + 0.015)
        handles = "".join(
            f'<geom name="handle{k}" type="box" size="0.04 0.02 0.04" '
            f'pos="{sx * HANDLE_X} 0 0" mass="0.05" rgba=".9 .9 .9 1" {FRICTION}/>'
            f'<site name="grip{k}" pos="{sx * GRIP_X} 0 0" size="0.01"/>'
            for k, sx in enumerate((-1, 1)))
        objects = f'<body name="object" pos="0 0 {TUB_Z}"><freejoint name="object"/>{tub}' \
                  f'{handles}</body>'
        floor_z = TUB_Z - TUB[2] + 0.012 + APPLE_R + 0.001
        for k in range(N_APPLES):
            x = (k - (N_APPLES - 1) / 2) * 0.13
            objects += (f'<body name="apple{k}" pos="{x:.3f} 0 {floor_z:.4f}">'
                        f'<freejoint name="apple{k}"/><geom type="sphere" size="{APPLE_R}" '
                        'mass="0.1" rgba=".8 .1 .1 1" condim="6" '
                        'friction="0.8 0.01 0.002"/></body>')
        crate, _ = open_box("crate", CRATE, 0.015, 3.0, ".4 .5 .3 1")
        objects += f'<body name="crate" pos="0 {CRATE_Y} {CRATE[2]}">{crate}</body>'
        statics = (f'<geom name="stack" type="box" size="0.30 0.13 {STACK_H / 2}" '
                   f'pos="0 0 {STACK_H / 2}" rgba=".5 .4 .3 1"/>'
                   '<geom name="goal" type="sphere" size="0.005" pos="0 0 0" rgba="0 1 0 0" '
                   'contype="0" conaffinity="0"/>')
        r = GRIP_X + STANDOFF
        return world_xml(self.name, [(-r, 0.0, 0.0), (r, 0.0, math.pi)], objects,
                         statics=statics)

    def grasp_geoms(self) -> list[list[str]]:
        return [["handle0"], ["handle1"]]

    def reset(self, env, rng: np.random.Generator) -> None:
        m, q = env.model, env.data.qpos
        shift = np.array([rng.uniform(-0.02, 0.02), rng.uniform(-0.01, 0.01)])
        for name in ["object"] + [f"apple{k}" for k in range(N_APPLES)]:
            adr = m.jnt_qposadr[m.joint(name).id]
            q[adr:adr + 2] += shift + (rng.uniform(-0.008, 0.008, 2) if name != "object" else 0)
        crate = m.body("crate").id
        m.body_pos[crate][:2] = [rng.uniform(-0.06, 0.06), CRATE_Y + rng.uniform(-0.005, 0.005)]
        env.goal = np.array([m.body_pos[crate][0], m.body_pos[crate][1], CRATE[2]])

    def apples_in_crate(self, env) -> bool:
        """Return True if every apple's centre lies inside the crate's inner volume."""
        rel = env.data.xpos[env.extras[:N_APPLES]] - env.goal
        inside = (np.abs(rel[:, 0]) < CRATE[0] - 0.015) & (np.abs(rel[:, 1]) < CRATE[1] - 0.015)
        return bool((inside & (rel[:, 2] < CRATE[2]) & (rel[:, 2] > -CRATE[2])).all())

    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        holds = env.holds()
        lift = env.data.xpos[env.obj][2] - env.obj_z0
        p1 = bool(holds.all() and lift >= 0.03)
        p2 = bool(holds.all() and env.obj_tilt_deg() >= 25)
        p3 = bool(holds.all() and self.apples_in_crate(env))
        return p1, p2, p3

    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        return CoPourer(rng, noise)


class CoPourer(ArmOperator):
    """reach -> grasp -> lift -> shift (sideways, over the crate) -> tip (roll the wrist to
    lead the tub's observed tilt) -> hold."""

    def __init__(self, rng: np.random.Generator, noise: float) -> None:
        super().__init__(rng, noise)
        self.roll = 0.0

    def act(self, s: Sensing, dt: float) -> np.ndarray:
        self.t_stage += dt
        grasp_pt = s.handle + np.array([0, 0, self.dz])
        grip = self.grasp_at(s, grasp_pt, STANDOFF, "lift")
        if self.stage in ("lift", "shift", "tip"):
            grip = 1.0
        if self.stage == "lift":
            self.lift = min(0.10, self.lift + 0.15 * self.speed * dt)
            if self.lift >= 0.10 and s.obj_lift > 0.07 and self._ready(0.3):
                self._go("shift")
        elif self.stage == "shift":  # the tub leads: servo it over the crate, keep the grip
            err = np.array([0.0, s.goal[1] - POUR_FROM - s.obj_pos[1]])
            v = np.clip(1.5 * err, -0.15 * self.speed, 0.15 * self.speed)
            rel = s.to_robot(s.base_xy + v)
            h = s.to_robot(grasp_pt)
            self.v = np.array([float(rel[0]) + 1.5 * (float(h[0]) - STANDOFF),
                               float(rel[1]) + 1.5 * float(h[1])])
            if abs(err[1]) < 0.01 and self._ready(0.5):
                self._go("tip")
        elif self.stage == "tip":
            side = math.copysign(1.0, float(s.to_robot(s.goal)[1] - s.to_robot(s.obj_pos)[1]))
            tilt = math.atan2(float(s.obj_up[1]), float(s.obj_up[2]))  # toward the crate (+y)
            self.roll = -side * min(MAX_TIP, max(0.0, tilt) + 0.25 * self.speed)
        return self.out(grip, roll=self.roll)

    def _resume_stage(self, s: Sensing) -> str:
        if not s.holding:
            return "reach"
        if s.obj_lift < 0.05:
            return "lift"
        return "tip" if abs(s.obj_pos[1] - (s.goal[1] - POUR_FROM)) < 0.02 else "shift"
