"""Construct analyses (analyses/constructs.py) on hand-made trajectories: cross-applied score
correlations, termination and failure shares, the legality gap, planner and observation
deltas, and the team-size trend."""

import json
import math

import numpy as np
import pytest
from scipy import stats as st

from coordbench.analyses import constructs as A
from coordbench.core.stats import wilson_ci
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    EpisodeEndEvent,
    HouseholdStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics import constructs as C


def traj(construct, steps, n=2, end="success", **info):
    """A construct trajectory: `steps` lists each step's (agent, action, args, outcome);
    `end` is the episode_end termination (None: no end event)."""
    header = TrajectoryHeader(
        episode_id="x", suite="constructs", task_id="t", seed=0,
        team=[AgentSpec(id=f"a{i}", driver="h") for i in range(n)], coordbench_version="t",
        params={"agents": n, "construct": {"construct": construct, **info}})
    events = [HouseholdStepEvent(t=t, actions=[ActionRecord(agent=a, action=name, args=args,
                                                            outcome=out)
                                               for a, name, args, out in acts],
                                 satisfied={}, completion=1.0 if end == "success" else 0.5)
              for t, acts in enumerate(steps)]
    if end is not None:
        events.append(EpisodeEndEvent(t=len(steps), success=end == "success",
                                      termination=end))
    return Trajectory(header=header, events=events)


def d1(m, n=2, m_star=2, end="success", closed=0, construct="D1"):
    """Agent 0 acts m times (M = m): C_D1 = min(1, m_star/m); `closed` puts into the closed
    goal container 9 before one that lands: C_D2 = 1 - closed/(closed+1) (Eq. 8: the puts into
    the closed box are ordering violations in v, and p_legal stays 1)."""
    acts = [[(0, "put_in", {"obj": 1, "target": 9}, "closed")] for _ in range(closed)]
    acts += [[(0, "walk", {}, "ok")] for _ in range(m - 1 - closed)]
    acts.append([(0, "put_in", {"obj": 1, "target": 9}, "ok")])
    return traj(construct, acts, n=n, end=end, m_star=m_star, oracle_makespan=m_star,
                containers=[9], targets={"1": 9})


def test_score_correlations_cross_apply_every_score():
    shapes = [(2, 0), (3, 1), (4, 2), (6, 3), (8, 0)]
    trajs = [d1(m, closed=j) for m, j in shapes]
    x = [min(1, 2 / m) for m, _ in shapes]
    y = [1 - j / (j + 1) for _, j in shapes]
    assert [C.score_d1(t) for t in trajs] == pytest.approx(x)
    assert [C.score_d2(t) for t in trajs] == pytest.approx(y)
    got = A.score_correlations(trajs)
    assert got["trajectories"] == 5
    assert got["r"]["D1"]["D2"] == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert got["r"]["D1"]["D2"] == pytest.approx(got["r"]["D2"]["D1"])
    assert got["r"]["D1"]["D1"] == pytest.approx(1.0) and got["n"]["D1"]["D2"] == 5
    # no knife, no buffer: C_D3 and C_D4 are undefined, so are their pairs
    assert got["n"]["D1"]["D3"] == 0 and got["r"]["D1"]["D3"] is None
    assert got["r"]["D4"]["D4"] is None
    # fewer than 3 pairs, or no variance: None
    assert A.score_correlations(trajs[:2])["r"]["D1"]["D2"] is None
    flat = A.score_correlations([d1(2), d1(2), d1(2)])
    assert flat["r"]["D1"]["D2"] is None and flat["n"]["D1"]["D2"] == 3
    json.dumps(got)


def test_termination_shares_sum_to_one_with_wilson_intervals():
    ends = ["success", "success", "truncated", "normal_stop", "protocol_failure", None]
    trajs = [d1(2, end=e) for e in ends]
    got = A.termination_shares(trajs)
    assert list(got) == ["success", "normal_stop", "budget_exhausted", "protocol_failure"]
    assert {k: v["count"] for k, v in got.items()} == {
        "success": 2, "normal_stop": 1, "budget_exhausted": 1, "protocol_failure": 2}
    assert sum(v["mean"] for v in got.values()) == pytest.approx(1.0)
    w = wilson_ci(2, 6)
    assert (got["success"]["lo"], got["success"]["hi"], got["success"]["n"]) == (
        pytest.approx(w.lo), pytest.approx(w.hi), 6)
    assert got["success"]["interval"] == "wilson"
    empty = A.termination_shares([])
    assert all(v["mean"] is None and v["n"] == 0 for v in empty.values())


def test_failure_shares_count_failed_episodes_with_at_least_one_event():
    bad = [(0, "grab", {}, "held_by_other"), (1, "put_in", {}, "not_held")]
    trajs = [traj("D1", [bad, bad], end="truncated"),  # occupancy + dependency (twice)
             traj("D1", [[(0, "open", {}, "illegal_skill")]], end="truncated"),
             traj("D1", [[(0, "walk", {}, "ok")]], end="normal_stop"),
             traj("D1", [[(0, "walk", {}, "not_visible")]], end="success")]  # not failed
    got = A.failure_shares(trajs)
    assert {k: (v["count"], v["n"]) for k, v in got.items()} == {
        "dependency": (1, 3), "occupancy": (1, 3), "affordance": (0, 3),
        "illegal_skill": (1, 3)}
    assert got["dependency"]["mean"] == pytest.approx(1 / 3)
    assert got["affordance"]["lo"] == 0.0 and got["affordance"]["hi"] > 0
    none_failed = A.failure_shares([d1(2)])
    assert set(none_failed) == {"dependency", "occupancy", "affordance", "illegal_skill"}
    assert all(v["mean"] is None for v in none_failed.values())


def test_legality_gap():
    ok = [(0, "walk", {}, "ok")]
    trajs = [traj("D1", [ok]),                                          # success, legal
             traj("D1", [ok, [(1, "open", {}, "illegal_skill")]]),      # success, not legal
             traj("D1", [[(0, "put_in", {}, "closed")]], end="truncated"),  # fail, not legal
             traj("D1", [ok], end="truncated"),                         # fail, legal
             traj("D1", [], end="normal_stop")]                         # no action
    got = A.legality_gap(trajs)
    assert got["n"] == 5
    assert (got["success_rate"]["count"], got["success_rate"]["n"]) == (2, 5)
    assert (got["legal_rate"]["count"], got["legal_rate"]["n"]) == (2, 4)
    assert (got["legal_success_rate"]["count"], got["legal_success_rate"]["n"]) == (1, 5)
    assert (got["successful_not_legal"]["count"], got["successful_not_legal"]["n"]) == (1, 2)
    assert got["successful_not_legal"]["mean"] == 0.5
    assert A.legality_gap([])["successful_not_legal"]["mean"] is None


def _newcombe(k1, n1, k2, n2):
    a, b = wilson_ci(k1, n1), wilson_ci(k2, n2)
    d = a.mean - b.mean
    return (d, d - math.sqrt((a.mean - a.lo) ** 2 + (b.hi - b.mean) ** 2),
            d + math.sqrt((a.hi - a.mean) ** 2 + (b.mean - b.lo) ** 2))


def _welch(x, y):
    x, y = np.asarray(x), np.asarray(y)
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (va + vb) ** 2 / (va ** 2 / (x.size - 1) + vb ** 2 / (y.size - 1))
    half = st.t.ppf(0.975, df) * math.sqrt(va + vb)
    d = x.mean() - y.mean()
    return d, d - half, d + half


def test_architecture_deltas_are_planner_minus_central():
    central = [d1(2), d1(2), d1(3), d1(4, end="truncated")]  # SR 3/4, CS 1, 1, 2/3, 1/2
    dec = [d1(4), d1(5, end="truncated"), d1(8, end="truncated")]  # SR 1/3, CS 1/2, 2/5, 1/4
    comm = [d1(2), d1(3), d1(2)]
    got = A.architecture_deltas({"central": central, "decentralized": dec,
                                 "decentralized_comm": comm})
    assert set(got) == {"all", "D1"}
    row = got["D1"]
    assert row["levels"]["central"]["SR"]["mean"] == 0.75
    assert row["levels"]["decentralized"]["CS"]["mean"] == pytest.approx((0.5 + 0.4 + 0.25) / 3)
    sr = row["deltas"]["decentralized"]["SR"]
    assert (sr["delta"], sr["lo"], sr["hi"]) == pytest.approx(_newcombe(1, 3, 3, 4))
    assert (sr["n"], sr["n_ref"], sr["method"]) == (3, 4, "newcombe")
    cs = row["deltas"]["decentralized"]["CS"]
    want = _welch([0.5, 0.4, 0.25], [1, 1, 2 / 3, 0.5])
    assert (cs["delta"], cs["lo"], cs["hi"]) == pytest.approx(want)
    assert cs["lo"] < cs["delta"] < cs["hi"] < 0 and 0 <= cs["p"] <= 1
    assert row["deltas"]["decentralized_comm"]["SR"]["delta"] == pytest.approx(0.25)
    assert "central" not in row["deltas"]
    json.dumps(got)
    with pytest.raises(ValueError, match="central"):
        A.architecture_deltas({"decentralized": dec})


def test_observation_deltas_image_minus_blind():
    image = [d1(2), d1(2), d1(2, construct="D2"), d1(4, end="truncated", construct="D2")]
    blind = [d1(4), d1(4, end="truncated"), d1(2, construct="D2")]
    got = A.observation_deltas(image, blind)
    assert set(got) == {"all", "D1", "D2"}
    assert got["D1"]["delta"]["SR"]["delta"] == pytest.approx(0.5)
    assert got["D1"]["delta"]["CS"]["delta"] == pytest.approx(0.5)
    # both groups without variance: the Welch interval collapses to the difference
    assert got["D1"]["delta"]["CS"]["lo"] == got["D1"]["delta"]["CS"]["hi"] == pytest.approx(0.5)
    # one blind D2 episode: a difference but no interval
    d2 = got["D2"]["delta"]["CS"]
    assert d2["n_ref"] == 1 and d2["lo"] is None and d2["delta"] is not None
    assert got["all"]["image"]["n"] == 4 and got["all"]["blind"]["n"] == 3


def test_team_size_trend_slopes_with_t_intervals():
    plan = {2: [("success", 2), ("success", 2), ("success", 3)],
            3: [("success", 3), ("truncated", 4), ("success", 4)],
            4: [("truncated", 4), ("truncated", 6), ("success", 8)]}
    trajs = [d1(m, n=n, end=e) for n, rows in plan.items() for e, m in rows]
    got = A.team_size_trend(trajs)
    assert set(got) == {"all", "D1"} and got["all"] == got["D1"]
    by = got["D1"]["by_team"]
    assert list(by) == ["2", "3", "4"]
    assert (by["2"]["SR"]["mean"], by["3"]["SR"]["mean"]) == (1.0, pytest.approx(2 / 3))
    assert by["4"]["CS"]["mean"] == pytest.approx((0.5 + 1 / 3 + 0.25) / 3)
    xs = [n for n, rows in plan.items() for _ in rows]
    for key, ys in (("SR", [float(e == "success") for rows in plan.values() for e, _ in rows]),
                    ("CS", [min(1, 2 / m) for rows in plan.values() for _, m in rows])):
        fit = st.linregress(xs, ys)
        half = st.t.ppf(0.975, len(xs) - 2) * fit.stderr
        s = got["D1"]["slope"][key]
        assert (s["slope"], s["se"], s["intercept"]) == pytest.approx(
            (fit.slope, fit.stderr, fit.intercept))
        assert (s["lo"], s["hi"]) == pytest.approx((fit.slope - half, fit.slope + half))
        assert s["n"] == 9 and s["df"] == 7 and s["slope"] < 0
    one_size = A.team_size_trend([d1(2), d1(3), d1(4)])["D1"]["slope"]["SR"]
    assert one_size["slope"] is None and one_size["n"] == 3
    json.dumps(got)


def test_rate_and_difference_helpers_at_the_edges():
    assert A.rate(0, 0)["mean"] is None and A.rate(3, 3)["hi"] == 1.0
    assert A.proportion_diff(1, 1, 0, 0)["delta"] is None
    assert A.mean_diff([], [1.0])["delta"] is None
    assert A.ols_slope([1, 2], [0, 1])["slope"] is None
