"""Attributing a run's failed episodes: which episodes, what it will cost, and the results
beside the run's episodes (`RUN/attribution/<condition>/<key>.json`, one file per episode,
written atomically by the job engine: a killed `coordbench attribute` goes on where it
stopped, on any executor). Replays never write into `RUN/episodes/`.
"""

from __future__ import annotations

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
    """One episode to attribute: its condition, case key and recorded outcome."""

    condition: str
    key: str
    outcome: float | None
    steps: int
    seats: int
    calls: int
    cost: float


def result_path(run: Path, condition: str, key: str, folder: str = FOLDER) -> Path:
    """Return where an episode's attribution is stored."""
    return Path(run) / folder / condition / f"{key}.json"


def targets(run: RunDir, q: Question, episodes: list[str] | None = None) -> list[Target]:
    """Return the episodes to attribute: those named (`condition/key` or a bare key), else
    every saved episode that failed under `q`; ConfigError names an unknown episode."""
    from coordbench.attribution.replay import outcome_of
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
        for key in run.episode_keys(cond):
            if wanted is not None and (cond, key) not in wanted:
                continue
            traj = run.load_episode(cond, key)
            value = outcome_of(suite, q.metric or piece.outcome, traj)
            if wanted is None and not failed(value, q):
                continue
            calls = [e for e in traj.events if isinstance(e, ModelCallEvent)]
            out.append(Target(cond, key, value, played_steps(traj), len(traj.header.team),
                              len(calls), float(sum(e.cost for e in calls))))
    return out


def replays_at_most(t: Target, q: Question) -> int:
    """Return the most replays attributing `t` takes: the plain replay, then per seat the
    replay from the first step and the search (log2 steps, or every step)."""
    search = t.steps if q.steps == "all" else math.ceil(math.log2(max(t.steps, 1))) + 1
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


def attribute_job(arg: EpisodeJob, ctx: JobContext) -> JobOutput:
    """Return the job's file: the episode's attribution JSON, or its refusal (the replay
    does not reproduce the recording: `refused` names the first differing step)."""
    run = RunDir.open(arg.run)
    recorded = run.load_episode(arg.condition, arg.key)
    try:
        result = attribute(Replayer(run, arg.condition, arg.key, arg.harness), recorded,
                           arg.question)
    except ReplayMismatch as e:
        result = {"episode": recorded.header.episode_id, "refused": str(e),
                  "question": asdict(arg.question)}
    result.update(condition=arg.condition, key=arg.key)
    name = f"{arg.condition}/{arg.key}.json"
    return JobOutput(files={name: (json.dumps(result, indent=1) + "\n").encode()},
                     value=result)


def _asked(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())["question"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def attribute_run(run: RunDir, ts: list[Target], q: Question, *, harness: Any = None,
                  executor: str = "local", workers: int = 1, folder: str = FOLDER
                  ) -> tuple[list[dict], list[str]]:
    """Attribute `ts` (skipping those already attributed with the same question); return
    (the targets' attributions, the one-line refusals of those whose replay differs). A
    study that asks several questions of one run keeps each in its own `folder`."""
    root = Path(run.path) / folder
    asked = {**asdict(q)}
    jobs = []
    for t in ts:
        path = result_path(run.path, t.condition, t.key, folder)
        old = _asked(path)
        same = old is not None and all(old.get(k) == asked[k] for k in _ASKED)
        jobs.append(Job(key=f"{t.condition}/{t.key}", done=f"{t.condition}/{t.key}.json",
                        work=attribute_job, redo=not same,
                        arg=EpisodeJob(str(run.path), t.condition, t.key, q, harness)))
    run_jobs(root, jobs, executor=executor, workers=workers)
    wanted = {(t.condition, t.key) for t in ts}
    results = [r for r in read_results(run.path, folder)
               if (r.get("condition"), r.get("key")) in wanted]
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

