"""MJCF snippets for the open containers the tasks use (cups, beakers, tubs, bins)."""

from __future__ import annotations

import math

FRICTION = 'friction="1.5 0.02 0.002" condim="4"'


def hollow_cylinder(name: str, r: float, half_h: float, wall: float, mass: float,
                    rgba: str, n: int = 8, z: float = 0.0) -> tuple[str, list[str]]:
    """Return (geoms, wall geom names) of an open-top cylinder centred at height `z`: a
    bottom disc and `n` wall boxes around it (one faces +y and one -y, where a parallel
    gripper closes on it)."""
    half_w = r * math.tan(math.pi / n) + 0.001
    m = mass / (n + 1)
    geoms = [f'<geom name="{name}_bottom" type="cylinder" size="{r:.4f} {wall / 2:.4f}" '
             f'pos="0 0 {z - half_h + wall / 2:.4f}" mass="{m:.4f}" rgba="{rgba}" {FRICTION}/>']
    names = []
    for k in range(n):
        th = 2 * math.pi * k / n
        c = r - wall / 2
        names.append(f"{name}_wall{k}")
        geoms.append(f'<geom name="{name}_wall{k}" type="box" '
                     f'size="{wall / 2:.4f} {half_w:.4f} {half_h:.4f}" '
                     f'pos="{c * math.cos(th):.4f} {c * math.sin(th):.4f} {z:.4f}" '
                     f'euler="0 0 {th:.5f}" mass="{m:.4f}" rgba="{rgba}" {FRICTION}/>')
    return "".join(geoms), names


def open_box(name: str, half: tuple[float, float, float], wall: float, mass: float,
             rgba: str, z: float = 0.0, lip: float | None = None) -> tuple[str, list[str]]:
    """Return (geoms, geom names) of an open-top box (a tub, a bin, a crate) centred at
    height `z` with outer half sizes `half`; `lip` makes the +y wall that low (a pouring
    edge)."""
    hx, hy, hz = half
    m = mass / 5
    w = wall / 2
    parts = [("bottom", (hx, hy, w), (0, 0, z - hz + w)),
             ("xp", (w, hy, hz), (hx - w, 0, z)), ("xn", (w, hy, hz), (-hx + w, 0, z)),
             ("yp", (hx - wall, w, hz), (0, hy - w, z)),
             ("yn", (hx - wall, w, hz), (0, -hy + w, z))]
    geoms, names = [], []
    if lip is not None:
        parts[3] = ("yp", (hx - wall, w, lip / 2), (0, hy - w, z - hz + lip / 2))
    for part, size, pos in parts:
        names.append(f"{name}_{part}")
        geoms.append(f'<geom name="{name}_{part}" type="box" size="{size[0]:.4f} {size[1]:.4f} '
                     f'{size[2]:.4f}" pos="{pos[0]:.4f} {pos[1]:.4f} {pos[2]:.4f}" '
                     f'mass="{m:.4f}" rgba="{rgba}" {FRICTION}/>')
    return "".join(geoms), names
