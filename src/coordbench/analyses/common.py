"""Building blocks of the analyses: rates, mean scores, differences and slopes as plain dicts.

Every analysis returns JSON-serialisable dicts (floats, ints, None, strings; NaN never
appears, an undefined number is None). Intervals are 95%: Wilson for rates, a t-interval
clipped to [0, 1] for mean shares and scores, Welch's t-interval for a difference of means,
Newcombe's hybrid score interval (from the two Wilson intervals) for a difference of rates,
and a t-interval for a least-squares slope.

A rate is {"mean", "lo", "hi", "ci95", "n", "count", "interval"} (count of n); a mean is
{"mean", "lo", "hi", "ci95", "n", "interval"}; a difference is {"delta", "lo", "hi", "n",
"n_ref", "method"} (n: the group compared, n_ref: the reference group; a difference of rates
also has "count" and "count_ref", the events behind each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _st

from coordbench.core.stats import Estimate, estimate, welch_test, wilson_ci
from coordbench.core.trajectory import Trajectory

Json = dict[str, Any]


def num(x: float | None) -> float | None:
    """Return x as a float, or None for None, NaN and infinities."""
    return None if x is None or not math.isfinite(x) else float(x)


def est(e: Estimate) -> Json:
    """Return an Estimate as {"mean", "lo", "hi", "ci95", "n", "interval"}."""
    return {"mean": num(e.mean), "lo": num(e.lo), "hi": num(e.hi), "ci95": num(e.ci95),
            "n": e.n, "interval": e.method}


def rate(count: int, n: int) -> Json:
    """Return the rate count/n with its Wilson interval as a plain dict (mean None for n = 0)."""
    out = est(wilson_ci(count, n))
    out["count"] = count
    return out


def mean_score(values: Sequence[float]) -> Json:
    """Return the mean of values in [0, 1] with its t-interval clipped to [0, 1] (mean None
    when there is no value)."""
    return est(estimate(list(values), "unit"))


def mean_of(values: Sequence[float]) -> Json:
    """Return the mean of values that cannot be negative (counts, steps) with its t-interval
    clipped at 0."""
    return est(estimate(list(values), "nonneg"))


def success(traj: Trajectory) -> bool:
    """Return whether the episode ended in success."""
    return traj.end is not None and traj.end.success


def team_size(traj: Trajectory) -> int:
    """Return the episode's team size (header params `agents`, else the team list)."""
    return int(traj.header.params.get("agents", len(traj.header.team)))


def proportion_diff(k_a: int, n_a: int, k_b: int, n_b: int) -> Json:
    """Return p_a - p_b (p = k/n) with Newcombe's hybrid score 95% interval:
    lo = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2), hi = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)
    with [l, u] each group's Wilson interval; delta None when a group is empty."""
    if n_a == 0 or n_b == 0:
        return {"delta": None, "lo": None, "hi": None, "n": n_a, "n_ref": n_b,
                "count": k_a, "count_ref": k_b, "method": "newcombe"}
    a, b = wilson_ci(k_a, n_a), wilson_ci(k_b, n_b)
    d = a.mean - b.mean
    lo = d - math.sqrt((a.mean - a.lo) ** 2 + (b.hi - b.mean) ** 2)  # type: ignore[operator]
    hi = d + math.sqrt((a.hi - a.mean) ** 2 + (b.mean - b.lo) ** 2)  # type: ignore[operator]
    return {"delta": d, "lo": max(-1.0, lo), "hi": min(1.0, hi), "n": n_a, "n_ref": n_b,
            "count": k_a, "count_ref": k_b, "method": "newcombe"}


def mean_diff(a: Sequence[float], b: Sequence[float]) -> Json:
    """Return mean(a) - mean(b) with Welch's 95% t-interval, d ± t_{0.975, df} sqrt(s_a^2/n_a
    + s_b^2/n_b) (df by Welch-Satterthwaite), and its two-sided p; the interval is [d, d]
    when both groups have no variance, None with fewer than 2 values in a group (delta None
    when a group is empty)."""
    out: Json = {"delta": None, "lo": None, "hi": None, "n": len(a), "n_ref": len(b),
                 "method": "welch", "p": None}
    if not len(a) or not len(b):
        return out
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    out["delta"] = float(x.mean() - y.mean())
    if x.size < 2 or y.size < 2:
        return out
    res = welch_test(x, y)
    se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
    half = 0.0 if se == 0 else float(_st.t.ppf(0.975, res.df)) * se
    # a variance below float resolution leaves Welch's degrees of freedom undefined: no
    # interval (None), never NaN
    out.update(lo=num(res.diff - half), hi=num(res.diff + half), p=num(res.p))
    return out


def ols_slope(xs: Sequence[float], ys: Sequence[float]) -> Json:
    """Return the least-squares slope of ys on xs with its 95% t-interval (n - 2 df):
    b = Sxy/Sxx, se = sqrt(SSE/(n - 2) / Sxx), b ± t_{0.975, n-2} se; {"slope", "lo", "hi",
    "se", "intercept", "n", "df"}, slope None with fewer than 3 points or one distinct x."""
    n = len(xs)
    out: Json = {"slope": None, "lo": None, "hi": None, "se": None, "intercept": None,
                 "n": n, "df": n - 2 if n >= 3 else None}
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if n < 3:
        return out
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0:
        return out
    b = float(((x - x.mean()) * (y - y.mean())).sum()) / sxx
    a = float(y.mean()) - b * float(x.mean())
    sse = float(((y - a - b * x) ** 2).sum())
    se = math.sqrt(sse / (n - 2) / sxx)
    half = float(_st.t.ppf(0.975, n - 2)) * se
    out.update(slope=b, lo=b - half, hi=b + half, se=se, intercept=a)
    return out


def correlation(xs: Sequence[float], ys: Sequence[float]) -> Json:
    """Return Pearson's r of (xs, ys) with its 95% Fisher-z interval, tanh(atanh(r) ±
    1.96 / sqrt(n - 3)), in the difference form {"delta": r, "lo", "hi", "n", "n_ref",
    "method"} (so `direction` reads its sign); delta None with fewer than 4 pairs or a
    constant variable."""
    n = len(xs)
    out: Json = {"delta": None, "lo": None, "hi": None, "n": n, "n_ref": n,
                 "method": "pearson-fisher"}
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if n < 4 or x.std() == 0 or y.std() == 0:
        return out
    r = float(np.corrcoef(x, y)[0, 1])
    z, half = math.atanh(min(max(r, -0.999999), 0.999999)), 1.959964 / math.sqrt(n - 3)
    out.update(delta=r, lo=math.tanh(z - half), hi=math.tanh(z + half))
    return out
