"""Estimates as text and JSON, the same in every table, payload and report."""

from __future__ import annotations

import math
from typing import Any

from coordbench.core.stats import Estimate, few


def json_number(x: float | None) -> float | None:
    """Return `x` as JSON can hold it (NaN -> None)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def estimate_json(e: Estimate) -> dict[str, Any]:
    """Return {"mean", "ci95", "n", "lo", "hi", "interval"} with NaN as None (lo/hi: the
    interval's ends; "interval": t, t-clipped or wilson)."""
    return {"mean": json_number(e.mean), "ci95": json_number(e.ci95), "n": e.n,
            "lo": json_number(e.lo), "hi": json_number(e.hi), "interval": e.method}


CONTRACT = ("mean", "ci95", "n", "lo", "hi")


def contract_json(payload: Any) -> Any:
    """Return `payload` with every estimate as {"mean", "ci95", "n", "lo", "hi"}: the
    commands' `--json` contract, {"mean", "ci95", "n"}, with the interval's ends beside the
    half-width (results.json also keeps which interval it is)."""
    if isinstance(payload, dict):
        if "interval" in payload and all(k in payload for k in CONTRACT):
            return {k: payload[k] for k in CONTRACT}
        return {k: contract_json(v) for k, v in payload.items()}
    if isinstance(payload, list):
        return [contract_json(v) for v in payload]
    return payload


def pct(e: dict[str, Any] | Estimate) -> str:
    """Return a rate as 'xx.x% ± y.y', or 'xx.x% [lo, hi]' when its interval is a Wilson
    or clipped one (n/a where there is no value; noted when n is too small)."""
    if isinstance(e, Estimate):
        e = estimate_json(e)
    if e["mean"] is None:
        return "n/a"
    if e.get("ci95") is None:
        ci = ""
    elif e.get("interval", "t") != "t" and e.get("lo") is not None:
        ci = f" [{100 * e['lo']:.1f}, {100 * e['hi']:.1f}]"
    else:
        ci = f" ± {100 * e['ci95']:.1f}"
    return f"{100 * e['mean']:.1f}%{ci}{few(e.get('n'))}"


def fmt(e: Estimate, digits: int = 3) -> str:
    """Return 'mean ± ci95' with `digits` decimals, or n/a over no units."""
    return "n/a" if e.n == 0 else e.fmt(digits)


def signed(x: float | None) -> str:
    """Return a difference with its sign (n/a for None)."""
    return "n/a" if x is None else f"{x:+.3f}"
