"""Run plans: the default benchmark (each family's `default_plan` section) as runner items."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from coordbench.errors import ConfigError
from coordbench.runner.family import families, family


def load_plan(path: Path | None = None) -> dict[str, Any]:
    """Return a plan: {family: its settings}; the default benchmark (every registered
    family's `default_plan`, a fresh copy) or a plan file's content."""
    if path is not None:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    return {f.name: copy.deepcopy(f.default_plan) for f in families()
            if f.default_plan is not None and f.plan is not None}


def expand(plan: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items (suite, spec, limit), a progress label per item) for `plan`, in
    the families' registration order; a family missing from the plan (or set to null) is not
    run."""
    unknown = [name for name in plan if name != "description"
               and (family(name) is None or family(name).plan is None)]
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
