import math

import numpy as np
import pytest
from scipy import stats

from coordbench.core.stats import bootstrap_diff_ci, mean_ci, welch_test


def test_mean_ci_uses_the_t_distribution():
    est = mean_ci([1.0, 2.0, 3.0, 4.0])
    # mean 2.5, s = 1.2910, t_{0.975, 3} = 3.1824 -> half-width 2.0543
    assert est.mean == 2.5 and est.n == 4
    assert est.ci95 == pytest.approx(3.182446 * 1.290994 / 2, rel=1e-5)


def test_mean_ci_small_samples_and_nans():
    assert mean_ci([5.0]).ci95 is None
    assert mean_ci([]).n == 0 and math.isnan(mean_ci([]).mean)
    assert mean_ci([1.0, float("nan"), 3.0]).n == 2


def test_welch_matches_the_formula():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    w = welch_test(a, b)
    va, vb = np.var(a, ddof=1) / 5, np.var(b, ddof=1) / 6
    t = (3.0 - 7.0) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 5)
    assert w.t == pytest.approx(t) and w.df == pytest.approx(df)
    assert w.p == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert w.diff == -4.0 and w.significant()


def test_welch_degenerate_and_too_small():
    assert welch_test([1.0, 1.0], [1.0, 1.0]).p == 1.0
    assert welch_test([2.0, 2.0], [1.0, 1.0]).p == 0.0
    with pytest.raises(ValueError):
        welch_test([1.0], [1.0, 2.0])


def test_bootstrap_interval_covers_the_difference():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 200)
    d, lo, hi = bootstrap_diff_ci(a, b, seed=1)
    assert lo < d < hi and lo > 0.6 and hi < 1.4
    assert bootstrap_diff_ci(a, b, seed=1) == (d, lo, hi)
