"""MoveHouse's door as its robots see it: where the hinge is, how far the door is open, and
a point turned with the leaf (shared by the task and both embodiments' door experts)."""

from __future__ import annotations

import math

import numpy as np

HINGE = np.array([0.0, 0.5])  # the door's hinge; the wall is the plane x = 0
OPEN = 1.45  # rad, how far the door must be open
OPEN_TO = 1.55  # the leaf meets the wall at about 1.57


def rot(theta: float, p: np.ndarray) -> np.ndarray:
    """Return 2-D vector p turned by the door's opening angle theta (clockwise seen from
    above: the door opens toward -x)."""
    c, s = math.cos(theta), math.sin(theta)
    return np.array([c * p[0] + s * p[1], -s * p[0] + c * p[1]])


def door_angle(edge: np.ndarray) -> float:
    """Return the door's opening angle from where its free edge is (world)."""
    d = edge[:2] - HINGE
    return math.atan2(-d[0], -d[1])
