"""Inverse kinematics of the G1's arms: palm targets (position and orientation, in the robot's
own frame) to the seven arm joints of one side, by damped least squares on MuJoCo's own
site Jacobians.

Why not a library such as mink: mink installs the `mujoco` distribution, which would replace
the pinned `mujoco-core` build the CoBot's golden results are computed with, and it solves a
quadratic program per step; a 7-joint arm reaching one palm pose needs neither. The solver
works on a model of one robot alone (its pelvis at the origin, facing +x), warm-started from
the previous solution, a few iterations per control step.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from .g1 import ARM, PELVIS_HEIGHT, robot_spec

ROT_WEIGHT = 0.3  # metres per radian: how much a palm's orientation error counts
DAMPING = 0.05


class ArmIK:
    """One side's arm (`left` or `right`) of a G1 built from the model file `path`."""

    def __init__(self, path: Path, side: str) -> None:
        self.model = _solo(path)
        self.data = mujoco.MjData(self.model)
        m = self.model
        joints = [m.joint(f"{side}_{j}_joint").id for j in ARM]
        self.qadr = m.jnt_qposadr[joints]
        self.dadr = m.jnt_dofadr[joints]
        self.lo, self.hi = m.jnt_range[joints, 0].copy(), m.jnt_range[joints, 1].copy()
        self.site = m.site(f"{side}_palm").id
        self._jp = np.zeros((3, m.nv))
        self._jr = np.zeros((3, m.nv))

    def solve(self, q0: np.ndarray, pos: np.ndarray, mat: np.ndarray, waist: np.ndarray,
              iters: int = 4) -> tuple[np.ndarray, float]:
        """Return (the seven joint angles, the remaining position error in m) that bring the
        palm to `pos` (robot frame: x forward, y left, z up from the floor) with the
        orientation `mat` (3x3, the wrist yaw link's axes in the robot frame), starting from
        `q0`, with the waist at `waist` (yaw, roll, pitch)."""
        m, d = self.model, self.data
        q = np.array(q0, dtype=float)
        d.qpos[:3] = waist
        target = np.zeros(4)
        mujoco.mju_mat2Quat(target, np.asarray(mat, dtype=float).ravel())
        now, err = np.zeros(4), np.zeros(6)
        pos = np.asarray(pos, dtype=float)
        for _ in range(iters):
            d.qpos[self.qadr] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            err[:3] = pos - d.site_xpos[self.site]
            mujoco.mju_mat2Quat(now, d.site_xmat[self.site])
            mujoco.mju_subQuat(err[3:], target, now)  # in the palm's frame
            err[3:] = ROT_WEIGHT * (d.site_xmat[self.site].reshape(3, 3) @ err[3:])
            mujoco.mj_jacSite(m, d, self._jp, self._jr, self.site)
            jac = np.vstack([self._jp[:, self.dadr], ROT_WEIGHT * self._jr[:, self.dadr]])
            q = q + jac.T @ np.linalg.solve(jac @ jac.T + DAMPING ** 2 * np.eye(6), err)
            q = np.minimum(np.maximum(q, self.lo), self.hi)
        d.qpos[self.qadr] = q
        mujoco.mj_kinematics(m, d)
        return q, float(np.linalg.norm(pos - d.site_xpos[self.site]))


_SOLO: dict[str, mujoco.MjModel] = {}


def _solo(path: Path) -> mujoco.MjModel:
    """Return the one-robot model of `path` with the base joints' and waist's qpos first
    (base x, y, yaw zeroed: the robot's own frame)."""
    key = str(Path(path).resolve())
    if key not in _SOLO:
        spec = robot_spec(path)
        for name in ("base_x", "base_y", "base_yaw"):
            spec.delete(spec.joint(name))
            spec.delete(spec.actuator(name))
        spec.body("pelvis").pos = [0.0, 0.0, PELVIS_HEIGHT]
        _SOLO[key] = spec.compile()
    return _SOLO[key]
