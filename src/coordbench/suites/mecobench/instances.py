"""Versioned MECoBench-style instance sets, regenerated bit for bit from their seeds.

v1: 96 tasks (12 per template, subgoal counts 2-7 cycling, the 8 apartments in turn), each in
its parallel and sequential form: 192 cases. `V1_SHA256` pins the exact content; a generator
change that alters it must ship as a new version.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from coordbench.envs.household.task import HouseholdTask, task_from_dict
from coordbench.errors import ConfigError

from .catalog import TEMPLATES
from .generator import as_structure, generate

# the MECoBench example task files shipped with coordbench
EXAMPLES = Path(__file__).resolve().parent.parent / "datasets" / "mecobench"
PARALLEL_EXAMPLES = EXAMPLES / "parallel_examples.json"
SEQUENTIAL_EXAMPLES = EXAMPLES / "sequential_examples.json"

SUITES = ("v1",)
V1_TASKS = 96
V1_SHA256 = "545f0b7f2983e88d50309ed3a8f2a49e442a5bc0ccc5267cada2b5c40fb1fcd3"


def v1_plan() -> list[tuple[int, str, int, int]]:
    """Return (index, template, subgoal count, apartment) for the 96 v1 tasks."""
    names = list(TEMPLATES)
    return [(i, names[i % 8], 2 + (i // 8) % 6, (i // 8 + i) % 8) for i in range(V1_TASKS)]


@lru_cache(maxsize=1)
def v1_raw() -> tuple[dict[str, Any], ...]:
    """Return the 96 generated task dicts (both structures' fields), cached per process."""
    return tuple(generate(*row)[0] for row in v1_plan())


def fingerprint(raw: tuple[dict[str, Any], ...]) -> str:
    """Return the sha256 of a suite's canonical JSON."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()


def suite_dicts(name: str) -> list[dict[str, Any]]:
    """Return every case of a suite as MECoBench task dicts (parallel first, then sequential)."""
    if name not in SUITES:
        raise ConfigError(f"unknown suite {name!r}; available: {', '.join(SUITES)}")
    raw = v1_raw()
    return ([as_structure(t, "parallel") for t in raw]
            + [as_structure(t, "sequential") for t in raw])


def load_suite(name: str) -> list[HouseholdTask]:
    """Return every case of a suite as HouseholdTasks."""
    return [task_from_dict(t, f"suite {name}[{k}]") for k, t in enumerate(suite_dicts(name))]


def check_playable(tasks: list[HouseholdTask], team: int, prior: str) -> None:
    """Raise ConfigError (naming the task and its file) unless a team of `team` agents can
    play every task under `prior`: no more agents than the task supports, one per zone in
    sequential tasks, and a goal text for the prior."""
    for t in tasks:
        if not 1 <= team <= t.max_agents:
            raise ConfigError(f"--team must be between 1 and {t.max_agents} for {t.source}, "
                              f"got {team}")
        if t.zones and len(t.zones) != team:
            raise ConfigError(f"{t.source}: a sequential task gives one zone per agent; it "
                              f"has {len(t.zones)}, --team is {team}")
        t.goal_text(prior)
