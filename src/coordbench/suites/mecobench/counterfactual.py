"""MECoBench's part in failure attribution (docs/attribution.md): a condition's spec from its
manifest fields, the references (`rule`: a household rule mind that shadowed the seat), and
success (SR)."""

from __future__ import annotations

from typing import Any

from coordbench.runner.counterfactual import Counterfactual
from coordbench.suites.mecobench.episode import HouseholdSpec
from coordbench.suites.mecobench.suite import MecobenchCondition, MecobenchResources

_OUTSIDE = ("suite", "source", "tasks_file", "instance_set", "max_steps", "max_reply_tokens")


def spec_of(fields: dict[str, Any]) -> MecobenchCondition:
    """Return the condition a manifest entry records."""
    household = HouseholdSpec(**{k: v for k, v in fields.items() if k not in _OUTSIDE})
    return MecobenchCondition(household, fields["source"], fields.get("tasks_file"),
                              fields.get("instance_set"))


def resources_of(fields: dict[str, Any], harness: Any) -> MecobenchResources:
    """Return what a replay plays with: the harness and the step cap the run was played
    with (views are not rendered again: a replay's model sees the prompt it saw)."""
    return MecobenchResources(harness=harness, max_reply_tokens=fields.get("max_reply_tokens"),
                              max_steps=fields.get("max_steps"))


COUNTERFACTUAL = Counterfactual(spec=spec_of, references=("rule",), outcome="SR",
                                resources=resources_of)
