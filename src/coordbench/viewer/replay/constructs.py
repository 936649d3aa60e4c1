"""Construct states: rebuild the instance from the manifest's selection (subset, construct,
team or instance file) and the instance's index in that selection (the key), check it is the
recorded task id, then replay on the household engine with the recorded seed and landing
order.
The picture adds the buffers' loads, who holds the knife and each agent's zone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory

from . import household
from .common import Picture, unavailable


def find_instance(spec: dict, key: str, task_id: str) -> dict[str, Any] | str:
    """Return the instance dict of case `key` under condition `spec`, or why not."""
    k = int(key[4:]) if key.startswith("inst") and key[4:].isdigit() else -1
    if k < 0:
        return f"episode key {key!r} names no instance index"
    if spec.get("instances_file"):
        from coordbench.suites.constructs.suite import load_instance_file

        path = Path(spec["instances_file"])
        if not path.is_file():
            return f"the instance file {path} is not readable from here"
        # the key is the instance's index in the file, with or without a --limit (a sample
        # keeps the selection's indices; a run of the first K had them too)
        raws = load_instance_file(path)
        raw = raws[k] if k < len(raws) else None
    else:
        from coordbench.suites.constructs.instances import instance_at

        # only instance k is built: instances are generated on first use
        raw = instance_at(spec.get("subset", "all"), spec.get("construct"), spec.get("team"),
                          k)
    if raw is None:
        return f"the condition's selection has no instance {k}"
    if str(raw.get("task_id")) != task_id:
        return f"instance {k} is {raw.get('task_id')}, the episode records {task_id}"
    return raw


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the construct picture (household scene plus buffers, knife, zones), replayed."""
    from coordbench.suites.constructs.episode import load_instance, with_capacity

    spec = run.conditions.get(condition, {})
    key = traj.header.episode_id.rsplit("/", 1)[-1]
    raw = find_instance(spec, key, traj.header.task_id)
    if isinstance(raw, str):
        return unavailable("constructs", raw)
    # the condition's --buffer-capacity, as the episode was played
    raw = with_capacity(raw, spec.get("buffer_capacity"))
    task, info = load_instance(raw, traj.header.task_id)
    n = int(traj.header.params.get("agents", len(traj.header.team)))
    order = list(range(n)) if spec.get("order", "index") == "index" else list(range(n))[::-1]
    knife = info.get("knife")
    pic = household.replay("constructs", task, traj, n, traj.header.seed, order,
                           knife=knife if isinstance(knife, int) else None,
                           source=f"{spec.get('subset', '')} instance {k_of(key)}")
    pic["static"]["construct"] = {k: v for k, v in info.items() if k != "targets"}
    return pic


def k_of(key: str) -> int:
    """Return the instance index in an episode key (inst0007 -> 7)."""
    return int(key[4:])
