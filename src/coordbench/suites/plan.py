"""Run plans: the default benchmark (`suites/data/default_plan.json`) as runner items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_PLAN = Path(__file__).parent / "data" / "default_plan.json"


def load_plan(path: Path = DEFAULT_PLAN) -> dict[str, Any]:
    """Return a plan file's families and their settings."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def expand(plan: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items (suite, spec, limit), a progress label per item) for `plan`;
    a family missing from the plan (or set to null) is not run. A household or construct
    section's optional `limit` keeps the first cases of each condition."""
    items: list[tuple] = []
    labels: list[str] = []
    if plan.get("stat"):
        from coordbench.suites.stat.suite import SUITE, StatEvalSpec

        p = plan["stat"]
        for c in p["configs"]:
            for pol in p["policies"]:
                items.append((SUITE, StatEvalSpec(c, pol, p["layouts"], p["seed"]),
                              p["episodes"]))
                labels.append(f"{c} {pol}")
    if plan.get("mecobench"):
        from coordbench.suites.mecobench.runner import HouseholdSpec
        from coordbench.suites.mecobench.suite import SUITE as HH
        from coordbench.suites.mecobench.suite import household_condition

        p = plan["mecobench"]
        for t in p["teams"]:
            for proto in p["protocols"]:
                spec = HouseholdSpec(t["structure"], t["team"], proto, p["agents"])
                items.append((HH, household_condition(None, p["instance_set"], spec),
                              p.get("limit")))
                labels.append(f"household {t['structure']} n={t['team']} {proto}")
    if plan.get("constructs"):
        from coordbench.suites.constructs.runner import ConstructSpec
        from coordbench.suites.constructs.suite import SUITE as CS
        from coordbench.suites.constructs.suite import ConstructCondition

        p = plan["constructs"]
        for planner in p["planners"]:
            items.append((CS, ConstructCondition(ConstructSpec(planner, p["agents"]),
                                                 p["subset"]), p.get("limit")))
            labels.append(f"constructs {p['subset']} {planner}")
    if plan.get("physical") and plan["physical"]["rollouts"] > 0:
        from coordbench.envs.physical.tasks import TASKS
        from coordbench.suites.physical.suite import SUITE as PH
        from coordbench.suites.physical.suite import PhysicalSpec

        p = plan["physical"]
        tasks = list(TASKS) if p["tasks"] == "all" else p["tasks"]
        for task in tasks:
            for pol in p["policies"]:
                items.append((PH, PhysicalSpec(task, pol), p["rollouts"]))
                labels.append(f"physical {task} {pol}")
    return items, labels
