"""Paired comparisons, pass@k / pass^k and Holm's correction, each worked out by hand."""

import pytest

from coordbench.analyses import paired as P


def test_mcnemar_counts_discordant_pairs_and_tests_them_exactly():
    first = [True, True, True, False, False, True]
    second = [False, False, False, False, True, True]
    got = P.mcnemar_exact(first, second)
    # b = 3 (only the first), c = 1 (only the second): two-sided binomial of 3 in 4 at 1/2,
    # P = (C(4,0) + C(4,1) + C(4,3) + C(4,4)) / 16 = 10/16
    assert (got["b"], got["c"], got["n"]) == (3, 1, 6)
    assert got["p"] == pytest.approx(10 / 16)
    assert P.mcnemar_exact([True, False], [True, False])["p"] == 1.0
    # 10 discordant pairs all one way: p = 2 / 2^10
    assert P.mcnemar_exact([True] * 10, [False] * 10)["p"] == pytest.approx(2 / 1024)
    with pytest.raises(ValueError):
        P.mcnemar_exact([True], [True, False])


def test_paired_differences_and_their_intervals():
    got = P.paired_success([True] * 8 + [False] * 2, [True] * 4 + [False] * 6)
    assert got["delta"] == pytest.approx(0.4) and got["discordant"] == [4, 0]
    assert got["p"] == pytest.approx(2 / 16) and got["lo"] <= 0.4 <= got["hi"]
    flat = P.paired_metric([0.75, 0.625], [0.25, 0.125])
    assert flat["delta"] == pytest.approx(0.5) and flat["lo"] == flat["hi"] == pytest.approx(0.5)
    assert P.paired_metric([0.3, 0.3], [0.3, 0.3])["p"] is None
    # the same pairs give the same interval (seeded)
    a = P.paired_bootstrap([0.1, -0.2, 0.4, 0.0, 0.3])
    assert a == P.paired_bootstrap([0.1, -0.2, 0.4, 0.0, 0.3])
    assert a["lo"] < a["delta"] < a["hi"] and a["n"] == 5
    assert P.paired_bootstrap([])["delta"] is None


def test_pass_at_k_and_pass_hat_k():
    # 2 successes in 5 trials, k = 2: pass@2 = 1 - C(3,2)/C(5,2) = 0.7; pass^2 = C(2,2)/C(5,2)
    assert P.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert P.pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert P.pass_at_k(3, 3, 2) == 1.0 and P.pass_hat_k(3, 0, 1) == 0.0
    assert P.pass_at_k(2, 1, 3) is None
    got = P.repeated({"a": [True, False, True, False, False], "b": [True] * 5,
                      "c": [True]}, 2)
    assert got["instances"] == 2  # "c" has fewer than 2 trials
    assert got["pass@k"] == pytest.approx((0.7 + 1.0) / 2)
    assert got["pass^k"] == pytest.approx((0.1 + 1.0) / 2)


def test_holm_step_down():
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert P.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert P.holm([None, 0.5, 0.9]) == [None, pytest.approx(1.0), pytest.approx(1.0)]
