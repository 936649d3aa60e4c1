"""The generated v1 instance set: reproducible, balanced, gated, solvable."""

import collections
import json

from coordbench.suites.mecobench.catalog import OBJECTS, TEMPLATES
from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
from coordbench.suites.mecobench.generator import draw_task, placement_gate
from coordbench.suites.mecobench.instances import (
    V1_SHA256,
    fingerprint,
    load_suite,
    suite_dicts,
    v1_plan,
    v1_raw,
)


def test_v1_is_regenerated_bit_for_bit():
    assert fingerprint(v1_raw()) == V1_SHA256


def test_v1_is_balanced_over_templates_and_subgoal_counts():
    plan = v1_plan()
    assert len(plan) == 96 and len(suite_dicts("v1")) == 192
    per_template = collections.Counter(t for _, t, _, _ in plan)
    assert set(per_template.values()) == {12} and set(per_template) == set(TEMPLATES)
    per_count = collections.Counter(k for _, _, k, _ in plan)
    assert set(per_count) == {2, 3, 4, 5, 6, 7} and set(per_count.values()) == {16}
    assert len({a for _, _, _, a in plan}) == 8
    assert len(OBJECTS) == 25


def test_every_case_loads_and_passes_the_gates():
    tasks = load_suite("v1")
    kinds = collections.Counter(t.structure for t in tasks)
    assert kinds == {"parallel": 96, "sequential": 96}
    for raw in v1_raw():
        assert placement_gate(raw) is None
        total = sum(raw["task_goal"]["0"].values())
        assert 2 <= total <= 7
        for prior in ("raw_goal", "goal_with_desc", "goal_with_location",
                      "goal_with_location_and_desc", "goal_with_location_and_desc_noise"):
            assert raw[prior]
    for t in tasks:
        if t.structure == "sequential":
            assert len(t.zones) == 2 and not set(t.zones[0]) & set(t.zones[1])
            assert t.handover_doors and t.required_handovers == 1


def test_oracle_solves_every_case_within_budget():
    for k, task in enumerate(load_suite("v1")):
        n = 2 if task.structure == "sequential" else 1 + k % 5
        tr = run_case(task, HouseholdSpec(task.structure, n, agents="oracle"), k, "x")
        assert tr.end.success, (k, task.structure, n)


def test_the_placement_gate_rejects_illegal_starts():
    raw = json.loads(json.dumps(draw_task(0, "afternoon_tea", 3, 0, 0)))
    goal = raw["goal_targets"][0]["id"]
    raw["task_locations"]["goal_objects"][0]["placement"]["target_id"] = goal
    assert "goal furniture" in placement_gate(raw)
