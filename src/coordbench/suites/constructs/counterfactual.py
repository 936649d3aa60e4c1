"""The constructs' part in failure attribution (docs/attribution.md): a condition's spec from
its manifest fields, the references (`rule`: the constructs' rule agent takes the seat
over), and success (SR)."""

from __future__ import annotations

from typing import Any

from coordbench.runner.counterfactual import Counterfactual
from coordbench.suites.constructs.episode import ConstructSpec
from coordbench.suites.constructs.suite import ConstructCondition

_SELECTION = ("subset", "construct", "team", "limit", "instances_file")
_OUTSIDE = ("suite", "max_reply_tokens", *_SELECTION)


def spec_of(fields: dict[str, Any]) -> ConstructCondition:
    """Return the condition a manifest entry records."""
    planners = ConstructSpec(**{k: v for k, v in fields.items() if k not in _OUTSIDE})
    return ConstructCondition(planners, **{k: fields[k] for k in _SELECTION if k in fields})


COUNTERFACTUAL = Counterfactual(spec=spec_of, references=("rule",), outcome="SR")
