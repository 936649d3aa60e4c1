"""One episode's payload for the page: header, timeline, per-step picture, metrics, its
counterfactual attribution where `coordbench attribute` stored one; or, for an episode that
cannot be loaded, the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.errors import RunDirError

from . import replay, timeline
from .metrics import episode_metrics, episode_profile


def payload(run: RunDir, condition: str, key: str) -> dict[str, Any]:
    """Return everything the page draws for episode `key` of `condition`; RunDirError (one
    line naming the file) if the file cannot be read as a complete trajectory."""
    if condition not in run.conditions:
        raise RunDirError(f"no condition {condition!r} in {run.path}")
    traj = run.load_episode(condition, key)
    metrics, metrics_error = episode_metrics(traj)
    profile, profile_error = episode_profile(traj)
    return {
        "id": traj.header.episode_id, "run": run.path.name, "condition": condition,
        "key": key, "suite": traj.header.suite,
        "header": traj.header.model_dump(mode="json"),
        "timeline": timeline.build(traj),
        "picture": replay.picture(run, condition, traj),
        "metrics": metrics, "metrics_error": metrics_error,
        "profile": profile, "profile_error": profile_error,
        "prompts": prompts(run, traj),
        "attribution": attribution(run, condition, key, traj),
    }


def attribution_path(run: RunDir, condition: str, key: str) -> Path | None:
    """Return where `coordbench attribute` stores the episode's attribution (None for a run
    never attributed: then the replay machinery `attribution.run` loads is not imported)."""
    if not (Path(run.path) / "attribution").is_dir():  # attribution.run.FOLDER
        return None
    from coordbench.attribution.run import result_path

    return result_path(run.path, condition, key)


def attribution(run: RunDir, condition: str, key: str, traj: Trajectory) -> dict[str, Any] | None:
    """Return the episode's stored attribution for the timeline: {"responsible": [{"seat",
    "agent" (its lane: the seat's index in the team, None if the team has no such seat),
    "step", "reference", "blame", "rescue_rate"}], "outcome", "steps", "replays", "calls",
    "cost", "question"}, or {"refused": why} where its replay differed from the recording;
    None where the episode was never attributed (or its file cannot be read)."""
    path = attribution_path(run, condition, key)
    if path is None:
        return None
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict):
        return None
    if "refused" in stored:
        return {"refused": str(stored["refused"]), "question": stored.get("question")}
    lanes = {a.id: i for i, a in enumerate(traj.header.team)}
    responsible = [
        {"seat": r.get("seat"), "agent": lanes.get(r.get("seat")), "step": r.get("step"),
         "reference": r.get("reference"), "blame": r.get("blame"),
         "rescue_rate": r.get("rescue_rate")}
        for r in stored.get("responsible") or [] if isinstance(r, dict)]
    return {"responsible": responsible,
            **{k: stored.get(k) for k in ("outcome", "steps", "replays", "calls", "cost",
                                          "question")}}


def prompts(run: RunDir, traj: Trajectory) -> dict[str, Any]:
    """Return {request hash: stored prompt ({"model", "messages"}) or the reason it cannot be
    shown} for every model call of the episode (runs written before coordbench stored
    prompts have none: the page says so)."""
    out: dict[str, Any] = {}
    for call in traj.steps(ModelCallEvent):
        h = call.request_hash
        if h in out:
            continue
        try:
            out[h] = run.load_prompt(h)
        except RunDirError as e:
            out[h] = {"unavailable": str(e)}
    return out
