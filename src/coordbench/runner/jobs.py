"""The job engine, beside the condition engine: named, resumable units of work that produce
files (a trained policy, a demonstration set, a checkpoint), on every executor.

A `Job` names its work (a picklable top-level function and its argument) and the file whose
presence marks it done. `run_jobs(root, jobs, ...)` skips the jobs that are done, lets the
executor run the others, and writes what each returns atomically in the driver: every file,
the `done` file last, so a job is finished exactly when its `done` file exists. While a job
runs, its work may save snapshots through its `JobContext` (`ctx.save(blob)`, written
atomically by the worker under `ROOT/.jobs/`) and finds the last one on a rerun
(`ctx.resume()`): a killed training run continues from its last snapshot instead of from
the start. A snapshot is removed once its job is done.

Workers return their files to the driver, so finished artifacts need no shared file system;
snapshots do (a worker on another node without the path just starts the job afresh).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic_bytes
from coordbench.core.rundir import safe_name

from .executors import check_executor, make_executor

SNAPSHOTS = ".jobs"


@dataclass(frozen=True)
class Job:
    """One unit of work: `work(arg, ctx) -> JobOutput` (a picklable top-level function),
    finished when `root / done` exists; `key` names it (and its snapshot) in `root`."""

    key: str
    done: str
    work: Callable[[Any, JobContext], JobOutput]
    arg: Any = None
    redo: bool = False  # run even though `done` exists (what it made is out of date)


@dataclass
class JobOutput:
    """What a job returns: files to write (path relative to the root -> bytes, the job's
    `done` file among them) and a value handed back to the caller."""

    files: dict[str, bytes] = field(default_factory=dict)
    value: Any = None


@dataclass(frozen=True)
class JobContext:
    """What a job's work sees of the engine: where its snapshot lives."""

    root: str
    key: str
    every_s: float = 60.0  # how often a long job saves a snapshot (seconds)

    @property
    def snapshot_path(self) -> Path:
        """Return the file of this job's snapshot."""
        return Path(self.root) / SNAPSHOTS / f"{safe_name(self.key)}.snapshot"

    def resume(self) -> bytes | None:
        """Return the job's last snapshot (None: start afresh)."""
        try:
            return self.snapshot_path.read_bytes()
        except OSError:
            return None

    def save(self, blob: bytes) -> None:
        """Replace the job's snapshot with `blob` (atomically: a kill leaves the old one); a
        worker that cannot write the run's path (a node without it) trains on without."""
        try:
            write_atomic_bytes(self.snapshot_path, blob)
        except OSError:
            pass


def is_done(root: Path, job: Job) -> bool:
    """Return whether `job` has finished in `root` (and is not to be redone)."""
    return not job.redo and (Path(root) / job.done).is_file()


def _run(item: tuple[Job, str, float]) -> tuple[str, JobOutput]:
    job, root, every_s = item
    return job.key, job.work(job.arg, JobContext(root, job.key, every_s))


def run_jobs(root: Path, jobs: Iterable[Job], *, executor: str = "local", workers: int = 1,
             on_done: Callable[[Job, JobOutput], None] | None = None,
             snapshot_every_s: float = 60.0) -> list[Job]:
    """Run every job of `jobs` not done in `root` on `executor` (at most `workers` at once);
    write each one's files as it returns (its `done` file last) and call `on_done(job,
    output)`; return the jobs that ran. Job keys must be distinct; long jobs save a snapshot
    at most every `snapshot_every_s` seconds (0: never)."""
    check_executor(executor, workers)
    root = Path(root).resolve()  # workers elsewhere must not resolve it against their own cwd
    jobs = list(jobs)
    by_key = {j.key: j for j in jobs}
    if len(by_key) != len(jobs):
        raise ValueError("job keys must be distinct")
    todo = [j for j in jobs if not is_done(root, j)]
    if not todo:
        return []
    root.mkdir(parents=True, exist_ok=True)
    for tmp in (root / SNAPSHOTS).glob(".*.tmp"):  # a snapshot a killed worker half wrote
        tmp.unlink(missing_ok=True)
    every = snapshot_every_s if snapshot_every_s > 0 else math.inf
    with make_executor(executor, min(workers, len(todo))) as ex:
        for key, output in ex.map(_run, [(j, str(root), every) for j in todo]):
            job = by_key[key]
            _write(root, job, output)
            if on_done is not None:
                on_done(job, output)
    with contextlib.suppress(OSError):  # only when no snapshot of another job is left
        (root / SNAPSHOTS).rmdir()
    return todo


def _write(root: Path, job: Job, output: JobOutput) -> None:
    if job.done not in output.files:
        raise ValueError(f"job {job.key} returned no {job.done}")
    for rel in sorted(output.files, key=lambda r: r == job.done):
        write_atomic_bytes(root / rel, output.files[rel])
    JobContext(str(root), job.key).snapshot_path.unlink(missing_ok=True)

