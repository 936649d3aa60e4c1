"""STAT's part in failure attribution (docs/attribution.md): a condition's spec from its
manifest fields, the references (`hungarian`: the per-step Hungarian assignment's pick for
the seat, in teams of minds and of allocators; `rule`: a STAT rule mind, in teams of
minds), and success (every task completed)."""

from __future__ import annotations

from typing import Any

from coordbench.runner.counterfactual import Counterfactual
from coordbench.suites.stat.suite import StatEvalSpec

_OUTSIDE = ("suite", "max_reply_tokens", "batch")


def spec_of(fields: dict[str, Any]) -> StatEvalSpec:
    """Return the condition a manifest entry records."""
    return StatEvalSpec(**{k: v for k, v in fields.items() if k not in _OUTSIDE})


COUNTERFACTUAL = Counterfactual(spec=spec_of, references=("hungarian", "rule"),
                                outcome="success")
