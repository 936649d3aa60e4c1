"""MECoBench states: find the episode's task from what the manifest and header record (the
task source, the case index in the key, the task id), then replay it on the household
engine with the recorded seed and team size."""

from __future__ import annotations

import threading
from functools import lru_cache

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.envs.household.task import HouseholdTask

from . import household
from .common import Picture, unavailable

# one load of a task source at a time: requests arriving while the viewer warms up wait for
# that load instead of each running their own (seconds of CPU each, for one result)
_LOADING = threading.Lock()


@lru_cache(maxsize=8)
def _tasks(tasks_file: str | None, instance_set: str | None, structure: str
           ) -> tuple[HouseholdTask, ...]:
    from coordbench.suites.mecobench.suite import load_source

    return tuple(load_source(tasks_file, instance_set, structure)[1])


def find_task(spec: dict, key: str, task_id: str) -> HouseholdTask | str:
    """Return the task of case `key` under condition `spec`, or why it cannot be found."""
    tasks_file, instance_set = spec.get("tasks_file"), spec.get("instance_set")
    structure = spec.get("structure")
    if not structure:
        return "the manifest records no structure for this condition"
    if tasks_file is None and instance_set is None and spec.get("source", "").startswith(
            "suite-"):
        instance_set = spec["source"][len("suite-"):]
    try:
        with _LOADING:
            tasks = _tasks(tasks_file, instance_set, structure)
    except Exception as e:  # noqa: BLE001 - any failure to load is reported, not raised
        return f"cannot load the task source ({tasks_file or instance_set}): {e}"
    k = int(key[4:]) if key.startswith("case") and key[4:].isdigit() else -1
    if 0 <= k < len(tasks) and str(tasks[k].task_id) == task_id:
        return tasks[k]
    found = [t for t in tasks if str(t.task_id) == task_id]
    if len(found) == 1:
        return found[0]
    return f"task {task_id} is not (or not uniquely) in {tasks_file or instance_set}"


def picture(run: RunDir, condition: str, traj: Trajectory) -> Picture:
    """Return the household picture of a MECoBench episode (replayed), or why not."""
    spec = run.conditions.get(condition, {})
    key = traj.header.episode_id.rsplit("/", 1)[-1]
    task = find_task(spec, key, traj.header.task_id)
    if isinstance(task, str):
        return unavailable("household", task)
    n = int(traj.header.params.get("agents", len(traj.header.team)))
    return household.replay("household", task, traj, n, traj.header.seed,
                            source=str(traj.header.params.get("source", "")))


def warm(spec: dict) -> None:
    """Load a condition's task source once (seconds for an instance set), so the first
    episode a person opens replays quickly."""
    find_task(spec, "case0000", "")
