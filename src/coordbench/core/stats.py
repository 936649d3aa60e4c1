"""Statistics used by every table: mean with a t-based 95% CI, Welch's t-test, bootstrap CI."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Estimate:
    """A mean with the half-width of its confidence interval over n independent values."""

    mean: float
    ci95: float | None  # None when n < 2: no interval can be honest
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        """Return {"mean", "ci95", "n"} with plain Python numbers (JSON-ready)."""
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n}

    def fmt(self, digits: int = 2) -> str:
        """Return 'mean ± ci95' as text."""
        if self.ci95 is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.ci95:.{digits}f}"


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Estimate:
    """Return the mean and the half-width t_{(1+c)/2, n-1} * s / sqrt(n) of its c-level CI.

    Values are treated as independent (one per seed or episode). NaNs are dropped first.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = int(x.size)
    if n == 0:
        return Estimate(math.nan, None, 0)
    mean = float(x.mean())
    if n < 2:
        return Estimate(mean, None, n)
    sem = float(x.std(ddof=1)) / math.sqrt(n)
    half = float(_st.t.ppf(0.5 + confidence / 2, df=n - 1)) * sem
    return Estimate(mean, half, n)


def summarize(values: dict[str, Sequence[float | None]]) -> dict[str, Estimate]:
    """Return {metric: mean with 95% CI over the units where it applies} (None = n/a)."""
    return {k: mean_ci([v for v in vs if v is not None]) for k, vs in values.items()}


@dataclass(frozen=True)
class WelchResult:
    """Welch's unequal-variance t-test of mean(a) - mean(b)."""

    diff: float
    t: float
    df: float
    p: float

    def significant(self, alpha: float = 0.05) -> bool:
        """Return whether p < alpha."""
        return self.p < alpha


def welch_test(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Return Welch's t statistic, its Welch-Satterthwaite df and two-sided p for a vs b.

    t = (mean_a - mean_b) / sqrt(s_a^2/n_a + s_b^2/n_b). If both samples have zero variance the
    test is degenerate: p = 1 for equal means, 0 otherwise.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        raise ValueError("Welch's test needs at least 2 values per group")
    diff = float(x.mean() - y.mean())
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if va + vb == 0:
        return WelchResult(diff, math.copysign(math.inf, diff) if diff else 0.0,
                           float(x.size + y.size - 2), 0.0 if diff else 1.0)
    res = _st.ttest_ind(x, y, equal_var=False)
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    return WelchResult(diff, float(res.statistic), float(df), float(res.pvalue))


def bootstrap_diff_ci(a: Sequence[float], b: Sequence[float], confidence: float = 0.95,
                      n_boot: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """Return (mean(a) - mean(b), lo, hi): a percentile bootstrap CI, resampling each group."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        raise ValueError("bootstrap needs at least one value per group")
    rng = np.random.default_rng(seed)
    bx = x[rng.integers(0, x.size, (n_boot, x.size))].mean(axis=1)
    by = y[rng.integers(0, y.size, (n_boot, y.size))].mean(axis=1)
    d = bx - by
    lo, hi = np.quantile(d, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return float(x.mean() - y.mean()), float(lo), float(hi)
