"""The Unitree G1 humanoid with Dex3-1 hands, as the CoHuB paper controls it: legs removed and
the pelvis on a planar base (x, y, yaw) driven by force-limited velocity servos, the upper
body (waist 3 + arms 14 + hands 14 joints) on position servos.

The robot's model files are third-party data (Unitree's BSD-3 `g1_29dof_with_hand.xml` and its
meshes, or MuJoCo Menagerie's `unitree_g1/g1_with_hands.xml`: the same joint and body names);
they are read from where the user's machine has them, never shipped (`resolve_model`). Each
robot is built with `MjSpec` at load (`robot_spec`) and attached to a scene under its prefix
(`add_robots`); a robot never collides with itself, and partners collide with each other and
with the world (each robot has its own contact bit).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.errors import ConfigError

ENV_VAR = "COORDBENCH_G1_MODEL"
MENAGERIE_FILE = Path("unitree_g1") / "g1_with_hands.xml"
UNITREE_FILE = "g1_29dof_with_hand.xml"
LEGS = ("left_hip_pitch_link", "right_hip_pitch_link")  # each leg's root body
BASE_JOINTS = ("base_x", "base_y", "base_yaw")
PELVIS_HEIGHT = 0.793  # the pelvis above the floor in the G1's standing pose (m)
BASE_KV = 400.0  # velocity servo gain of the planar base (N s/m)
BASE_FORCE = 300.0  # its force limit (N, N m): partners can push and drag each other
# position servo gain of the upper body's joints: Menagerie's (kp 500); with 150 a loaded arm
# sagged 6 cm below its target
UPPER_KP = 500.0
# each palm's centre on its surface, in the wrist yaw link's frame (x along the fingers; the
# palm of the left hand faces -y, the right +y): from the palm mesh's bounding box
PALM_SITE = {"left": (0.10, -0.04, 0.0), "right": (0.10, 0.04, 0.0)}
HEAD_CAMERA = {"pos": [0.10, 0.0, 0.45], "xyaxes": [0, -1, 0, 0.707, 0, 0.707]}
ARM = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll",
       "wrist_pitch", "wrist_yaw")
HAND = ("thumb_0", "thumb_1", "thumb_2", "middle_0", "middle_1", "index_0", "index_1")
LEG = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
WAIST = ("waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint")
UPPER_JOINTS = (*WAIST,
                *(f"{side}_{j}_joint" for side in ("left", "right") for j in ARM),
                *(f"{side}_hand_{j}_joint" for side in ("left", "right") for j in HAND))
G1_JOINTS = (*(f"{side}_{j}_joint" for side in ("left", "right") for j in LEG), *UPPER_JOINTS)


def resolve_model(path: str | Path | None = None) -> Path:
    """Return the G1 model file to load: `path` (`--g1-model`), else $COORDBENCH_G1_MODEL,
    else MuJoCo Menagerie's `unitree_g1/g1_with_hands.xml` under $MENAGERIE_ROOT or from the
    `mujoco-menagerie` package; ConfigError (one line naming every way) if none is found."""
    given = path or os.environ.get(ENV_VAR)
    if given:
        p = Path(given).expanduser()
        if p.is_dir():
            found = [c for c in (p / UNITREE_FILE, p / MENAGERIE_FILE, p / MENAGERIE_FILE.name)
                     if c.is_file()]
            if not found:
                raise ConfigError(f"G1 model folder {p} holds no {UNITREE_FILE} or "
                                  f"{MENAGERIE_FILE}")
            return found[0]
        if not p.is_file():
            raise ConfigError(f"G1 model file {p} does not exist")
        return p
    root = os.environ.get("MENAGERIE_ROOT")
    if root and (Path(root) / MENAGERIE_FILE).is_file():
        return Path(root) / MENAGERIE_FILE
    packaged = _menagerie_package()
    if packaged is not None:
        return packaged
    raise ConfigError("no Unitree G1 model: give --g1-model PATH (Unitree's "
                      f"{UNITREE_FILE} with its meshes/) or set {ENV_VAR}, or install "
                      "mujoco-menagerie (pip install mujoco-menagerie; it fetches "
                      "unitree_g1/g1_with_hands.xml on first use, or set MENAGERIE_ROOT to a "
                      "Menagerie checkout)")


def _menagerie_package() -> Path | None:
    """Return the Menagerie G1 file the `mujoco-menagerie` package has on disk (None where
    the package is not installed or has not fetched it)."""
    import importlib.util

    if importlib.util.find_spec("mujoco_menagerie") is None:
        return None
    try:
        import mujoco_menagerie as mm  # type: ignore[import-not-found]

        robot = mm.get("unitree_g1")
        for attr in ("path", "root", "directory"):
            folder = getattr(robot, attr, None)
            if folder is not None and (Path(folder) / MENAGERIE_FILE.name).is_file():
                return Path(folder) / MENAGERIE_FILE.name
    except Exception:  # noqa: BLE001 - an offline fetch or another layout: not found here
        return None
    return None


@functools.cache
def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def model_sha256(path: Path) -> str:
    """Return the sha256 of the model file (recorded in every G1 trajectory header; read
    once a process)."""
    return _sha256(str(Path(path).resolve()))


def require_model(path: str | Path | None = None) -> Path:
    """Return the G1 model file `resolve_model` finds, checked once a process to be a G1
    with Dex3-1 hands (ConfigError, one line, otherwise)."""
    found = resolve_model(path)
    key = str(Path(found).resolve())
    if key not in _CHECKED:
        check_model(found)
        _CHECKED.add(key)
    return found


_CHECKED: set[str] = set()


def check_model(path: Path) -> Any:
    """Return the file's MjSpec; ConfigError (one line) for a file MuJoCo cannot read, or one
    that is not a G1 with Dex3-1 hands (naming the joints it lacks)."""
    import mujoco

    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - MuJoCo raises ValueError and others
        raise ConfigError(f"G1 model {path} cannot be read: {str(e).splitlines()[0][:200]}"
                          ) from None
    names = {j.name for j in spec.joints}
    missing = [j for j in G1_JOINTS if j not in names]
    if missing:
        raise ConfigError(f"{path} is not a Unitree G1 with Dex3-1 hands: it lacks "
                          f"{len(missing)} joint(s), e.g. {', '.join(missing[:5])}")
    return spec


def robot_spec(path: Path) -> Any:
    """Return one G1 as the paper controls it (see the module docstring), as an MjSpec whose
    root body is the pelvis on a planar base."""
    spec = check_model(path)
    _collide_with_boxes(spec, path)
    # meshes by absolute path: a scene of robots compiles wherever its files are
    folder = Path(path).resolve().parent / (spec.meshdir or "")
    for mesh in spec.meshes:
        if mesh.file and not Path(mesh.file).is_absolute():
            mesh.file = str(folder / mesh.file)
    spec.meshdir = ""
    for leg in LEGS:
        spec.delete(spec.body(leg))
    for actuator in list(spec.actuators):
        spec.delete(actuator)
    for key in list(spec.keys):
        spec.delete(key)  # a keyframe of the whole body no longer fits
    pelvis = spec.body("pelvis")
    for joint in list(pelvis.joints):
        spec.delete(joint)  # the floating base
    pelvis.pos = [0.0, 0.0, PELVIS_HEIGHT]
    import mujoco

    slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
    for name, kind, axis in (("base_x", slide, (1, 0, 0)), ("base_y", slide, (0, 1, 0)),
                             ("base_yaw", hinge, (0, 0, 1))):
        pelvis.add_joint(name=name, type=kind, axis=list(axis), damping=5.0)
        act = spec.add_actuator(name=name, target=name,
                                trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_velocity(kv=BASE_KV)
        act.forcelimited = True
        act.forcerange = [-BASE_FORCE, BASE_FORCE]
    for name in UPPER_JOINTS:
        joint = spec.joint(name)
        act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=UPPER_KP, kv=0.2 * UPPER_KP ** 0.5)
        if joint.actfrcrange[1] > joint.actfrcrange[0]:
            act.forcelimited = True
            act.forcerange = list(joint.actfrcrange)
    for body in spec.bodies:
        body.gravcomp = 1.0  # the whole-body controller holds the body up against gravity
    for side, pos in PALM_SITE.items():
        spec.body(f"{side}_wrist_yaw_link").add_site(name=f"{side}_palm", pos=list(pos),
                                                     size=[0.01, 0.01, 0.01])
    spec.body("torso_link").add_camera(name="ego", pos=HEAD_CAMERA["pos"],
                                       xyaxes=HEAD_CAMERA["xyaxes"], fovy=90)
    return spec


def is_hand(body: str) -> bool:
    """Return True for a body of a hand: the wrist yaw link (which carries the palm) and the
    finger links."""
    return body.endswith("wrist_yaw_link") or "_hand_" in body


def _collide_with_boxes(spec: Any, path: Path) -> None:
    """Replace every colliding mesh outside the hands with the box that bounds it: torso and
    arm meshes cost time in every contact test, while the palms and fingers keep their
    meshes, where the shape of the grasp matters."""
    import mujoco

    key = str(Path(path).resolve())
    boxes = _BOXES.get(key)
    if boxes is None:
        model = spec.copy().compile()
        boxes = []
        for g in range(model.ngeom):
            body = model.body(model.geom_bodyid[g]).name
            if (model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and model.geom_contype[g]
                    and not is_hand(body)):
                mat = np.zeros(9)
                mujoco.mju_quat2Mat(mat, model.geom_quat[g])
                centre = model.geom_pos[g] + mat.reshape(3, 3) @ model.geom_aabb[g, :3]
                boxes.append((body, centre.tolist(), model.geom_quat[g].tolist(),
                              model.geom_aabb[g, 3:].tolist()))
        _BOXES[key] = boxes
    for geom in list(spec.geoms):
        if (geom.type == mujoco.mjtGeom.mjGEOM_MESH and (geom.contype or geom.conaffinity)
                and not is_hand(geom.parent.name)):
            spec.delete(geom)
    for body, pos, quat, half in boxes:
        spec.body(body).add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, pos=pos, quat=quat,
                                 size=half, rgba=[0, 0, 0, 0], density=0)


_BOXES: dict[str, list] = {}  # model file -> its collision boxes (one compile a file)


def add_robots(scene: Any, path: Path, poses: Sequence[tuple[float, float, float]]) -> list[str]:
    """Attach one G1 a pose (x, y, yaw) to `scene` (an MjSpec), robot k under prefix
    `robotK/`, each with its own contact bit (no self-collision, partners and the world
    collide); return the prefixes. The base slides move along the world's axes and the yaw
    joint holds the world heading (its reference is the pose's yaw), as the CoBot's do."""
    import math

    prefixes = []
    for k, (x, y, yaw) in enumerate(poses):
        robot = _robot_copy(path)
        bit = 1 << (k + 1)
        for geom in robot.geoms:
            if geom.contype or geom.conaffinity:
                geom.contype, geom.conaffinity = bit, 1 | (0x7FFFFFFF & ~bit)
        pelvis = robot.body("pelvis")
        pelvis.quat = [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]
        # joint axes are in the pelvis's frame, which the pose turns: turned back, the
        # slides move along the world's x and y
        c, s = math.cos(yaw), math.sin(yaw)
        robot.joint("base_x").axis = [c, -s, 0.0]
        robot.joint("base_y").axis = [s, c, 0.0]
        robot.joint("base_yaw").ref = yaw
        frame = scene.worldbody.add_frame(pos=[x, y, 0.0])
        frame.attach_body(pelvis, f"robot{k}/", "")
        prefixes.append(f"robot{k}/")
    return prefixes


def _robot_copy(path: Path) -> Any:
    """Return a fresh copy of the robot's MjSpec (built once a file: reading the file and
    boxing its meshes cost more than the copy)."""
    key = str(Path(path).resolve())
    if key not in _ROBOTS:
        _ROBOTS[key] = robot_spec(path)
    return _ROBOTS[key].copy()


_ROBOTS: dict[str, Any] = {}
