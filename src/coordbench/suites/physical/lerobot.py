"""LeRobotDataset v3.0, written and read without LeRobot: demonstrations (or a run's rollouts)
become a dataset that `lerobot.datasets.lerobot_dataset.LeRobotDataset(repo_id, root=DIR)`
loads, and such a dataset becomes demonstration arrays `physical train` fits on.

The layout and every field follow LeRobot 0.4's own writer (`LeRobotDataset.create`,
`add_frame`, `save_episode`, `finalize`): `meta/info.json` (codebase_version "v3.0"),
`meta/stats.json` (min, max, mean, std, count and the 1/10/50/90/99% quantiles, per episode
then aggregated as LeRobot aggregates them), `meta/tasks.parquet` (the task's instruction as
the index, `task_index`), `meta/episodes/chunk-000/file-000.parquet` (each episode's rows,
files, per-episode stats and, for videos, its span in the concatenated video),
`data/chunk-XXX/file-XXX.parquet` (many episodes a file, a new file past 100 MB) and, with
images, `videos/observation.images.agent_<i>/chunk-XXX/file-XXX.mp4` (H.264, yuv420p, one
frame per row, episodes concatenated).

One dataset is one task played by one embodiment. Per frame (one control step at 50 Hz, or
every 50/fps-th with `fps`): `observation.state` (every robot's state observation, robot 0
first: the team's joint vector), `observation.state.agent_<i>` (robot i's `local_obs` row),
`action` and `action.agent_<i>` (the actions a policy learns: the expert's clean action in a
demonstration, the applied one in a rollout), `action.executed` (what was applied: a
demonstration's perturbed action), `phase` (phases completed, 0-3), and LeRobot's
`timestamp`, `frame_index`, `episode_index`, `index`, `task_index`. Episodes carry their
`seed` in the episodes file and info.json's `splits` names the train and val episodes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.demo_files import demos_name, load_demos
from coordbench.envs.physical.embodiment import KINDS, obs_names
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import ConfigError, RunDirError

CODEBASE_VERSION = "v3.0"
CHUNK = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK + ".parquet"
CHUNKS_SIZE = 1000  # files a chunk folder holds (LeRobot's default)
DATA_FILE_MB = 100  # a data file takes episodes until it passes this (LeRobot's default)
VIDEO_FILE_MB = 200
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
CONTROL_FPS = round(1 / CONTROL_DT)  # 50
LEROBOT_PREFIX = "lerobot:"
DEFAULT_FIELDS = ("timestamp", "frame_index", "episode_index", "index", "task_index")


@dataclass
class EpisodeRows:
    """One episode's per-step arrays at the control rate (before any frame-rate thinning)."""

    seed: int
    split: str  # train | val
    obs: np.ndarray  # (T, n, obs_dim) float32
    actions: np.ndarray  # (T, n, action_dim) float32: what a policy learns
    executed: np.ndarray  # (T, n, action_dim): what was applied
    phase: np.ndarray  # (T,) phases completed before each step
    states: np.ndarray | None = None  # (T, state size): full simulator states (for images)


@dataclass(frozen=True)
class Target:
    """What one dataset holds: the task, its embodiment and robots, and how it is sampled."""

    task: str
    embodiment: str
    n: int
    fps: int = CONTROL_FPS
    image_size: int | None = None  # None: no camera views

    @property
    def every(self) -> int:
        """Return the control steps between two frames."""
        return CONTROL_FPS // self.fps


def check_fps(fps: int) -> None:
    """Raise ConfigError unless `fps` divides the control rate (a frame is a control step)."""
    if fps < 1 or CONTROL_FPS % fps:
        ok = ", ".join(str(d) for d in range(1, CONTROL_FPS + 1) if CONTROL_FPS % d == 0)
        raise ConfigError(f"--fps must divide the control rate {CONTROL_FPS} Hz (one of {ok}), "
                          f"got {fps}")


# -- features ---------------------------------------------------------------------------------
def camera_key(i: int) -> str:
    """Return the feature key of robot i's head camera."""
    return f"observation.images.agent_{i}"


def features(t: Target) -> dict[str, dict[str, Any]]:
    """Return the dataset's LeRobot features (dtype, shape, names; videos with their info), in
    LeRobot's order: the user features, then its five default ones."""
    kind = KINDS[t.embodiment]
    obs, act = list(obs_names(t.task, t.embodiment)), list(kind.action_names)
    out: dict[str, dict[str, Any]] = {
        "observation.state": _vector([f"agent_{i}.{c}" for i in range(t.n) for c in obs]),
        **{f"observation.state.agent_{i}": _vector(obs) for i in range(t.n)},
        "action": _vector([f"agent_{i}.{c}" for i in range(t.n) for c in act]),
        **{f"action.agent_{i}": _vector(act) for i in range(t.n)},
        "action.executed": _vector([f"agent_{i}.{c}" for i in range(t.n) for c in act]),
        "phase": {"dtype": "int64", "shape": [1], "names": None},
    }
    if t.image_size:
        s = t.image_size
        for i in range(t.n):
            out[camera_key(i)] = {
                "dtype": "video", "shape": [s, s, 3], "names": ["height", "width", "channels"],
                "info": {"video.height": s, "video.width": s, "video.codec": "h264",
                         "video.pix_fmt": "yuv420p", "video.is_depth_map": False,
                         "video.fps": t.fps, "video.channels": 3, "has_audio": False}}
    out["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
    for name in DEFAULT_FIELDS[1:]:
        out[name] = {"dtype": "int64", "shape": [1], "names": None}
    return out


def _vector(names: list[str]) -> dict[str, Any]:
    return {"dtype": "float32", "shape": [len(names)], "names": names}


def _hf_features(feats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return the `huggingface` schema metadata LeRobot's writer leaves in a data file."""
    out: dict[str, Any] = {}
    for key, ft in feats.items():
        if ft["dtype"] == "video":
            continue
        value = {"dtype": ft["dtype"], "_type": "Value"}
        out[key] = value if ft["shape"] == [1] else {"feature": value, "length": ft["shape"][0],
                                                     "_type": "List"}
    return {"info": {"features": out}}


# -- statistics (LeRobot's compute_stats: per episode, then aggregated) -----------------------
def _stats(x: np.ndarray, image: bool = False) -> dict[str, np.ndarray]:
    """Return one episode's stats of a feature: per column for vectors (rows x columns), per
    channel in [0, 1] with shape (3, 1, 1) for frames (rows x h x w x 3)."""
    if image:
        x = x.reshape(-1, 3).astype(np.float64) / 255.0
    else:
        x = x.reshape(len(x), -1).astype(np.float64) if x.ndim > 1 else x[:, None]
    out = {"min": x.min(axis=0), "max": x.max(axis=0), "mean": x.mean(axis=0),
           "std": x.std(axis=0), "count": np.array([len(x)])}
    for q in QUANTILES:
        out[f"q{round(q * 100):02d}"] = np.quantile(x, q, axis=0)
    if image:
        out = {k: v if k == "count" else v.reshape(3, 1, 1) for k, v in out.items()}
    return out


def _aggregate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Return stats over episodes as LeRobot aggregates them (weighted means and quantiles,
    the parallel variance)."""
    means = np.stack([p["mean"] for p in parts])
    counts = np.stack([p["count"] for p in parts]).astype(np.float64)
    total = counts.sum(axis=0)
    while counts.ndim < means.ndim:
        counts = counts[..., None]
    mean = (means * counts).sum(axis=0) / total
    var = ((np.stack([p["std"] ** 2 for p in parts]) + (means - mean) ** 2)
           * counts).sum(axis=0) / total
    out = {"min": np.min(np.stack([p["min"] for p in parts]), axis=0),
           "max": np.max(np.stack([p["max"] for p in parts]), axis=0),
           "mean": mean, "std": np.sqrt(var), "count": total.astype(np.int64)}
    for key in parts[0]:
        if key.startswith("q"):
            out[key] = (np.stack([p[key] for p in parts]) * counts).sum(axis=0) / total
    return out


def _listed(stats: dict[str, np.ndarray], integer: bool) -> dict[str, Any]:
    """Return stats as JSON lists (integer features keep integer min and max, as LeRobot)."""
    out = {}
    for k, v in stats.items():
        whole = k == "count" or (integer and k in ("min", "max"))
        out[k] = np.asarray(v).astype(np.int64 if whole else np.float64).tolist()
    return out


# -- writing ----------------------------------------------------------------------------------
def write_dataset(out: Path, t: Target, episodes: Iterable[EpisodeRows],
                  instruction: str, source: str) -> dict[str, Any]:
    """Write `episodes` as one LeRobotDataset v3.0 at `out` (built in a temporary folder
    beside it, then renamed: nothing half-written); return a summary (episodes, frames,
    files). `out` must not exist yet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = features(t)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        writer = _DataWriter(tmp, feats, pa, pq)
        videos = _VideoWriter(tmp, t) if t.image_size else None
        rows: list[dict[str, Any]] = []
        ep_stats: list[dict[str, dict[str, np.ndarray]]] = []
        splits: dict[str, list[int]] = {}
        frames = 0
        for e, ep in enumerate(episodes):
            table, stats = _episode_table(t, ep, e, frames)
            chunk, file = writer.add(table)
            row: dict[str, Any] = {
                "episode_index": e, "tasks": [instruction], "length": table.num_rows,
                "data/chunk_index": chunk, "data/file_index": file,
                "dataset_from_index": frames, "dataset_to_index": frames + table.num_rows}
            if videos is not None:
                for key, (span, frame_stats) in videos.add(ep, table.num_rows).items():
                    row.update(span)
                    stats[key] = frame_stats
            stats = {k: stats[k] for k in feats if k in stats}  # LeRobot's column order
            row.update({f"stats/{k}/{s}": v for k, st in stats.items()
                        for s, v in _listed(st, feats[k]["dtype"] == "int64").items()})
            row.update({"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
                        "seed": int(ep.seed)})
            rows.append(row)
            ep_stats.append(stats)
            splits.setdefault(ep.split, []).append(e)
            frames += table.num_rows
        if not rows:
            raise RunDirError(f"{source}: no episodes to export")
        writer.close()
        if videos is not None:
            videos.close()
        _write_meta(tmp, t, feats, rows, ep_stats, splits, frames, instruction, source)
        if out.exists():
            raise ConfigError(f"{out} appeared while exporting; nothing was replaced")
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"out": str(out), "task": t.task, "embodiment": t.embodiment,
            "episodes": len(rows), "frames": frames, "fps": t.fps,
            "splits": {k: len(v) for k, v in splits.items()},
            "videos": t.n if t.image_size else 0}


def _episode_table(t: Target, ep: EpisodeRows, e: int, first: int) -> tuple[Any, dict]:
    """Return one episode's data rows (a pyarrow table, thinned to the frame rate) and its
    per-feature stats."""
    import pyarrow as pa

    keep = np.arange(0, len(ep.actions), t.every)
    T = len(keep)
    obs = np.asarray(ep.obs[keep], dtype=np.float32)
    act = np.asarray(ep.actions[keep], dtype=np.float32)
    exe = np.asarray(ep.executed[keep], dtype=np.float32)
    cols: dict[str, np.ndarray] = {"observation.state": obs.reshape(T, -1)}
    cols.update({f"observation.state.agent_{i}": obs[:, i] for i in range(t.n)})
    cols["action"] = act.reshape(T, -1)
    cols.update({f"action.agent_{i}": act[:, i] for i in range(t.n)})
    cols["action.executed"] = exe.reshape(T, -1)
    cols["phase"] = np.asarray(ep.phase, dtype=np.int64)[keep]
    idx = np.arange(T, dtype=np.int64)
    cols["timestamp"] = (idx / t.fps).astype(np.float32)
    cols["frame_index"] = idx
    cols["episode_index"] = np.full(T, e, dtype=np.int64)
    cols["index"] = first + idx
    cols["task_index"] = np.zeros(T, dtype=np.int64)
    arrays = {}
    for k, v in cols.items():
        if v.ndim == 2:
            flat = pa.array(np.ascontiguousarray(v).ravel(), type=pa.float32())
            arrays[k] = pa.FixedSizeListArray.from_arrays(flat, v.shape[1])
        else:
            arrays[k] = pa.array(v)
    stats = {k: _stats(v) for k, v in cols.items()}
    return pa.table(arrays), stats


class _DataWriter:
    """Data rows into `data/chunk-XXX/file-XXX.parquet`: an episode never spans two files; a
    file takes episodes until it holds DATA_FILE_MB (in memory), then the next one starts."""

    def __init__(self, root: Path, feats: dict[str, Any], pa: Any, pq: Any) -> None:
        self.root, self.pq = root, pq
        self.meta = {b"huggingface": json.dumps(_hf_features(feats)).encode()}
        self.chunk = self.file = 0
        self.tables: list[Any] = []
        self.bytes = 0

    def add(self, table: Any) -> tuple[int, int]:
        """Queue an episode's table; return the (chunk, file) it is written in."""
        if self.tables and self.bytes + table.nbytes > DATA_FILE_MB * 2**20:
            self._flush()
            self.file += 1
            if self.file == CHUNKS_SIZE:
                self.chunk, self.file = self.chunk + 1, 0
        self.tables.append(table)
        self.bytes += table.nbytes
        return self.chunk, self.file

    def _flush(self) -> None:
        import pyarrow as pa

        table = pa.concat_tables(self.tables)
        table = table.replace_schema_metadata(self.meta)
        path = self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.pq.write_table(table, path)
        self.tables, self.bytes = [], 0

    def close(self) -> None:
        """Write the last file."""
        if self.tables:
            self._flush()


class _VideoWriter:
    """Each robot's head camera as one H.264 stream per file, episodes concatenated; frames
    rendered from the saved simulator states of each kept row."""

    def __init__(self, root: Path, t: Target) -> None:
        from coordbench.envs.physical.embodiment import make_env

        self.root, self.t = root, t
        self.env = make_env(t.task, t.embodiment)
        self.env.reset(0)
        self.containers: list[Any] = []
        self.streams: list[Any] = []
        self.buffers: list[io.BytesIO] = []
        self.frames = 0  # frames written so far (every stream has the same count)
        for _ in range(t.n):
            self._open()

    def _open(self) -> None:
        import av

        buf = io.BytesIO()
        container = av.open(buf, mode="w", format="mp4")
        stream = container.add_stream("libx264", rate=self.t.fps)
        s = self.t.image_size
        stream.width, stream.height, stream.pix_fmt = s, s, "yuv420p"
        # LeRobot's encoder settings: a keyframe every 2 frames for fast random access;
        # x264's default quality (LeRobot's crf 30 is for AV1)
        stream.options = {"crf": "23", "g": "2", "preset": "fast", "threads": "1"}
        self.containers.append(container)
        self.streams.append(stream)
        self.buffers.append(buf)

    def add(self, ep: EpisodeRows, rows: int) -> dict[str, tuple[dict[str, Any], dict]]:
        """Render and encode an episode's kept rows; return per camera its span columns in
        the episodes file and its frame stats."""
        import av

        if ep.states is None:
            raise RunDirError("camera views need the episodes' simulator states")
        keep = np.arange(0, len(ep.actions), self.t.every)[:rows]
        s = self.t.image_size
        shots = np.zeros((len(keep), self.t.n, s, s, 3), dtype=np.uint8)
        for k, r in enumerate(keep):
            self.env.set_state(ep.states[r], 0, 0)
            for i in range(self.t.n):
                shots[k, i] = self.env.render_ego(i, s, s)
        out = {}
        for i in range(self.t.n):
            for frame in shots[:, i]:
                vf = av.VideoFrame.from_ndarray(frame, format="rgb24")
                self.containers[i].mux(self.streams[i].encode(vf))
            key = camera_key(i)
            span = {f"videos/{key}/chunk_index": 0, f"videos/{key}/file_index": 0,
                    f"videos/{key}/from_timestamp": self.frames / self.t.fps,
                    f"videos/{key}/to_timestamp": (self.frames + len(keep)) / self.t.fps}
            out[key] = (span, _stats(shots[:, i], image=True))
        self.frames += len(keep)
        return out

    def close(self) -> None:
        """Finish every stream and write the files."""
        for i, (c, st, buf) in enumerate(zip(self.containers, self.streams, self.buffers,
                                             strict=True)):
            c.mux(st.encode(None))
            c.close()
            path = self.root / VIDEO_PATH.format(video_key=camera_key(i), chunk_index=0,
                                                 file_index=0)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(buf.getvalue())
        self.env.close()


def _write_meta(root: Path, t: Target, feats: dict[str, Any], rows: list[dict[str, Any]],
                ep_stats: list[dict[str, dict[str, np.ndarray]]], splits: dict[str, list[int]],
                frames: int, instruction: str, source: str) -> None:
    """Write info.json, stats.json, tasks.parquet and the episodes file."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats = {k: _listed(_aggregate([s[k] for s in ep_stats]), feats[k]["dtype"] == "int64")
             for k in ep_stats[0]}
    info = {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": f"coordbench_{t.embodiment}",
        "total_episodes": len(rows), "total_frames": frames, "total_tasks": 1,
        "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": DATA_FILE_MB,
        "video_files_size_in_mb": VIDEO_FILE_MB, "fps": t.fps,
        "splits": {k: f"{v[0]}:{v[-1] + 1}" for k, v in splits.items()},
        "data_path": DATA_PATH, "video_path": VIDEO_PATH if t.image_size else None,
        "features": feats,
        "coordbench": {"task": t.task, "embodiment": t.embodiment, "n_robots": t.n,
                       "control_fps": CONTROL_FPS, "source": source},
    }
    meta = root / "meta"
    (meta / "episodes" / "chunk-000").mkdir(parents=True, exist_ok=True)
    (meta / "info.json").write_text(json.dumps(info, indent=4) + "\n", encoding="utf-8")
    (meta / "stats.json").write_text(json.dumps(stats, indent=4) + "\n", encoding="utf-8")
    pd.DataFrame({"task_index": [0]}, index=[instruction]).to_parquet(meta / "tasks.parquet")
    pq.write_table(pa.Table.from_pylist(rows),
                   root / EPISODES_PATH.format(chunk_index=0, file_index=0))


# -- sources ----------------------------------------------------------------------------------
def demo_tasks(folder: Path) -> list[tuple[str, str]]:
    """Return the (task, embodiment) pairs a demonstrations folder holds, from its metadata
    files."""
    from coordbench.envs.physical.tasks import EMBODIMENTS, TASKS

    found = []
    for task in TASKS:
        for emb in EMBODIMENTS:
            if (Path(folder) / demos_name(task, emb, "meta")).is_file():
                found.append((task, emb))
    return found


def demo_episodes(folder: Path, task: str, embodiment: str) -> Iterator[EpisodeRows]:
    """Yield a demonstrations folder's episodes of `task` (train, then val)."""
    for split in ("train", "val"):
        path = Path(folder) / demos_name(task, embodiment, split)
        if split == "val" and not path.is_file():
            continue
        data = load_demos(path)
        need = {"episode_start", "obs", "actions", "executed", "phase", "seeds"}
        missing = sorted(need - set(data))
        if missing:
            raise RunDirError(f"demonstration file {path} lacks {', '.join(missing)}")
        starts = data["episode_start"]
        for e in range(len(starts) - 1):
            a, b = int(starts[e]), int(starts[e + 1])
            yield EpisodeRows(int(data["seeds"][e]), split, data["obs"][a:b],
                              data["actions"][a:b], data["executed"][a:b], data["phase"][a:b],
                              data["states"][a:b] if "states" in data else None)


REPLAY_BATCH = 16  # the suite's lockstep batch: a learned policy's forward pass sees the same


def run_episodes(run: Any, condition: str, fields: dict[str, Any]) -> Iterator[EpisodeRows]:
    """Yield a physical run condition's episodes with their per-step arrays, re-simulated from
    their seeds by the condition's policy (a run keeps poses, not actions); RunDirError where
    a replay is not the episode recorded (its last step, success, phase steps or poses)."""
    from coordbench.core.trajectory import PhysicalPhaseEvent

    from .episode import run as rollout
    from .suite import make_policy

    task, emb = fields["task"], fields.get("embodiment", "cobot")
    saved = sorted(run.load_episodes(condition), key=lambda tr: tr.header.seed)
    policy = make_policy(fields["policy"], task, emb)

    def phases(tr: Any) -> list[int]:
        return [e.t for e in tr.steps(PhysicalPhaseEvent)]

    def poses(tr: Any) -> Any:
        # the 10 Hz poses: two policies that both fail the same way still move differently
        return next((e.model_dump() for e in tr.events if e.type == "physical_poses"), None)

    for a in range(0, len(saved), REPLAY_BATCH):
        part = saved[a:a + REPLAY_BATCH]
        trs, recs = rollout(task, policy, [tr.header.seed for tr in part], record=True,
                            embodiment=emb)
        for old, new, rec in zip(part, trs, recs, strict=True):
            saved = poses(old)  # episodes of schema 1.5 and later keep them
            if (old.end is None or new.end is None or old.end.t != new.end.t
                    or old.end.success != new.end.success or phases(old) != phases(new)
                    or (saved is not None and saved != poses(new))):
                raise RunDirError(f"{old.header.episode_id} did not replay as it was recorded "
                                  "(another coordbench version, robot model or policy file?); "
                                  "nothing was exported")
            yield EpisodeRows(int(old.header.seed), "train", np.stack(rec.obs),
                              np.stack(rec.actions), np.stack(rec.executed),
                              np.array(rec.phase), np.stack(rec.states))


def instruction(task: str, embodiment: str) -> str:
    """Return the dataset's task text: the task's team instruction."""
    spec = get_task(task, embodiment)
    return spec.instructions.get("joint") or spec.name


# -- reading ----------------------------------------------------------------------------------
def parse_source(value: str | Path) -> Path | None:
    """Return the dataset folder of a `lerobot:DIR` demonstrations source, or None for a
    coordbench demonstrations folder."""
    text = str(value)
    return Path(text[len(LEROBOT_PREFIX):]) if text.startswith(LEROBOT_PREFIX) else None


def read_info(root: Path) -> dict[str, Any]:
    """Return a dataset's info.json, or raise ConfigError naming the problem."""
    path = Path(root) / "meta" / "info.json"
    if not Path(root).is_dir():
        raise ConfigError(f"LeRobot dataset {root} does not exist")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ConfigError(f"{root} is not a LeRobot dataset: {path} is missing or not "
                          "JSON") from None
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        raise ConfigError(f"{path} has no features")
    if info.get("codebase_version") != CODEBASE_VERSION:
        raise ConfigError(f"{root} is a LeRobot dataset of codebase_version "
                          f"{info.get('codebase_version')!r}; coordbench reads "
                          f"{CODEBASE_VERSION!r} (LeRobot converts older ones)")
    return info


def read_dataset(root: Path, task: str, embodiment: str
                 ) -> dict[str, dict[str, np.ndarray]]:
    """Return a LeRobot dataset's episodes as demonstration arrays per split ({"train": ...,
    "val": ...}: `obs`, `actions`, `executed`, `phase`, `seeds`, `episode_start`), checked
    against `task`'s observation and action spaces; ConfigError (one line naming the
    feature) where they do not match."""
    import pyarrow.parquet as pq

    info = read_info(root)
    feats = info["features"]
    made = info.get("coordbench", {})
    if isinstance(made, dict) and made.get("task") not in (None, task):
        raise ConfigError(f"{root} holds {made['task']} demonstrations, not {task}")
    if isinstance(made, dict) and made.get("embodiment") not in (None, embodiment):
        raise ConfigError(f"{root} was played by {made['embodiment']} robots, not "
                          f"{embodiment} (--embodiment)")
    if info.get("fps") != CONTROL_FPS:
        raise ConfigError(f"{root} has {info.get('fps')} frames a second; policies train at "
                          f"the control rate, {CONTROL_FPS} (export with --fps "
                          f"{CONTROL_FPS})")
    n = get_task(task, embodiment).n_robots
    width, adim = len(obs_names(task, embodiment)), KINDS[embodiment].action_dim
    per_robot = all(f"observation.state.agent_{i}" in feats and f"action.agent_{i}" in feats
                    for i in range(n))
    want = ({f"observation.state.agent_{i}": width for i in range(n)}
            | {f"action.agent_{i}": adim for i in range(n)} if per_robot else
            {"observation.state": n * width, "action": n * adim})
    for key, size in want.items():
        ft = feats.get(key)
        if not isinstance(ft, dict):
            raise ConfigError(f"{root} has no feature {key!r} ({task} with {n} "
                              f"{embodiment} robots needs it)")
        if ft.get("dtype") not in ("float32", "float64") or list(ft.get("shape", [])) != [size]:
            raise ConfigError(f"{root}: feature {key!r} is {ft.get('dtype')} of shape "
                              f"{ft.get('shape')}; {task} with {embodiment} robots needs "
                              f"float32 of shape [{size}]")
    files = sorted((Path(root) / "data").glob("chunk-*/file-*.parquet"))
    if not files:
        raise ConfigError(f"{root} has no data files (data/chunk-*/file-*.parquet)")
    cols = [*want, "episode_index", "frame_index"]
    extra = [c for c in ("action.executed", "phase") if c in feats]
    try:
        tables = [pq.read_table(f, columns=cols + extra) for f in files]
    except Exception as exc:  # pyarrow raises several types for damaged or partial files
        raise ConfigError(f"{root}: a data file is damaged or lacks a feature "
                          f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") from None
    import pyarrow as pa

    table = pa.concat_tables(tables)
    ep = table["episode_index"].to_numpy()
    order = np.lexsort((table["frame_index"].to_numpy(), ep))
    ep = ep[order]

    def matrix(key: str, size: int) -> np.ndarray:
        col = table[key].combine_chunks()
        return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, size)[order]

    if per_robot:
        obs = np.stack([matrix(f"observation.state.agent_{i}", width) for i in range(n)], 1)
        act = np.stack([matrix(f"action.agent_{i}", adim) for i in range(n)], 1)
    else:
        obs = matrix("observation.state", n * width).reshape(-1, n, width)
        act = matrix("action", n * adim).reshape(-1, n, adim)
    exe = (matrix("action.executed", n * adim).reshape(-1, n, adim)
           if "action.executed" in extra else act.astype(np.float64))
    phase = (table["phase"].to_numpy()[order] if "phase" in extra
             else np.zeros(len(ep), dtype=np.int64))
    seeds = _seeds(root)
    episodes = np.unique(ep)
    split_of = _splits(info, episodes)
    out: dict[str, dict[str, np.ndarray]] = {}
    for split in ("train", "val"):
        chosen = [e for e in episodes if split_of[int(e)] == split]
        if not chosen:
            continue
        rows = np.concatenate([np.flatnonzero(ep == e) for e in chosen])
        lengths = [int((ep == e).sum()) for e in chosen]
        out[split] = {
            "obs": obs[rows].astype(np.float32), "actions": act[rows].astype(np.float32),
            "executed": exe[rows].astype(np.float64), "phase": phase[rows].astype(np.int64),
            "seeds": np.array([seeds.get(int(e), int(e)) for e in chosen], dtype=np.int64),
            "episode_start": np.cumsum([0] + lengths).astype(np.int64)}
    if "train" not in out:
        raise ConfigError(f"{root} has no training episodes (info.json splits)")
    return out


def _seeds(root: Path) -> dict[int, int]:
    """Return episode -> seed where the episodes file names one (coordbench's exports)."""
    import pyarrow.parquet as pq

    out: dict[int, int] = {}
    for f in sorted((Path(root) / "meta" / "episodes").glob("chunk-*/file-*.parquet")):
        try:
            t = pq.read_table(f, columns=["episode_index", "seed"])
        except Exception:  # a dataset recorded elsewhere has no seeds: episode numbers serve
            return {}
        out.update(zip(t["episode_index"].to_pylist(), t["seed"].to_pylist(), strict=True))
    return out


def _splits(info: dict[str, Any], episodes: np.ndarray) -> dict[int, str]:
    """Return episode -> split from info.json's `splits` ("a:b" ranges; default train)."""
    out = {int(e): "train" for e in episodes}
    for name, span in (info.get("splits") or {}).items():
        if name not in ("train", "val") or not isinstance(span, str) or ":" not in span:
            continue
        try:
            a, b = (int(x) for x in span.split(":"))
        except ValueError:
            continue
        for e in range(a, b):
            if e in out:
                out[e] = name
    return out


def to_demos(root: Path, tasks: list[str], embodiment: str, cache: Path) -> Path:
    """Return a coordbench demonstrations folder holding the LeRobot dataset at `root` (one
    task), converted once into `cache/lerobot-<digest>` (a digest of its files: a changed
    dataset converts again)."""
    import hashlib

    if len(tasks) != 1:
        raise ConfigError("a LeRobot dataset holds one task: give --task with one name")
    task = tasks[0]
    read_info(root)
    h = hashlib.sha256(task.encode() + embodiment.encode())
    # the camera videos are not imported: a changed video alone needs no new conversion
    for f in sorted(p for p in Path(root).rglob("*")
                    if p.is_file() and p.relative_to(root).parts[0] != "videos"):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    folder = Path(cache) / f"lerobot-{h.hexdigest()[:16]}"
    meta_file = folder / demos_name(task, embodiment, "meta")
    if meta_file.is_file():
        return folder
    splits = read_dataset(root, task, embodiment)
    folder.mkdir(parents=True, exist_ok=True)
    for split, arrays in splits.items():
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        write_atomic_bytes(folder / demos_name(task, embodiment, split), buf.getvalue())
    kind = KINDS[embodiment]
    meta = {"task": task, "n_robots": get_task(task, embodiment).n_robots,
            "episodes": {k: int(len(v["episode_start"]) - 1) for k, v in splits.items()},
            "source": f"{LEROBOT_PREFIX}{Path(root).resolve()}",
            "action_dim": kind.action_dim, "proprio_dim": kind.proprio_dim,
            "obs": "local_obs (PhysicalEnv.local_obs)", "images": False}
    if embodiment != "cobot":
        meta["embodiment"] = embodiment
    write_atomic_bytes(meta_file, (json.dumps(meta, indent=1) + "\n").encode())
    return folder

