"""Physical states: drawn from the recorded poses, not re-simulated (running MuJoCo is not the
viewer's job). Since trajectory schema 1.5 an episode carries a `physical_poses` event: the
robots' and free bodies' poses at 10 Hz of simulated time. `states[k]` is recorded sample k
(control step `static.poses.steps[k]`), the slider's k-th position: each robot's base
(x, y, yaw), its hand's top-down position and height from the arm's joints, and every free
body's position, height and heading. The phase and coupling events are drawn with them.

Episodes recorded before 1.5 have no poses: their picture is the phase timeline alone, and
the replay note says why. Goal marks and static scenery (the peg, the chair, the crate) are
not drawn: the header does not record them, and only resetting the task in MuJoCo with the
header's seed would give them.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

import numpy as np

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import (
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    PhysicalPosesEvent,
    Trajectory,
)
from coordbench.envs.physical.robot import FINGER_CLOSED, L1, L2, SH_H, SH_X
from coordbench.errors import ConfigError, RunDirError
from coordbench.suites.physical.replay import (
    ROBOT_FIELDS,
    PhysicalPoses,
    no_poses_reason,
    recorded_poses,
)

from .common import Picture

_F = {name: i for i, name in enumerate(ROBOT_FIELDS)}
# half the side of a CoBot's square base (robot.robot_xml: box size 0.18): the picture draws
# bases to scale, so a partner pressed against another robot shows as touching
BASE_HALF = 0.18


def render_command(run: RunDir, traj: Trajectory) -> str:
    """Return the shell command that renders this episode's video from its recorded poses."""
    h = traj.header
    key = h.episode_id.rsplit("/", 1)[-1]
    return (f"coordbench physical render {shlex.quote(str(run.path))} --episode "
            f"{shlex.quote(h.episode_id)} --out {shlex.quote(f'{h.task_id}_{key}.mp4')}")


def _hand(robot: np.ndarray) -> tuple[float, float, float]:
    """Return robot's wrist position (world x, y and height) from its base and arm joints.

    The arm is planar in the base's forward direction (robot.robot_xml), so forward
    kinematics is two links; angles are positive upwards (the hinges' axis is -y)."""
    sh, el = robot[_F["shoulder"]], robot[_F["elbow"]]
    reach = SH_X + L1 * math.cos(sh) + L2 * math.cos(sh + el)
    height = SH_H + robot[_F["lift"]] + L1 * math.sin(sh) + L2 * math.sin(sh + el)
    yaw = robot[_F["yaw"]]
    return (robot[_F["x"]] + reach * math.cos(yaw), robot[_F["y"]] + reach * math.sin(yaw),
            height)


def _g1_hands(p: PhysicalPoses) -> np.ndarray:
    """Return (K, n, 4): each G1's right palm (world x, y, height) and its fingers' closing
    (0 open to 1 closed), by the arm's forward kinematics (the joints recorded, nothing
    simulated) on a one-robot model of the file the machine has; without one, the palm is
    drawn at the base (height 0, fingers open)."""
    import mujoco

    from coordbench.envs.physical.g1 import HAND, UPPER_JOINTS, resolve_model
    from coordbench.envs.physical.g1_ik import _solo

    try:
        model = _solo(resolve_model())
    except ConfigError:
        out = np.zeros((*p.robots.shape[:2], 4))
        out[..., :2] = p.robots[..., :2]
        return out
    data = mujoco.MjData(model)
    qadr = model.jnt_qposadr[[model.joint(j).id for j in UPPER_JOINTS]]
    site = model.site("right_palm").id
    fingers = [3 + UPPER_JOINTS.index(f"right_hand_{j}_joint") for j in HAND
               if j.startswith(("index", "middle"))]
    out = np.zeros((*p.robots.shape[:2], 4))
    for k in range(len(p)):
        for i, r in enumerate(p.robots[k]):
            data.qpos[qadr] = r[3:]
            mujoco.mj_kinematics(model, data)
            fx, fy, fz = data.site_xpos[site]
            c, sn = math.cos(r[2]), math.sin(r[2])
            out[k, i] = (r[0] + c * fx - sn * fy, r[1] + sn * fx + c * fy, fz,
                         min(1.0, float(np.mean(np.abs(r[fingers])))))
    return out


def _yaw(q: np.ndarray) -> float:
    """Return the heading (rad) of a body with quaternion (w, x, y, z)."""
    w, x, y, z = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _states(p: PhysicalPoses) -> tuple[list[dict[str, Any]], list[float]]:
    """Return one state per recorded sample (rounded to mm / mrad: far below what the
    picture shows, and it keeps the payload small) and the scene's extent
    [x0, x1, y0, y1] over the whole episode, so the picture does not jump while stepping."""
    states = []
    xs: list[float] = []
    ys: list[float] = []
    names = list(p.bodies)
    g1_hands = _g1_hands(p) if p.embodiment == "g1" else None
    for k in range(len(p)):
        robots = []
        for i, r in enumerate(p.robots[k]):
            if g1_hands is not None:
                hx, hy, hz, grip = g1_hands[k, i]
            else:
                hx, hy, hz = _hand(r)
                # the fingers' closing, 0 open to 1 closed (the slides overshoot their range
                # by a fraction of a millimetre under load)
                grip = min(1.0, max(0.0, (r[_F["finger_left"]] + r[_F["finger_right"]])
                                    / (2 * FINGER_CLOSED)))
            robots.append([round(float(v), 3) for v in
                           (r[_F["x"]], r[_F["y"]], r[_F["yaw"]], hx, hy, hz, grip)])
            xs += [r[_F["x"]], hx]
            ys += [r[_F["y"]], hy]
        bodies = []
        for name in names:
            b = p.bodies[name][k]
            bodies.append([round(float(b[0]), 3), round(float(b[1]), 3),
                           round(float(b[2]), 3), round(_yaw(b[3:]), 3)])
            xs.append(b[0])
            ys.append(b[1])
        states.append({"step": int(p.steps[k]), "robots": robots, "bodies": bodies,
                       "joints": {j: round(float(v[k]), 3) for j, v in p.joints.items()}})
    margin = BASE_HALF * 1.5 + 0.15
    extent = [round(float(min(xs)) - margin, 3), round(float(max(xs)) + margin, 3),
              round(float(min(ys)) - margin, 3), round(float(max(ys)) + margin, 3)]
    return states, extent


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the picture of a physical episode: `states[k]` the recorded poses of sample k
    (see the module docstring), `static` the phases, coupling events, sample steps and
    scene extent; or, for an episode without poses, the phase picture alone (no states,
    the phases indexed by control step) with the reason in `replay`."""
    h = traj.header
    p = h.params
    collab = list(p.get("collaborative") or [])
    until = int(p.get("until_phase", len(collab) or 3))
    phases = [{"phase": e.phase, "name": e.name, "t": e.t, "collaborative": e.collaborative}
              for e in traj.steps(PhysicalPhaseEvent)]
    coupling = [{"t": e.t, "kind": e.kind, "robots": e.robots, "value": e.value}
                for e in traj.steps(PhysicalCouplingEvent)]
    static: dict[str, Any] = {
        "phases": until, "start_phase": int(p.get("start_phase", 0)),
        "collaborative": collab, "control_dt": p.get("control_dt"),
        "latched": phases, "coupling": coupling, "robots": len(h.team), "poses": None,
        "render": None, "goals": None}
    if not traj.steps(PhysicalPosesEvent):
        return {"kind": "physical", "static": static, "states": [],
                "replay": {"available": False, "ok": True, "recorded": False,
                           "reason": f"no recorded poses ({no_poses_reason(h.schema_version)}):"
                                     " the picture shows the phase timeline only, and no video "
                                     "can be rendered"}}
    try:
        poses = recorded_poses(traj)
    except RunDirError as e:
        return {"kind": "physical", "static": static, "states": [],
                "replay": {"available": False, "ok": False, "recorded": True,
                           "reason": f"{e}; the picture shows the phase timeline only"}}
    states, extent = _states(poses)
    no_hands = ""
    if poses.embodiment == "g1":
        from coordbench.envs.physical.g1 import resolve_model

        try:
            resolve_model()
        except ConfigError:
            no_hands = ("; no G1 model file on this machine (--g1-model, COORDBENCH_G1_MODEL "
                        "or mujoco-menagerie): the palms are drawn at the bases")
    static["poses"] = {"steps": [int(s) for s in poses.steps], "every": poses.every,
                       "dt": poses.dt, "bodies": list(poses.bodies),
                       "joints": list(poses.joints), "extent": extent,
                       "base_half": BASE_HALF}
    static["render"] = render_command(run, traj)
    return {"kind": "physical", "static": static, "states": states,
            "replay": {"available": True, "ok": True, "recorded": True, "checked": len(poses),
                       "engine": "recorded poses (physical_poses)",
                       "reason": f"{len(poses)} pose samples recorded every {poses.every} "
                                 f"control steps ({1 / (poses.every * poses.dt):.0f} Hz), "
                                 "drawn as recorded, not re-simulated; goal marks and static "
                                 "scenery are not in the record and are not drawn" + no_hands}}
