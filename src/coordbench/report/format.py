"""Estimates as text and JSON, the same in every table, payload and report."""

from __future__ import annotations

import math
from typing import Any

from coordbench.core.stats import Estimate


def json_number(x: float | None) -> float | None:
    """Return `x` as JSON can hold it (NaN -> None)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def estimate_json(e: Estimate) -> dict[str, Any]:
    """Return {"mean", "ci95", "n"} with NaN as None."""
    return {"mean": json_number(e.mean), "ci95": json_number(e.ci95), "n": e.n}


def pct(e: dict[str, Any] | Estimate) -> str:
    """Return a rate as 'xx.x% ± y.y' (n/a where there is no value)."""
    if isinstance(e, Estimate):
        e = estimate_json(e)
    if e["mean"] is None:
        return "n/a"
    ci = f" ± {100 * e['ci95']:.1f}" if e.get("ci95") is not None else ""
    return f"{100 * e['mean']:.1f}%{ci}"


def fmt(e: Estimate, digits: int = 3) -> str:
    """Return 'mean ± ci95' with `digits` decimals, or n/a over no units."""
    return "n/a" if e.n == 0 else e.fmt(digits)


def signed(x: float | None) -> str:
    """Return a difference with its sign (n/a for None)."""
    return "n/a" if x is None else f"{x:+.3f}"
