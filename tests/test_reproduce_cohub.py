"""`coordbench reproduce cohub`: demonstrations, training and evaluations on the one runner,
then the study's items and findings (on a tiny budget, monkeypatched settings)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.reproduce import cohub

FINDINGS = {"C-T2-act-dp", "C-T2-joint", "C-F4-expert_noisy", "C-F4-chunk", "C-F4-dp",
            "C-F4-joint", "C-F4-bc", "C-T3-local-shared", "C-T3-agent-id", "C-T3-global",
            "C-T3-dp-global"}


def _reproduce(*args: str) -> dict:
    res = CliRunner().invoke(app, ["reproduce", "cohub", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.xdist_group("reproduce-cohub")
def test_cohub_study_trains_plays_and_resumes(tmp_path, monkeypatch):
    tiny = cohub.Settings(("CoCarry",), ("CoCarry",), 2, 5, 2, 1)
    monkeypatch.setattr(cohub, "settings", lambda options: tiny)
    out = tmp_path / "cohub"
    payload = _reproduce("--quick", "--out", str(out))
    assert payload["paper"] == "cohub"
    assert {f["id"] for f in payload["findings"]} == FINDINGS
    for f in payload["findings"]:
        assert f["holds"] in (True, False, None) and f["paper_value"]
    # every method and every ablation cell was trained, with its numbers
    ckpts = sorted(p.name for p in (out / "policies").glob("*.pt"))
    assert len(ckpts) == len(cohub.METHODS) + len(cohub.CELLS) - 1
    info = json.loads((out / "policies" / "CoCarry_joint_s5.json").read_text())
    assert info["steps"] == 5 and info["train_s"] > 0 and info["sharing"] == "joint"
    data = json.loads((out / "findings.json").read_text())
    text = json.dumps(data)
    assert "CoCarry/expert" in text and "CoCarry/joint" in text
    md = (out / "reproduce.md").read_text()
    assert "Observation scope x policy sharing" in md and "| local/shared+id |" in md
    # --quick: Table 3's DP column holds only the main run's dp (local/separate)
    t3 = next(i for i in data["items"] if i["ref"] == "table3")["data"]
    assert t3["local/separate"]["dp_pooled"]["n"] == 2
    assert all(t3[c]["dp_pooled"] is None for c in t3 if c != "local/separate")
    assert {f["id"]: f for f in payload["findings"]}["C-T3-dp-global"]["verdict"] == \
        "untestable"
    # Figure 4 for every policy family, and the study's figures
    assert "| CoCarry | joint | p1 |" in md and "| CoCarry | bc | p3 |" in md
    assert sorted(p.name for p in (out / "figures").glob("*.png")) == [
        "cohub-01-figure4-0.png", "cohub-02-table3-0.png"]
    # the scripted experts are the reference rows: they succeed on these seeds
    assert "| CoCarry | expert | — | — | 2 | 1.000" in md
    # resumed: nothing is trained or played again
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "policies").glob("*.pt")}
    episodes = sorted(p.name for p in (out / "episodes").rglob("*.jsonl"))
    again = _reproduce("--quick", "--out", str(out))
    assert again == payload
    assert {p: p.stat().st_mtime_ns for p in (out / "policies").glob("*.pt")} == mtimes
    assert sorted(p.name for p in (out / "episodes").rglob("*.jsonl")) == episodes


def test_cohub_bad_input_is_one_line(tmp_path):
    from tests.cli_errors import error_line

    assert "--model and --limit do not apply" in error_line(
        ["reproduce", "cohub", "--quick", "--limit", "2"], tmp_path)
    assert "--regime" in error_line(["reproduce", "cohub", "--regime", "all"], tmp_path)


def test_the_full_study_trains_tables_3_dp_cells():
    from coordbench.reproduce.study import Options

    full = [p for p in cohub.policies(Options()) if p.method == "dp"]
    cells = {p.cell for p in full if p.task == cohub.TWO[0]}
    assert cells == {"local/separate", "local/shared", "global/separate", "global/shared"}
    assert not [p for p in cohub.policies(Options(quick=True))
                if p.method == "dp" and p.cell != "local/separate"]
    keys = cohub.keys(Options())
    assert any(isinstance(k.who, cohub.Policy) and k.who.method == "dp"
               and k.who.cell == "global/shared" for k in keys)


def test_dp_findings_need_both_policy_settings_to_gain():
    both_gain = {"local/separate": (2, 50), "global/separate": (20, 50),
                 "local/shared": (1, 50), "global/shared": (18, 50)}
    (f,) = cohub.dp_findings(both_gain, quick=False)
    assert f.verdict == "holds"
    one_gain = {**both_gain, "global/shared": (1, 50)}
    assert cohub.dp_findings(one_gain, quick=False)[0].verdict == "inconclusive"
    assert cohub.dp_findings(both_gain, quick=True)[0].verdict == "untestable"
