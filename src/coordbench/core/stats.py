"""Statistics used by every table: means with t-based 95% CIs (clipped to a metric's range),
Wilson intervals for rates, Welch's t-test, bootstrap CI."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Estimate:
    """A mean over n independent values with its 95% interval [lo, hi].

    `ci95` is the half-width of a symmetric t-interval; for a Wilson interval (rates) or one
    clipped to a metric's range it is half the interval's width, and `lo`/`hi` say where it
    lies. `method` is "t", "t-clipped" or "wilson".
    """

    mean: float
    ci95: float | None  # None when there is no interval (n < 2 for a t-interval)
    n: int
    lo: float | None = None
    hi: float | None = None
    method: str = "t"

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Return {"mean", "ci95", "n", "lo", "hi", "interval"} as plain Python values."""
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n, "lo": self.lo,
                "hi": self.hi, "interval": self.method}

    @property
    def symmetric(self) -> bool:
        """Return whether the interval is mean ± ci95 (a t-interval left as it is)."""
        return self.method == "t"

    def fmt(self, digits: int = 2) -> str:
        """Return 'mean ± ci95', or 'mean [lo, hi]' for an asymmetric interval, as text
        ('n/a' when no sample defines the mean), noted when n is too small (`few`)."""
        if math.isnan(self.mean):
            return "n/a"
        if self.ci95 is None or self.lo is None or self.hi is None:
            text = f"{self.mean:.{digits}f}"
        elif self.symmetric:
            text = f"{self.mean:.{digits}f} ± {self.ci95:.{digits}f}"
        else:
            text = f"{self.mean:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"
        return text + few(self.n)


# Below this many units an interval says little: a t-interval over 3 values is mostly its
# t factor (12.7 at n = 2, 4.3 at n = 3), and a few equal values give one of zero width.
FEW = 5


def few(n: int | None) -> str:
    """Return the note every printed estimate over fewer than FEW units carries
    (" (n=3: too few)"), or "" for a sample large enough to read an interval from."""
    return f" (n={n}: too few)" if n is not None and 0 < n < FEW else ""


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    return x[~np.isnan(x)]


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95,
            bounds: tuple[float, float] | None = None) -> Estimate:
    """Return the mean and the half-width t_{(1+c)/2, n-1} * s / sqrt(n) of its c-level CI,
    with the interval clipped to `bounds` (a metric's possible range) when given.

    Values are treated as independent (one per seed or episode). NaNs are dropped first.
    """
    x = _finite(values)
    n = int(x.size)
    if n == 0:
        return Estimate(math.nan, None, 0)
    mean = float(x.mean())
    if n < 2:
        return Estimate(mean, None, n)
    sem = float(x.std(ddof=1)) / math.sqrt(n)
    half = float(_st.t.ppf(0.5 + confidence / 2, df=n - 1)) * sem
    lo, hi = mean - half, mean + half
    if bounds is not None and (lo < bounds[0] or hi > bounds[1]):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return Estimate(mean, (hi - lo) / 2, n, lo, hi, "t-clipped")
    return Estimate(mean, half, n, lo, hi)


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Return the success rate successes/n with its Wilson score interval (inside [0, 1]
    for every n >= 1, unlike a t-interval at 0% or 100%)."""
    if n == 0:
        return Estimate(math.nan, None, 0)
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    z = float(_st.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0 or n successes the bound is exactly 0 or 1; rounding must not move it inside
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, (hi - lo) / 2, n, lo, hi, "wilson")


def rate_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Estimate:
    """Return the rate of 0/1 outcomes (NaNs dropped) with its Wilson interval; values that
    are not all 0 or 1 raise ValueError."""
    x = _finite(values)
    if not np.all((x == 0) | (x == 1)):
        raise ValueError("a rate needs 0/1 outcomes")
    return wilson_ci(int(x.sum()), int(x.size), confidence)


# "binary" (0/1 outcomes: Wilson), "unit" (a share in [0, 1]: clipped t), "nonneg" (a rate or
# count that cannot be negative: t clipped at 0), "mean" (plain t)
Kind = str
UNIT = (0.0, 1.0)


def estimate(values: Sequence[float] | np.ndarray, kind: Kind = "mean",
             confidence: float = 0.95) -> Estimate:
    """Return the estimate a metric of this kind gets: Wilson for 0/1 outcomes, a t-interval
    clipped to [0, 1] for shares or at 0 for non-negative rates, a plain t-interval
    otherwise."""
    if kind == "binary":
        return rate_ci(values, confidence)
    if kind == "unit":
        return mean_ci(values, confidence, UNIT)
    if kind == "nonneg":
        return mean_ci(values, confidence, (0.0, math.inf))
    return mean_ci(values, confidence)


def summarize(values: dict[str, Sequence[float | None]],
              kinds: dict[str, Kind] | None = None) -> dict[str, Estimate]:
    """Return {metric: estimate over the units where it applies} (None = n/a), each metric's
    interval chosen by its kind in `kinds` (see `estimate`; unnamed metrics: t-interval)."""
    kinds = kinds or {}
    return {k: estimate([v for v in vs if v is not None], kinds.get(k, "mean"))
            for k, vs in values.items()}


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
    with warnings.catch_warnings():
        # near-identical samples make scipy warn about precision; the statistic stays right
        warnings.simplefilter("ignore", RuntimeWarning)
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


def iqm(scores: np.ndarray) -> float:
    """Return the interquartile mean of all scores (the mean of the middle 50%, as rliable's
    `aggregate_iqm`: scipy's trim_mean with 25% cut from each end of the flattened runs)."""
    x = np.asarray(scores, dtype=np.float64).ravel()
    return float(_st.trim_mean(x, 0.25, axis=None))


AGGREGATES = {"IQM": iqm, "median": lambda s: float(np.median(s)),
              "mean": lambda s: float(np.mean(s)),
              "optimality gap": lambda s: float(np.mean(np.maximum(0.0, 1.0 - np.asarray(s))))}


def stratified_bootstrap(scores: np.ndarray, statistic, reps: int = 2000,
                         confidence: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Return (statistic, lo, hi): the statistic over a (runs x tasks) score matrix and its
    percentile interval under the stratified bootstrap of Agarwal et al. (2021), which
    resamples runs with replacement within each task (column) separately."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.size == 0:
        raise ValueError("scores must be a non-empty runs x tasks matrix")
    rng = np.random.default_rng(seed)
    runs, tasks = x.shape
    idx = rng.integers(0, runs, (reps, runs, tasks))
    stats = np.array([statistic(x[idx[r], np.arange(tasks)]) for r in range(reps)])
    lo, hi = np.quantile(stats, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return float(statistic(x)), float(lo), float(hi)


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Return, for each threshold tau, the share of all runs whose score exceeds it (the
    run-score distribution of Agarwal et al., 2021)."""
    x = np.asarray(scores, dtype=np.float64).ravel()
    return np.array([(x > t).mean() for t in np.asarray(taus, dtype=np.float64)])
