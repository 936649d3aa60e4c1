"""One episode's payload for the page: header, timeline, per-step picture, metrics; or, for
an episode that cannot be loaded, the reason."""

from __future__ import annotations

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
    }


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
