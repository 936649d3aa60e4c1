"""Demonstrations: noisy decentralized experts, rejection-sampled, saved with full simulator
states, actions, observations (proprioception first) and phases; egocentric frames are
rendered afterwards by replaying the saved states (state-only users never pay for them).

Files per task in the output directory: `<task>_train.npz`, `<task>_val.npz` (episodes
concatenated; `episode_start` gives the offsets) and `<task>_meta.json`; a G1's are
`<task>_g1_train.npz` and so on (`demo_files.demos_name`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.demo_files import demos_name
from coordbench.envs.physical.embodiment import KINDS, make_env
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import RunDirError
from coordbench.runner.jobs import Job, JobContext, JobOutput, run_jobs

from .episode import run

DEMO_SEED0 = 100_000  # demonstration seeds never overlap evaluation seeds 1..N
IMAGE_EVERY = 5  # render at 10 Hz (every 5th 50 Hz control step)
TRAIN_SHARE = 5 / 6  # 50 of 60


def make_demos(task_name: str, n: int, out: Path, *, images: bool = False,
               size: int = 64, noise: float = 1.0, perturb: float | None = None,
               batch: int = 8, embodiment: str = "cobot") -> dict[str, Any]:
    """Record `n` successful noisy-expert demonstrations of `task_name` into `out`; return
    the metadata (including the rejection rate). The executed actions are perturbed
    (`perturb`, see ExpertPolicy; default: the task's `demo_perturb`) and the clean expert
    actions are recorded as labels."""
    meta, files = record_demos(task_name, n, images=images, size=size, noise=noise,
                               perturb=perturb, batch=batch, embodiment=embodiment)
    write_demos(Path(out), files)
    return meta


def write_demos(out: Path, files: dict[str, bytes]) -> None:
    """Write demonstration files (name -> bytes) atomically into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_atomic_bytes(out / name, data)


def record_demos(task_name: str, n: int, *, images: bool = False, size: int = 64,
                 noise: float = 1.0, perturb: float | None = None, batch: int = 8,
                 n_train: int | None = None, embodiment: str = "cobot"
                 ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Record the demonstrations of `make_demos` (`n_train` of the `n` for training;
    default 5/6) by `embodiment`'s robots; return (metadata, {file name: bytes})."""
    task = get_task(task_name, embodiment)
    perturb = task.demo_perturb if perturb is None else perturb
    kept: list[tuple[int, Any, Any]] = []
    tried = 0
    seed = DEMO_SEED0
    while len(kept) < n:
        seeds = list(range(seed, seed + batch))
        seed += batch
        # demonstrations keep full states; the trajectories here are only for their phases
        trs, recs = run(task_name, ExpertPolicy(noise, perturb), seeds, record=True,
                        poses=False, embodiment=embodiment)
        for s, tr, rec in zip(seeds, trs, recs, strict=True):
            if len(kept) == n:
                break
            tried += 1
            if tr.end and tr.end.success:
                kept.append((s, tr, rec))
        if tried > 5 * n + 50:
            raise RunDirError(f"{task_name}: the noisy expert succeeded in only {len(kept)} of "
                              f"{tried} demonstration attempts")
    if n_train is None:
        n_train = max(1, round(n * TRAIN_SHARE)) if n > 1 else 1
    splits = {"train": kept[:n_train], "val": kept[n_train:]}
    kind = KINDS[embodiment]
    meta = {"task": task_name, "n_robots": task.n_robots, "noise": noise, "perturb": perturb,
            "episodes": {k: len(v) for k, v in splits.items()}, "attempts": tried,
            "rejection_rate": round(1 - n / tried, 4), "action_dim": kind.action_dim,
            "proprio_dim": kind.proprio_dim, "obs": "local_obs (PhysicalEnv.local_obs)",
            "images": images, "image_size": size if images else None,
            "image_every": IMAGE_EVERY if images else None}
    if embodiment != "cobot":  # the CoBot's metadata stays byte for byte what it was
        meta["embodiment"] = embodiment
    files = {demos_name(task_name, embodiment, split): _pack(task_name, eps, images=images,
                                                             size=size, embodiment=embodiment)
             for split, eps in splits.items() if eps}
    files[demos_name(task_name, embodiment, "meta")] = (json.dumps(meta, indent=1)
                                                        + "\n").encode()
    return meta, files


def _pack(task_name: str, eps, *, images: bool, size: int, embodiment: str) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **episode_arrays(task_name, eps, images=images, size=size,
                                              embodiment=embodiment))
    return buf.getvalue()


def episode_arrays(task_name: str, eps, *, images: bool = False, size: int = 64,
                   embodiment: str = "cobot") -> dict[str, np.ndarray]:
    """Return the arrays of a demonstration file for episodes [(seed, trajectory, record)]:
    rows concatenated, `episode_start` offsets, the step each phase began (-1: never)."""
    starts = np.cumsum([0] + [len(rec.actions) for _, _, rec in eps])
    arrays = {
        "seeds": np.array([s for s, _, _ in eps]),
        "episode_start": starts,
        "states": np.concatenate([np.stack(rec.states) for _, _, rec in eps]),
        "actions": np.concatenate([np.stack(rec.actions) for _, _, rec in eps]),
        "executed": np.concatenate([np.stack(rec.executed) for _, _, rec in eps]),
        "obs": np.concatenate([np.stack(rec.obs) for _, _, rec in eps]),
        "phase": np.concatenate([np.array(rec.phase) for _, _, rec in eps]),
        "phase_steps": np.array([[_phase_step(tr, p) for p in (1, 2, 3)] for _, tr, _ in eps]),
    }
    if images:
        arrays["frames"], arrays["frame_index"] = render_frames(task_name, arrays, size,
                                                                embodiment)
    return arrays


def _phase_step(tr, p: int) -> int:
    from coordbench.core.trajectory import PhysicalPhaseEvent

    return next((e.t for e in tr.steps(PhysicalPhaseEvent) if e.phase == p), -1)


def render_frames(task_name: str, arrays: dict[str, np.ndarray], size: int,
                  embodiment: str = "cobot") -> tuple[np.ndarray, np.ndarray]:
    """Return every robot's egocentric frames at 10 Hz, rendered by replaying the saved
    states, and the row index of each frame."""
    env = make_env(task_name, embodiment)
    env.reset(0)
    rows = []
    for e in range(len(arrays["seeds"])):
        a, b = arrays["episode_start"][e], arrays["episode_start"][e + 1]
        rows.extend(range(a, b, IMAGE_EVERY))
    frames = np.zeros((len(rows), env.n, size, size, 3), dtype=np.uint8)
    try:
        for k, r in enumerate(rows):
            env.set_state(arrays["states"][r], 0, 0)
            for i in range(env.n):
                frames[k, i] = env.render_ego(i, size, size)
    finally:
        env.close()
    return frames, np.array(rows)




def record_job(arg: tuple[str, int, bool, int, int | None, str], ctx: JobContext
               ) -> JobOutput:
    """Record one task's demonstrations (a job on the job engine); return its files, the
    metadata file last (it marks the task done), and the metadata."""
    task, n, images, size, n_train, embodiment = arg
    meta, files = record_demos(task, n, images=images, size=size, n_train=n_train,
                               embodiment=embodiment)
    return JobOutput(files, meta)


def _current(folder: Path, task: str, n: int, images: bool, size: int,
             embodiment: str = "cobot") -> bool:
    """Return whether `folder` holds `task`'s demonstrations recorded with these settings."""
    try:
        meta = json.loads((folder / demos_name(task, embodiment, "meta"))
                          .read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and sum(meta.get("episodes", {}).values()) == n
            and bool(meta.get("images")) == images
            and (not images or meta.get("image_size") == size))


def demos_jobs(folder: Path, tasks: list[str], n: int, *, images: bool = False,
               size: int = 64, n_train: int | None = None, embodiment: str = "cobot"
               ) -> list[Job]:
    """Return one recording job per task for `folder`: a task whose demonstrations there
    were recorded with other settings is recorded again (its files replaced when done)."""
    out = []
    for task in tasks:
        meta = demos_name(task, embodiment, "meta")
        out.append(Job(task, meta, record_job, (task, n, images, size, n_train, embodiment),
                       redo=(folder / meta).is_file()
                       and not _current(folder, task, n, images, size, embodiment)))
    return out


def record_all(folder: Path, tasks: list[str], n: int, *, images: bool = False,
               size: int = 64, n_train: int | None = None, executor: str = "local",
               workers: int = 1, say: Any = None, embodiment: str = "cobot"
               ) -> dict[str, dict[str, Any]]:
    """Record the demonstrations of `tasks` by `embodiment`'s robots into `folder` (one
    task per worker, on the job engine: tasks already recorded with these settings are
    kept); return {task: metadata} of every task, in `tasks` order. `say(task, meta)` hears
    of each task recorded now."""
    folder = Path(folder)
    run_jobs(folder, demos_jobs(folder, tasks, n, images=images, size=size, n_train=n_train,
                                embodiment=embodiment),
             executor=executor, workers=workers,
             on_done=None if say is None else lambda job, o: say(job.key, o.value))
    return {t: json.loads((folder / demos_name(t, embodiment, "meta"))
                          .read_text(encoding="utf-8")) for t in tasks}


def training_demos(root: Path, tasks: list[str], n: int, *, image_size: int | None = None,
                   executor: str = "local", workers: int = 1, say: Any = None,
                   embodiment: str = "cobot") -> Path:
    """Return the folder of `n` training demonstrations per task (plus n // 5, at least one,
    for validation) under `root`, recording those not there yet; the seeds are fixed, so a
    folder made once serves every later run with the same count. With `image_size` the
    demonstrations also hold egocentric frames of that size (a folder of their own)."""
    folder = Path(root) / (f"n{n}" if image_size is None else f"n{n}_img{image_size}")
    record_all(folder, tasks, n + max(1, n // 5), images=image_size is not None,
               size=image_size or 64, n_train=n, executor=executor, workers=workers, say=say,
               embodiment=embodiment)
    return folder
