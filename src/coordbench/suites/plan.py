"""Run plans: the default benchmark (each family's `default_plan` section) as runner items."""

from __future__ import annotations

import copy
from typing import Any

from coordbench.errors import ConfigError
from coordbench.runner.family import families, family


def load_plan() -> dict[str, Any]:
    """Return the default benchmark: {family: its settings}, every registered family's
    `default_plan` (a fresh copy: the command's options override it)."""
    return {f.name: copy.deepcopy(f.default_plan) for f in families()
            if f.default_plan is not None and f.plan is not None}


def expand(plan: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items (suite, spec, limit), a progress label per item) for `plan`, in
    the families' registration order; a family missing from the plan (or set to null) is not
    run."""
    unknown = [name for name in plan if family(name) is None or family(name).plan is None]
    if unknown:
        raise ConfigError(f"the plan names no runnable family {', '.join(unknown)}")
    items: list[tuple] = []
    labels: list[str] = []
    for f in families():
        if plan.get(f.name):
            more, more_labels = f.get("plan")(plan[f.name])
            items += more
            labels += more_labels
    return items, labels
