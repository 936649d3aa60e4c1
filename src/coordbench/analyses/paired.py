"""Paired comparisons and repeated-trial rates: what a model comparison needs when every model
plays the same instances.

Two conditions that played the same instances are compared instance by instance, which is
far more sensitive than comparing their means as independent samples:

- success (0/1 per instance): McNemar's exact test on the discordant pairs (b: only the first
  succeeded, c: only the second; two-sided binomial test of b against b + c at 1/2), and the
  difference of rates (b - c) / n with a paired bootstrap interval;
- continuous metrics: the mean of the per-instance differences with a paired (percentile)
  bootstrap interval and Wilcoxon's signed-rank test (zero differences dropped, as scipy's
  default "wilcox" zero method does).

Repeated trials of one instance (k seeds) give pass@k (at least one of k succeeds, the unbiased
estimator 1 - C(n - c, k) / C(n, k) over n trials with c successes) and pass^k (all k succeed,
C(c, k) / C(n, k)), averaged over instances. Holm's step-down correction adjusts the p values
of a family of comparisons.

Every function returns plain JSON-ready values (None where a number is undefined).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _st

Json = dict[str, Any]
REPS = 4000  # bootstrap resamples (seeded: the same pairs give the same interval)


def mcnemar_exact(first: Sequence[bool], second: Sequence[bool]) -> Json:
    """Return McNemar's exact test of paired successes: {"b", "c", "n", "p"} (b: pairs only
    `first` succeeded, c: only `second`; p two-sided, 1.0 without discordant pairs)."""
    if len(first) != len(second):
        raise ValueError("paired samples must have the same length")
    b = sum(1 for x, y in zip(first, second, strict=True) if x and not y)
    c = sum(1 for x, y in zip(first, second, strict=True) if y and not x)
    p = 1.0 if b + c == 0 else float(_st.binomtest(b, b + c, 0.5).pvalue)
    return {"b": b, "c": c, "n": len(first), "p": p}


def paired_bootstrap(diffs: Sequence[float], seed: int = 0, reps: int = REPS) -> Json:
    """Return the mean of per-pair differences with its 95% percentile bootstrap interval
    (pairs resampled with replacement): {"delta", "lo", "hi", "n"}; delta None without
    pairs, the interval [d, d] for a single pair or no variance."""
    x = np.asarray(list(diffs), dtype=np.float64)
    if x.size == 0:
        return {"delta": None, "lo": None, "hi": None, "n": 0}
    d = float(x.mean())
    if x.size == 1 or float(x.std()) == 0.0:
        return {"delta": d, "lo": d, "hi": d, "n": int(x.size)}
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(reps, x.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": d, "lo": float(lo), "hi": float(hi), "n": int(x.size)}


def paired_success(first: Sequence[bool], second: Sequence[bool], seed: int = 0) -> Json:
    """Return the paired difference of success rates, first minus second: the mean of the
    per-instance differences with its bootstrap interval, and McNemar's exact p."""
    out = paired_bootstrap([float(x) - float(y) for x, y in zip(first, second, strict=True)],
                           seed)
    test = mcnemar_exact(first, second)
    out.update(p=test["p"], test="mcnemar-exact", discordant=[test["b"], test["c"]])
    return out


def paired_metric(first: Sequence[float], second: Sequence[float], seed: int = 0) -> Json:
    """Return the paired difference of a continuous metric, first minus second: the mean of
    the per-instance differences, its bootstrap interval, and Wilcoxon's signed-rank p (None
    when every difference is 0 or there are fewer than 2 pairs)."""
    diffs = [float(x) - float(y) for x, y in zip(first, second, strict=True)]
    out = paired_bootstrap(diffs, seed)
    nonzero = any(d != 0 for d in diffs)
    p = float(_st.wilcoxon(diffs).pvalue) if len(diffs) >= 2 and nonzero else None
    out.update(p=p, test="wilcoxon")
    return out


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Return the unbiased pass@k of one instance with c successes in n trials: the chance
    that at least one of k trials drawn without replacement succeeds (None for k > n)."""
    if k < 1 or k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Return pass^k of one instance with c successes in n trials: the chance that all of k
    trials drawn without replacement succeed (None for k > n)."""
    if k < 1 or k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


def repeated(outcomes: dict[str, Sequence[bool]], k: int) -> Json:
    """Return pass@k and pass^k averaged over instances ({instance: its trials' successes}),
    with the instances that have at least k trials: {"pass@k", "pass^k", "k", "instances"}."""
    at, hat = [], []
    for trials in outcomes.values():
        n, c = len(trials), sum(bool(t) for t in trials)
        a, h = pass_at_k(n, c, k), pass_hat_k(n, c, k)
        if a is not None and h is not None:
            at.append(a)
            hat.append(h)
    return {"pass@k": float(np.mean(at)) if at else None,
            "pass^k": float(np.mean(hat)) if hat else None, "k": k, "instances": len(at)}


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Return Holm's step-down adjusted p values (None stays None), in the input's order."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    order = sorted(idx, key=lambda i: pvalues[i])  # type: ignore[arg-type, return-value]
    m = len(order)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        adj = min(1.0, (m - rank) * float(pvalues[i]))  # type: ignore[arg-type]
        running = max(running, adj)
        out[i] = running
    return out
