"""Videos of physical episodes drawn from their recorded poses, without re-simulating.

The scene is rebuilt from the trajectory's task and seed (a reset places the seed's goal
marks, pegs and chairs; nothing is stepped), each recorded pose is applied in turn and drawn
with MuJoCo's headless renderer, and the frames are encoded as H.264 in MP4 with PyAV (the
FFmpeg libraries come inside its wheel: no system ffmpeg, no subprocess).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coordbench.core.atomic import write_atomic_bytes
from coordbench.core.trajectory import Trajectory
from coordbench.errors import ConfigError

from .replay import PhysicalPoses, recorded_poses

CAMERAS = ("overview", "global", "ego0", "ego1", "ego2")


@dataclass(frozen=True)
class VideoInfo:
    """What was written: frame count, frame size, frames per second."""

    path: Path
    frames: int
    width: int
    height: int
    fps: int


def _overview(poses: PhysicalPoses) -> object:
    """Return a free camera that frames every robot and body over the whole episode (one
    camera for the whole video: a camera that follows the action makes motion hard to read)."""
    from coordbench.envs.physical.poses import free_camera

    pts = [poses.robots[:, :, :2].reshape(-1, 2)]
    pts += [b[:, :2] for b in poses.bodies.values()]
    xy = np.concatenate(pts)
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    # the robots stand about 1 m tall and reach 0.85 m around their bases
    span = float(np.linalg.norm(hi - lo)) + 1.5
    # from the -y side, looking down: the view of the scenes' own `global` camera
    return free_camera(np.array([*(0.5 * (lo + hi)), 0.4]), max(2.2, 0.9 * span), 90.0, -50.0)


def render_video(trajectory: Trajectory, out: Path, *, width: int = 640, height: int = 480,
                 camera: str = "overview") -> VideoInfo:
    """Render the episode's recorded poses into an MP4 at `out`, one frame per recorded step
    at the recording's rate (10 fps: real time); return what was written.

    `camera`: overview (frames the whole episode), global (the scene's fixed camera) or egoI
    (robot I's head camera). Raises ConfigError / RunDirError (from `recorded_poses`) for an
    episode that is not physical or has no poses, and ConfigError for a bad camera or size.
    """
    import av

    # MuJoCo only through envs.physical, which picks the headless GL backend before MuJoCo
    # is first imported
    from coordbench.envs.physical import poses as pose
    from coordbench.envs.physical.embodiment import make_env

    poses = recorded_poses(trajectory)
    n = poses.robots.shape[1]
    if camera not in CAMERAS or (camera.startswith("ego") and int(camera[3:]) >= n):
        names = ", ".join(c for c in CAMERAS if not c.startswith("ego") or int(c[3:]) < n)
        raise ConfigError(f"--camera must be one of {names} for {poses.task}, got {camera!r}")
    if width % 2 or height % 2:
        # H.264 with 4:2:0 chroma needs even dimensions
        raise ConfigError(f"--width and --height must be even, got {width} x {height}")
    if poses.embodiment == "g1":
        _check_model(trajectory)
    env = make_env(poses.task, poses.embodiment)
    env.reset(poses.seed)  # the seed's static layout; the poses say where everything moves
    lay = pose.pose_layout(env)
    if lay.bodies != tuple(poses.bodies) or lay.joints != tuple(poses.joints) or env.n != n:
        raise ConfigError(f"episode {trajectory.header.episode_id} was recorded with another "
                          f"{poses.task} scene than this coordbench builds")
    cam = (_overview(poses) if camera == "overview" else
           "global" if camera == "global" else
           f"r{camera[3:]}_ego" if env.embodiment == "cobot" else f"robot{camera[3:]}/ego")
    fps = max(1, round(1.0 / (poses.dt * poses.every)))
    buf = io.BytesIO()
    renderer = pose.video_renderer(env.model, width, height)
    try:
        with av.open(buf, mode="w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=fps)
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            # one encoder thread: the machine's other cores belong to rollouts; crf 23 is
            # x264's default quality, `fast` keeps encoding well below the drawing time
            stream.options = {"crf": "23", "preset": "fast", "threads": "1"}
            for k in range(len(poses)):
                pose.apply(env.model, env.data, lay, poses.robots[k],
                           np.array([b[k] for b in poses.bodies.values()]).reshape(-1, 7),
                           np.array([j[k] for j in poses.joints.values()]))
                renderer.update_scene(env.data, camera=cam)
                frame = av.VideoFrame.from_ndarray(renderer.render(), format="rgb24")
                container.mux(stream.encode(frame))
            container.mux(stream.encode(None))
    finally:
        renderer.close()
        env.close()
    write_atomic_bytes(Path(out), buf.getvalue())
    return VideoInfo(Path(out), len(poses), width, height, fps)


def _check_model(trajectory: Trajectory) -> None:
    """Raise ConfigError where the G1 model file here is not the one the episode was
    recorded with (its meshes and joints could differ)."""
    from coordbench.envs.physical.g1 import model_sha256, resolve_model

    want = trajectory.header.params.get("robot_model_sha256")
    path = resolve_model()
    have = model_sha256(path)
    if want and want != have:
        raise ConfigError(f"episode {trajectory.header.episode_id} was recorded with a G1 "
                          f"model of sha256 {want[:12]}..., not {path} ({have[:12]}...): give "
                          "--g1-model the file it was recorded with")


def video_frames(path: Path) -> tuple[int, int, int]:
    """Return (frames, width, height) of a video file, decoded frame by frame."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        return frames, stream.codec_context.width, stream.codec_context.height
