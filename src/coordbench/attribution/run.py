"""Attributing a run's failed episodes: which episodes, what it will cost, and the results
beside the run's episodes (`RUN/attribution/<condition>/<key>.json`, one file per episode,
written atomically by the job engine: a killed `coordbench attribute` goes on where it
stopped, on any executor). Replays never write into `RUN/episodes/`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coordbench.attribution.episode import (
    Question,
    ReplayMismatch,
    attribute,
    failed,
    played_steps,
)
from coordbench.attribution.replay import Replayer
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.errors import ConfigError
from coordbench.runner.jobs import Job, JobContext, JobOutput, run_jobs

FOLDER = "attribution"
_ASKED = ("metric", "threshold", "steps", "reference")  # a stored result answers the same question


@dataclass(frozen=True)
class Target:
    """One episode to attribute: its condition, case key and recorded outcome, its size,
    its recorded model calls and their cost, and the digest of its file."""

    condition: str
    key: str
    outcome: float | None
    steps: int
    seats: int
    calls: int
    cost: float
    digest: str = ""


def recording_digest(run: RunDir, condition: str, key: str) -> str:
    """Return the sha256 of an episode's file (a stored attribution answers for it only
    while the file is the same)."""
    return hashlib.sha256(run.episode_path(condition, key).read_bytes()).hexdigest()


def result_path(run: Path, condition: str, key: str, folder: str = FOLDER) -> Path:
    """Return where an episode's attribution is stored."""
    return Path(run) / folder / condition / f"{key}.json"


def targets(run: RunDir, q: Question, episodes: list[str] | None = None) -> list[Target]:
    """Return the episodes to attribute: those named (`condition/key` or a bare key), else
    every saved episode that failed under `q`; ConfigError names an unknown episode."""
    from coordbench.runner.family import family, family_of

    wanted: list[tuple[str, str]] | None = None
    if episodes:
        wanted = [run.find_episode(e) for e in episodes]
    out = []
    for cond, fields in run.conditions.items():
        name = family_of(cond, fields)
        fam = family(name) if name else None
        piece = fam.get("counterfactual") if fam is not None else None
        if piece is None:
            continue
        if q.reference not in (None, "clean", *piece.references):
            raise ConfigError(f"--reference {q.reference}: a {name} seat's references are "
                              f"{', '.join(['clean', *piece.references])}")
        suite = fam.get("suite")
        metric = q.metric or piece.outcome
        for key in run.episode_keys(cond):
            if wanted is not None and (cond, key) not in wanted:
                continue
            traj = run.load_episode(cond, key)
            known = suite.metrics(traj)
            if metric not in known:
                raise ConfigError(f"--metric {metric}: a {name} episode has no such metric; "
                                  f"choose from {', '.join(sorted(known))}")
            value = None if known[metric] is None else float(known[metric])
            if not failed(value, q):
                if wanted is None:
                    continue
                raise ConfigError(f"episode {cond}/{key} did not fail ({metric} {value} is not "
                                  f"below {q.threshold:g}): nothing to attribute")
            calls = [e for e in traj.events if isinstance(e, ModelCallEvent)]
            out.append(Target(cond, key, value, played_steps(traj), len(traj.header.team),
                              len(calls), float(sum(e.cost for e in calls)),
                              recording_digest(run, cond, key)))
    return out


def replays_at_most(t: Target, q: Question) -> int:
    """Return the most replays attributing `t` takes: the plain replay, then per seat the
    replay from the first step and the search over steps 0..T (log2, or every step)."""
    asked = t.steps + 1  # steps 0..T, T the step the episode ended at
    search = asked if q.steps == "all" else math.ceil(math.log2(asked)) + 1
    return 1 + t.seats * search


def estimate(ts: list[Target], q: Question) -> dict[str, float]:
    """Return {"episodes", "replays", "calls", "cost"}: the most replays, and the model calls
    and cost they make if no reply is in the cache (each replay calls what its recording
    called; the cache serves every call a replay repeats, so the plain replay of a run
    played with the cache on costs nothing)."""
    replays = sum(replays_at_most(t, q) for t in ts)
    calls = sum(replays_at_most(t, q) * t.calls for t in ts)
    cost = sum(replays_at_most(t, q) * t.cost for t in ts)
    return {"episodes": len(ts), "replays": replays, "calls": calls, "cost": round(cost, 6)}


@dataclass(frozen=True)
class EpisodeJob:
    """What one attribution job needs (picklable: it travels to a worker)."""

    run: str
    condition: str
    key: str
    question: Question
    harness: Any = None
    digest: str = ""


def attribute_job(arg: EpisodeJob, ctx: JobContext) -> JobOutput:
    """Return the job's file: the episode's attribution JSON, or its refusal (the replay
    does not reproduce the recording: `refused` names the first differing step)."""
    run = RunDir.open(arg.run)
    recorded = run.load_episode(arg.condition, arg.key)
    replayer = Replayer(run, arg.condition, arg.key, arg.harness)
    try:
        result = attribute(replayer, recorded, arg.question)
    except ReplayMismatch as e:
        result = {"episode": recorded.header.episode_id, "refused": str(e),
                  "question": asdict(arg.question)}
    finally:
        replayer.close()
    result.update(condition=arg.condition, key=arg.key, recording_sha256=arg.digest)
    name = f"{arg.condition}/{arg.key}.json"
    return JobOutput(files={name: (json.dumps(result, indent=1) + "\n").encode()},
                     value=result)


def _answers(path: Path, q: Question, digest: str) -> bool:
    """Return whether the result stored at `path` answers `q` about the recording whose
    file has `digest` (a changed file, or another question, is attributed again)."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    asked = asdict(q)
    return (isinstance(old, dict) and old.get("recording_sha256") == digest
            and isinstance(old.get("question"), dict)
            and all(old["question"].get(k) == asked[k] for k in _ASKED))


def pending(run: RunDir, ts: list[Target], q: Question, folder: str = FOLDER) -> list[Target]:
    """Return the targets whose stored result does not answer `q` (what a run of
    `attribute_run` will replay)."""
    return [t for t in ts
            if not _answers(result_path(run.path, t.condition, t.key, folder), q, t.digest)]


def attribute_run(run: RunDir, ts: list[Target], q: Question, *, harness: Any = None,
                  executor: str = "local", workers: int = 1, folder: str = FOLDER
                  ) -> tuple[list[dict], list[str]]:
    """Attribute `ts` (skipping those whose stored result answers the same question about
    the same recording); return (the targets' attributions, each with `reused` where it was
    stored before, and the one-line refusals of those whose replay differs). A study that
    asks several questions of one run keeps each in its own `folder`."""
    root = Path(run.path) / folder
    todo = {(t.condition, t.key) for t in pending(run, ts, q, folder)}
    jobs = [Job(key=f"{t.condition}/{t.key}", done=f"{t.condition}/{t.key}.json",
                work=attribute_job, redo=(t.condition, t.key) in todo,
                arg=EpisodeJob(str(run.path), t.condition, t.key, q, harness, t.digest))
            for t in ts]
    run_jobs(root, jobs, executor=executor, workers=workers)
    wanted = {(t.condition, t.key) for t in ts}
    results = [r for r in read_results(run.path, folder)
               if (r.get("condition"), r.get("key")) in wanted]
    for r in results:
        r["reused"] = (r.get("condition"), r.get("key")) not in todo
    return ([r for r in results if "refused" not in r],
            [str(r["refused"]) for r in results if "refused" in r])


def read_results(run: Path | str, folder: str = FOLDER) -> list[dict[str, Any]]:
    """Return every stored attribution (and refusal: a `refused` key) of the run at `run`,
    in condition and key order (a file that cannot be read is left out)."""
    out = []
    for path in sorted((Path(run) / folder).glob("*/*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def check_question(q: Question) -> None:
    """Raise ConfigError naming a search mode or threshold out of range."""
    if q.steps not in ("all", "binary"):
        raise ConfigError(f"--steps {q.steps}: choose all or binary")
    if not math.isfinite(q.threshold):
        raise ConfigError(f"--threshold {q.threshold}: must be a finite number")

