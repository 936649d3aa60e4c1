import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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


def test_wilson_interval_known_values_and_edges():
    from coordbench.core.stats import wilson_ci

    # 9 of 10: the textbook Wilson 95% interval is [0.5958, 0.9821]
    e = wilson_ci(9, 10)
    assert e.mean == 0.9 and e.method == "wilson"
    assert abs(e.lo - 0.5958) < 1e-3 and abs(e.hi - 0.9821) < 1e-3
    # 10 of 10 and 0 of 10 keep a real interval inside [0, 1] (a t-interval gives ± 0)
    full, none = wilson_ci(10, 10), wilson_ci(0, 10)
    assert full.hi == 1.0 and 0.65 < full.lo < 0.75
    assert none.lo == 0.0 and 0.25 < none.hi < 0.35
    assert wilson_ci(0, 0).n == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=200))
def test_rate_intervals_stay_inside_0_1_and_contain_the_rate(xs):
    from coordbench.core.stats import rate_ci

    e = rate_ci(xs)
    assert 0.0 <= e.lo <= e.mean <= e.hi <= 1.0
    assert e.n == len(xs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=50))
def test_unit_metrics_are_clipped_to_their_range(xs):
    from coordbench.core.stats import estimate

    e = estimate(xs, "unit")
    assert 0.0 <= e.lo <= e.hi <= 1.0
    assert e.lo - 1e-12 <= e.mean <= e.hi + 1e-12


def test_summarize_picks_the_interval_by_kind_and_rejects_non_binary_rates():
    import pytest

    from coordbench.core.stats import summarize

    s = summarize({"SR": [1, 1, 1, 1, 0], "CR": [1.0, 1.0, 0.9, 1.0, 1.0],
                   "steps": [3, 4, 5, None]}, {"SR": "binary", "CR": "unit"})
    assert s["SR"].method == "wilson" and s["SR"].hi < 1.0
    assert s["CR"].method == "t-clipped" and s["CR"].hi == 1.0
    assert s["steps"].method == "t" and s["steps"].n == 3
    assert s["SR"].fmt(2) == f"0.80 [{s['SR'].lo:.2f}, {s['SR'].hi:.2f}]"
    with pytest.raises(ValueError, match="0/1"):
        summarize({"SR": [0.5]}, {"SR": "binary"})


def test_pct_prints_asymmetric_intervals_as_a_range():
    from coordbench.core.stats import mean_ci, wilson_ci
    from coordbench.report.format import estimate_json, pct

    assert pct(wilson_ci(9, 10)) == "90.0% [59.6, 98.2]"
    assert pct(mean_ci([0.0, 1.0])).startswith("50.0% ± ")
    j = estimate_json(wilson_ci(10, 10))
    assert j["interval"] == "wilson" and j["hi"] == 1.0 and j["lo"] > 0.6


def test_iqm_and_the_stratified_bootstrap():
    from coordbench.core.stats import iqm, performance_profile, stratified_bootstrap

    # IQM drops the lowest and highest quarter of all runs: of 1..8, the mean of 3..6
    assert iqm(np.arange(1, 9).reshape(4, 2)) == 4.5
    rng = np.random.default_rng(0)
    scores = np.column_stack([rng.normal(0.2, 0.1, 10), rng.normal(0.8, 0.1, 10)])
    value, lo, hi = stratified_bootstrap(scores, np.mean, reps=500)
    assert lo < value < hi and value == pytest.approx(scores.mean())
    # resampling stays inside each task: a task whose runs all score c contributes c always
    const = np.column_stack([np.full(6, 0.5), rng.random(6)])
    _, lo, hi = stratified_bootstrap(const, lambda s: float(s[:, 0].mean()), reps=200)
    assert lo == hi == 0.5
    assert list(performance_profile(np.array([[0.0, 0.5], [1.0, 1.5]]), [-1, 0.5, 2])) == [
        1.0, 0.5, 0.0]


def test_training_aggregates_need_a_runs_by_configs_matrix():
    from coordbench.report.stat_train_report import GAP_TABLE, Cell, aggregate_markdown

    def cell(vals):
        return Cell(mean_ci(vals), vals)

    built = {"configs": ["3A-6T-5x3", "3A-6T-10x6"], "methods": ["vdn", "qmix"],
             "tables": {GAP_TABLE.name: {
                 ("vdn", "3A-6T-5x3"): cell([50.0, 60.0, 70.0]),
                 ("vdn", "3A-6T-10x6"): cell([20.0, 30.0, 40.0]),
                 ("qmix", "3A-6T-5x3"): cell([90.0, 95.0]),  # 2 seeds here, 3 there: left out
                 ("qmix", "3A-6T-10x6"): cell([10.0, 20.0, 30.0])}}}
    text = aggregate_markdown(built)
    assert "| VDN | " in text and "| QMIX |" not in text
    # VDN's normalized runs: 0.2..0.7; the IQM of the six is the mean of the middle four
    assert "| VDN | 0.450 [" in text


def test_training_success_pools_every_evaluation_episode():
    from coordbench.learn.sweep import summarize

    def result(success, conflict):
        final = {"step": 10, "return": 1.0, "success": success, "conflict_rate": conflict}
        return {"final_return": 1.0, "max_return": 1.0, "max_return_step": 10,
                "steps_per_s": 5.0, "final": final, "config": {"eval_episodes": 10}}

    s = summarize([result(1.0, 0.0), result(1.0, 0.5)])
    # 20 of 20 evaluation episodes: Wilson [0.839, 1], not "1.0 ± 0.0" over two seeds
    assert s["success"].method == "wilson" and s["success"].n == 20
    assert s["success"].hi == 1.0 and 0.8 < s["success"].lo < 0.85
    assert s["conflict_rate"].lo == 0.0  # a rate cannot go below 0


def test_estimates_over_too_few_units_say_so_wherever_they_print():
    from coordbench.core.stats import FEW, few, wilson_ci
    from coordbench.report.format import pct
    from coordbench.reproduce.study import show

    assert few(FEW) == "" and few(0) == "" and few(None) == ""
    assert mean_ci([1, 1, 1, 1], bounds=(0, 1)).fmt(3) == "1.000 ± 0.000 (n=4: too few)"
    assert mean_ci([3.0] * FEW).fmt(1) == "3.0 ± 0.0"
    assert pct(wilson_ci(3, 4)).endswith("(n=4: too few)")
    assert show({"slope": 0.1, "lo": 0.1, "hi": 0.1, "n": 3}).endswith("(n=3: too few)")
    diff = {"delta": 0.2, "lo": 0.1, "hi": 0.3, "n": 40, "n_ref": 2}
    assert show(diff) == "+0.200 [+0.100, +0.300] (n=2: too few)"
