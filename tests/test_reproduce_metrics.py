"""`reproduce metrics`: each metric against injected failures, and CoCoBench's Fig. 5 check on
independently injected construct violations."""

import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.metrics import constructs as C
from coordbench.reproduce import metrics as M
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import select
from tests.cli_errors import error_line


def _oracle(construct):
    raw = next(r for r in select("rep240") if r["coordbench_construct"]["construct"] == construct
               and r["coordbench_construct"].get("knife" if construct == "D3" else "construct"))
    return run_construct(raw, ConstructSpec("decentralized", "oracle"), "x")


@pytest.mark.parametrize("construct", ["D1", "D2", "D3", "D4"])
def test_each_injected_violation_moves_its_own_score_only(construct):
    tr = _oracle(construct)
    before = C.cross_scores(tr)
    assert all(v in (None, 1.0) for v in before.values())
    for kind in ("D1", "D2", "D3", "D4"):
        rates = {k: (1.0 if k == kind else 0.0) for k in ("D1", "D2", "D3", "D4")}
        after = C.cross_scores(M.inject_construct_violations(tr, rates, 0))
        for score in ("D1", "D2", "D3", "D4"):
            if score != kind:  # no other score's inputs change
                assert after[score] == before[score], (construct, kind, score)
        if before[kind] is not None:
            assert after[kind] is None or after[kind] <= before[kind]
    # every action count per agent is kept by D2-D4 rewrites (D1 moves walks to agent 0)
    same = M.inject_construct_violations(tr, {"D1": 0, "D2": 1, "D3": 1, "D4": 1}, 0)
    assert C.executed_actions(same) == C.executed_actions(tr)
    assert C.makespan(same) == C.makespan(tr)


def test_the_rate_a_direct_count_gives_back():
    from coordbench.core.trajectory import (
        ActionRecord,
        AgentSpec,
        EpisodeEndEvent,
        HouseholdStepEvent,
        Trajectory,
        TrajectoryHeader,
    )

    def ep(outcomes):
        header = TrajectoryHeader(episode_id="x", suite="mecobench", task_id="t", seed=0,
                                  team=[AgentSpec(id="a0", driver="h")],
                                  coordbench_version="t", params={"agents": 1, "budget": 9})
        steps = [HouseholdStepEvent(t=t, actions=[ActionRecord(agent=0, action=a, outcome=o)],
                                    satisfied={}, completion=0.5)
                 for t, (a, o) in enumerate(outcomes)]
        return Trajectory(header=header, events=[*steps, EpisodeEndEvent(
            t=len(steps), success=False, termination="truncated")])

    probe = next(p for p in M.PROBES if p.id == "household/protocol_violation")
    got = M.recovered(probe, [ep([("none", "protocol_failure"), ("walk", "ok")] * 5)], [])
    assert got["mean"] == pytest.approx(0.5) and got["count"] == 5 and got["n"] == 10
    # HFR under slips: h0 = 1/4 at rate 0, HFR = 5/8 => p = (5/8 - 1/4) / (3/4) = 0.5
    slip = next(p for p in M.PROBES if p.id == "household/handover_slip")
    base = ep([("handover", "too_far")] + [("handover", "ok")] * 3)
    hit = ep([("handover", "receiver_not_ready")] * 5 + [("handover", "ok")] * 3)
    assert M.recovered(slip, [hit], [base])["mean"] == pytest.approx(0.5)
    # planners that stop on their own at rate 0 (1 end in 10 decisions: 9 steps + the end)
    # are taken out: 4 ends in 10 decisions (6 steps + 4) => p = (0.4 - 0.1) / 0.9 = 1/3
    stops = next(p for p in M.PROBES if p.id == "constructs/hallucination")

    def stopped(steps, how):
        t = ep([("walk", "ok")] * steps)
        end = t.events[-1].model_copy(update={"termination": how})
        return t.model_copy(update={"events": [*t.events[:-1], end]})

    base0 = [stopped(9, "normal_stop")]
    hit0 = [stopped(3, "normal_stop"), stopped(1, "normal_stop"), stopped(1, "normal_stop"),
            stopped(1, "normal_stop")]
    got = M.recovered(stops, hit0, base0)
    assert got["base"] == pytest.approx(0.1) and got["mean"] == pytest.approx(1 / 3)


def test_reproduce_metrics_quick_from_the_cli(tmp_path, monkeypatch):
    # smaller than --quick so the suite stays fast; the study is the same code
    monkeypatch.setattr(M, "sizes", lambda options: {"household": 6, "constructs": 40,
                                                      "stat": 4})
    res = CliRunner().invoke(app, ["reproduce", "metrics", "--quick", "--out",
                                   str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["paper"] == "metrics"
    ids = {f["id"] for f in out["findings"]}
    assert {f"metrics-{p.family}-{p.failure}" for p in M.PROBES} <= ids
    assert "metrics-constructs-distinct" in ids
    found = {f["id"]: f for f in out["findings"]}
    # a direct count: the protocol violations recorded give the injected rate back
    back = found["metrics-household-protocol_violation"]["coordbench_value"]
    assert abs(back["rate given back"]["0.5"] - 0.5) < 0.1
    assert found["metrics-constructs-distinct"]["holds"] is True
    written = tmp_path / "r"
    assert (written / "reproduce.md").exists() and (written / "findings.json").exists()
    assert list((written / "figures").glob("*.png"))
    text = (written / "reproduce.md").read_text()
    assert "Sensitivity and specificity" in text and "▲" in text
    # a rerun plays nothing new and gives the same findings
    again = CliRunner().invoke(app, ["reproduce", "metrics", "--quick", "--out",
                                     str(tmp_path / "r"), "--json"])
    assert json.loads(again.stdout.strip().splitlines()[-1]) == out


def test_reproduce_metrics_refuses_a_model(tmp_path):
    line = error_line(["reproduce", "metrics", "--model", "m", "--out", str(tmp_path / "x")],
                      tmp_path)
    assert "reproduce metrics injects failures into rule minds" in line
