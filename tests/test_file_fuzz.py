"""Seeded mutation fuzz of task and instance files: every mutated file is either refused on
load with one ConfigError line naming the file, or accepted and then plays an episode (and
its metrics) without an exception."""

from __future__ import annotations

import asyncio
import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coordbench.envs.household.task import load_tasks
from coordbench.errors import ConfigError
from coordbench.suites.mecobench.instances import (
    PARALLEL_EXAMPLES,
    SEQUENTIAL_EXAMPLES,
    check_playable,
)

N_TASK_MUTATIONS = 200  # each plays a full household episode on a 300-400 node apartment
N_INSTANCE_MUTATIONS = 800  # construct instances are small
TASK_SEED, INSTANCE_SEED = 20260301, 20260302
REPLACEMENTS: list[Any] = [None, -1, 0, 1, 2, 3, 10**9, -10**9, 1.5, "", "x", "kitchen", [],
                           {}, True, [1, 2], {"a": 1}, "0"]


def _paths(obj: Any, pre: tuple = ()) -> list[tuple]:
    out = [pre]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, pre + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, pre + (i,))
    return out


def mutate(data: Any, rng: np.random.Generator) -> Any:
    """Return a copy of `data` with one value deleted, replaced, nudged, resized or edited;
    scene-graph values are picked less often than the task's own (fewer, denser) fields."""
    data = copy.deepcopy(data)
    paths = [p for p in _paths(data) if p]
    light = [p for p in paths if "init_graph" not in p]
    heavy = [p for p in paths if "init_graph" in p]
    pool = light if (rng.random() < 0.7 or not heavy) else heavy
    p = pool[int(rng.integers(len(pool)))]
    parent = data
    for k in p[:-1]:
        parent = parent[k]
    key, value = p[-1], parent[p[-1]]
    op = int(rng.integers(6))
    if op == 0:
        del parent[key]
    elif op == 2 and isinstance(value, int | float) and not isinstance(value, bool):
        parent[key] = value + int(rng.integers(-3, 4))
    elif op == 3 and isinstance(value, list) and value:
        parent[key] = value * 2 if rng.random() < 0.5 else value[:-1]
    elif op == 4 and isinstance(value, str):
        parent[key] = value[::-1] if rng.random() < 0.5 else value + "x"
    else:
        parent[key] = REPLACEMENTS[int(rng.integers(len(REPLACEMENTS)))]
    return data


def mutations(base: list[dict], n: int, seed: int, tmp: Path, prefix: str):
    """Yield (path, mutated object) for n files of one mutated object each (1-3 mutations)."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        item = base[int(rng.integers(len(base)))]
        for _ in range(int(rng.integers(1, 4))):
            item = mutate(item, rng)
        path = tmp / f"{prefix}{i:04d}.json"
        path.write_text(json.dumps([item]))
        yield path


def refused(e: ConfigError, path: Path) -> bool:
    """Return whether a refusal is one line naming the file."""
    return path.name in str(e) and "\n" not in str(e)


@pytest.fixture(scope="module")
def example_tasks() -> list[dict]:
    return [json.loads(PARALLEL_EXAMPLES.read_text())[0],
            json.loads(SEQUENTIAL_EXAMPLES.read_text())[0]]


def test_mutated_mecobench_task_files_are_refused_or_played(tmp_path, example_tasks):
    from coordbench.metrics.household import episode_metrics
    from coordbench.suites.mecobench.episode import HouseholdSpec, arun_case

    counts: Counter[str] = Counter()
    protocols = ("none", "broadcast", "leader")
    for k, path in enumerate(mutations(example_tasks, N_TASK_MUTATIONS, TASK_SEED, tmp_path,
                                       "task")):
        try:
            tasks = load_tasks(path)
            check_playable(tasks, 2, "full")
        except ConfigError as e:
            assert refused(e, path), str(e)
            counts["refused"] += 1
            continue
        for task in tasks:
            spec = HouseholdSpec(task.structure, 2, protocols[k % 3] if task.structure ==
                                 "parallel" else "none", "oracle" if k % 4 == 0 else "rule")
            tr = asyncio.run(arun_case(task, spec, k, f"fuzz/{path.stem}", max_steps=12))
            episode_metrics(tr)
        counts["accepted"] += 1
    assert counts["accepted"] + counts["refused"] == N_TASK_MUTATIONS
    # the fuzz must exercise both outcomes, or it tests nothing
    assert counts["accepted"] > N_TASK_MUTATIONS // 5 and counts["refused"] > 10, counts


def test_mutated_construct_instance_files_are_refused_or_played(tmp_path):
    from coordbench.metrics.constructs import episode_metrics
    from coordbench.suites.constructs.episode import ConstructSpec, run_construct
    from coordbench.suites.constructs.instances import TEAMS, generate
    from coordbench.suites.constructs.suite import load_instance_file
    from coordbench.suites.constructs.task_families import CONSTRUCTS, TASK_FAMILIES

    # one gated instance per construct and team size (as the v1 set draws them): every
    # construct's fields get mutated, without generating all 900
    base = [generate(next(f for f, (c, _, teams) in TASK_FAMILIES.items()
                          if c == construct and team in teams), team, 0)
            for construct in CONSTRUCTS for team in TEAMS]
    counts: Counter[str] = Counter()
    planners = (("central", "rule"), ("decentralized", "rule"), ("decentralized_comm", "rule"),
                ("central", "oracle"), ("decentralized", "oracle"))
    for k, path in enumerate(mutations(base, N_INSTANCE_MUTATIONS, INSTANCE_SEED, tmp_path,
                                       "inst")):
        try:
            raws = load_instance_file(path)
        except ConfigError as e:
            assert refused(e, path), str(e)
            counts["refused"] += 1
            continue
        for raw in raws:
            planner, agents = planners[k % len(planners)]
            tr = run_construct(raw, ConstructSpec(planner, agents, seed=k), f"fuzz/{k}")
            episode_metrics(tr)
        counts["accepted"] += 1
    assert counts["accepted"] + counts["refused"] == N_INSTANCE_MUTATIONS
    assert counts["accepted"] > N_INSTANCE_MUTATIONS // 10 and counts["refused"] > 10, counts


@pytest.mark.parametrize("field, value", [
    ("handover_chain", "delete"), ("handover_chain", None), ("handover_chain", []),
    ("required_handover_count", None)])
def test_a_sequential_task_without_its_chain_or_count_plays(tmp_path, example_tasks, field,
                                                            value):
    from coordbench.suites.mecobench.episode import HouseholdSpec, arun_case

    task = copy.deepcopy(example_tasks[1])
    if value == "delete":
        del task["room_constraints"][field]
    else:
        task["room_constraints"][field] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps([task]))
    (loaded,) = load_tasks(path)
    # the door joining the two zones is found from the zones when no chain names it
    assert loaded.handover_doors == load_tasks(SEQUENTIAL_EXAMPLES)[0].handover_doors
    for agents in ("rule", "oracle"):
        tr = asyncio.run(arun_case(loaded, HouseholdSpec("sequential", 2, "broadcast", agents),
                                   0, "fuzz/x", max_steps=40))
        assert tr.end is not None
