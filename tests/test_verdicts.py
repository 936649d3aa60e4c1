"""The four verdicts of a reproduced finding (holds, contradicted, inconclusive, untestable):
the rule on differences, slopes, correlations and rates, checked as properties, and a study
on all-equal rows that may print neither holds nor contradicted."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from coordbench.analyses.common import (
    correlation,
    mean_diff,
    ols_slope,
    proportion_diff,
    rate,
)
from coordbench.analyses.paired import paired_bootstrap
from coordbench.reproduce.models import majority, mostly
from coordbench.reproduce.study import (
    VERDICTS,
    Finding,
    Verdict,
    both,
    from_holds,
    judge,
    judge_rate,
)


def test_an_interval_on_the_claimed_side_holds_and_on_the_other_contradicts():
    up = {"delta": 0.3, "lo": 0.1, "hi": 0.5, "n": 40, "n_ref": 40}
    assert judge(up, +1).verdict == "holds" and judge(up, +1).holds is True
    assert judge(up, -1).verdict == "contradicted" and judge(up, -1).holds is False
    assert "lies on the claimed side" in judge(up, +1).reason


def test_an_interval_across_zero_is_inconclusive_and_says_how_many_units_would_decide():
    d = {"delta": 0.1, "lo": -0.1, "hi": 0.3, "n": 25, "n_ref": 30}
    v = judge(d, +1)
    assert v.verdict == "inconclusive" and v.holds is None
    # half-width 0.2 at n = 25: (0.2 / 0.1)^2 x 25 = 100 units narrow it to the estimate
    assert "about 100 units (now 25)" in v.reason and "claimed way" in v.reason
    assert "other way" in judge(d, -1).reason  # the old rule read this as "does not hold"
    zero = {"delta": 0.0, "lo": -0.2, "hi": 0.2, "n": 10, "n_ref": 10}
    assert judge(zero, +1).verdict == "inconclusive"
    assert "no number of units" in judge(zero, +1).reason


def test_nothing_to_test_is_untestable_with_its_reason():
    cases = {
        "no runs to compare": None,
        "a group has no units": proportion_diff(0, 0, 3, 10),
        "no events: 0 of 12 and 0 of 9": proportion_diff(0, 12, 0, 9),
        "no variation: every unit counts in both groups": proportion_diff(5, 5, 7, 7),
        "no variation: every value is equal": mean_diff([2.0] * 6, [2.0] * 4),
        "too few units for an interval": mean_diff([1.0], [0.0, 1.0]),
        "no variation: a variable is the same": correlation([1, 2, 3, 4, 5], [3] * 5),
        "too few units for an estimate": correlation([1, 2, 3], [1, 2, 3]),
    }
    for reason, diff in cases.items():
        v = judge(diff, +1)
        assert v.verdict == "untestable" and v.holds is None, (reason, v)
        assert v.reason.startswith(reason), (reason, v.reason)
    flat = ols_slope([2, 3, 4, 2, 3, 4], [0.0] * 6)  # a slope through all-zero rates
    assert judge(flat, -1).verdict == "untestable"
    assert judge(paired_bootstrap([0.0] * 8), +1).verdict == "untestable"
    assert judge(paired_bootstrap([0.4]), +1).verdict == "untestable"  # a single pair
    # equal values whose float sums differ in the last bits are still equal
    from coordbench.analyses.paired import paired_metric

    assert judge(paired_metric([0.1 + 0.2] * 4, [0.3] * 4), +1).verdict == "untestable"
    assert judge(mean_diff([0.1] * 3, [0.1] * 10), -1).verdict == "untestable"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from([0.0, 1.0, 0.5, 3.0]),
       st.sampled_from([+1, -1]))
def test_equal_rows_are_never_holds_nor_contradicted(n_a, n_b, value, sign):
    """Whatever the sizes, groups of one same value decide nothing."""
    for diff in (mean_diff([value] * n_a, [value] * n_b),
                 paired_bootstrap([0.0] * n_a),
                 proportion_diff(0, n_a, 0, n_b), proportion_diff(n_a, n_a, n_b, n_b)):
        assert judge(diff, sign).verdict in ("untestable", "inconclusive"), diff


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=30),
       st.lists(st.floats(-5, 5), min_size=2, max_size=30), st.sampled_from([+1, -1]))
def test_the_verdict_is_where_the_interval_lies(a, b, sign):
    d = mean_diff(a, b)
    v = judge(d, sign)
    assert v.verdict in VERDICTS
    if v.verdict == "holds":
        assert min(sign * d["lo"], sign * d["hi"]) > 0
    elif v.verdict == "contradicted":
        assert max(sign * d["lo"], sign * d["hi"]) < 0
    elif v.verdict == "inconclusive":
        assert d["lo"] <= 0 <= d["hi"]
    elif d["lo"] is None:
        assert v.reason.startswith("too few units for an interval")
    else:  # only an interval at 0 up to rounding, or of zero width, is untestable here
        tol = 1e-9 * max(1.0, abs(d["delta"]), abs(d["lo"]), abs(d["hi"]))
        assert d["lo"] == d["hi"] or (abs(d["lo"]) <= tol and abs(d["hi"]) <= tol)


def test_rate_claims():
    assert judge_rate(rate(0, 100), 0.05).verdict == "holds"
    assert judge_rate(rate(30, 100), 0.05).verdict == "contradicted"
    v = judge_rate(rate(0, 2), 0.05)
    assert v.verdict == "inconclusive" and "includes 0.05" in v.reason
    assert judge_rate(rate(0, 0), 0.05).verdict == "untestable"
    assert judge_rate(rate(1, 500), 0.05, never=True).verdict == "contradicted"
    assert judge_rate(rate(0, 100), 0.05, never=True).verdict == "holds"
    assert judge_rate(rate(0, 10), 0.05, never=True).verdict == "inconclusive"


def test_findings_carry_verdict_and_reason_in_json():
    f = Finding("x", "Fig. 1", "claim", 1, 2, judge(proportion_diff(0, 5, 0, 5), +1))
    out = f.as_json()
    assert (out["holds"], out["verdict"]) == (None, "untestable")
    assert out["reason"].startswith("no events")
    assert json.loads(json.dumps(out)) == out
    # a finding decided by its own rule: True / False / None, or a note naming what is absent
    assert Finding("x", "r", "c", 1, 2, True).verdict == "holds"
    assert Finding("x", "r", "c", 1, 2, False).verdict == "contradicted"
    assert Finding("x", "r", "c", 1, 2, None).verdict == "inconclusive"
    absent = Finding("x", "r", "c", 1, 2, None, "no hallucinated completion in these episodes")
    assert (absent.verdict, absent.reason) == ("untestable", absent.note)
    assert from_holds(None, "untestable: no D4 instance").reason == "no D4 instance"


def test_parts_and_majorities():
    h, c = Verdict("holds", "a"), Verdict("contradicted", "b")
    u, i = Verdict("untestable", "c"), Verdict("inconclusive", "d")
    assert both(h, h).verdict == "holds" and both(h, c).verdict == "contradicted"
    assert both(h, u).verdict == "untestable" and both(h, i).verdict == "inconclusive"
    assert majority([h, h, i]).verdict == "holds"
    assert majority([c, h]).verdict == "contradicted"
    assert majority([u, u]).verdict == "untestable" and "every model's" in majority([u]).reason
    assert majority([u, i, h]).verdict == "inconclusive"
    assert mostly([True, True, None]) is True and mostly([]) is None


def test_a_study_on_all_equal_rows_prints_no_holds_and_no_contradicted(tmp_path):
    """A planner that only waits: every model row's success rate is 0. Findings about the
    model's rows may be untestable or inconclusive only, each with a reason; the oracle's
    own rows (played by the oracle, all successes) are not the model's."""
    from typer.testing import CliRunner

    from coordbench.cli import app
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_models import oracle_plans, planner_reply, registry

    plans = oracle_plans([(None, 3), ("D4", 3)])
    with ScriptedServer(planner_reply(plans)) as server:
        models = registry(tmp_path, server.base_url)
        res = CliRunner().invoke(app, ["reproduce", "cocobench", "--quick", "--limit", "3",
                                       "--models", str(models), "--model", "never", "--out",
                                       str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.stdout.strip().splitlines()[-1])["findings"]
    assert found and all(f["verdict"] in VERDICTS and f["reason"] for f in found)
    for f in found:
        if f["id"] != "coco-oracle":
            assert f["verdict"] in ("untestable", "inconclusive"), f
    md = (tmp_path / "s/reproduce.md").read_text()
    assert "**untestable**: no events" in md
    assert "does not hold" not in md


def test_rule_text_names_the_four_verdicts():
    from coordbench.reproduce.study import VERDICT_RULE

    for word in VERDICTS:
        assert f"*{word}*" in VERDICT_RULE


def test_a_vision_claim_is_judged_on_the_models_that_take_images(tmp_path):
    """CoCoBench Fig. 7 on two scripted planners, one registered as taking images: the
    many-model finding is judged on that one alone and names it; the text-only model's own
    image finding is untestable. Registered both as text-only, the claim is untestable."""
    from typer.testing import CliRunner

    from coordbench.cli import app
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_models import oracle_plans, planner_reply

    def study(models: Path, out: Path) -> dict:
        res = CliRunner().invoke(app, ["reproduce", "cocobench", "--quick", "--limit", "2",
                                       "--models", str(models), "--model", "good,err",
                                       "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        return {f["id"]: f for f in json.loads(res.stdout.strip().splitlines()[-1])["findings"]}

    def registry(images: set[str]) -> Path:
        f = tmp_path / f"models-{len(images)}.yaml"
        f.write_text("models:\n" + "".join(
            f"  {m}:\n    base_url: {server.base_url}\n    model: {m}\n    max_retries: 0\n"
            f"    timeout_s: 5\n    supports_images: {str(m in images).lower()}\n"
            for m in ("good", "err")))
        return f

    with ScriptedServer(planner_reply(oracle_plans([(None, 2), ("D4", 2)]))) as server:
        one = study(registry({"good"}), tmp_path / "s")
        none = study(registry(set()), tmp_path / "s")  # the same runs, judged again
    blind = one["coco-models-blind"]
    assert "(good)" in blind["note"] and "err" not in blind["note"].split("(")[-1]
    assert "left out" in blind["coordbench_value"]["err"]
    assert "left out" not in blind["coordbench_value"]["good"]
    assert one["coco-blind@err"]["verdict"] == "untestable"
    assert "takes no images" in one["coco-blind@err"]["reason"]
    assert "takes no images" not in one["coco-blind@good"]["reason"]
    assert none["coco-models-blind"]["verdict"] == "untestable"
    assert "takes no images" in none["coco-models-blind"]["reason"]
