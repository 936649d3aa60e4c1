"""`coordbench reproduce stat` and `stat table --scaling`: the findings contract, resuming,
the Table 14 form, the scaling analysis on hand-made samples, the paper's transcription, and
bad input."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from coordbench.analyses.stat import SCALING_PAIRS, cell, change, claim, pair, scaling
from coordbench.cli import app
from coordbench.reproduce import stat_paper

runner = CliRunner()
SMALL = ["--quick", "--regime", "baseline", "--steps", "2000", "--seeds", "0-1",
         "--methods", "vdn,iql"]


# session-scoped: the grouped tests that read it share one play of it on their worker
@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("stat") / "run"
    res = runner.invoke(app, ["reproduce", "stat", *SMALL, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.xdist_group("reproduce-stat")
def test_reproduce_stat_writes_findings_and_resumes(small_run):
    out, payload = small_run
    assert payload["paper"] == "stat"
    ids = [f["id"] for f in payload["findings"]]
    assert len(ids) == len(set(ids)) and "stat-env-return" in ids
    for f in payload["findings"]:
        assert {"id", "paper_ref", "claim", "paper_value", "coordbench_value", "holds",
                "note"} <= set(f)
        assert f["holds"] in (True, False, None)
    found = {f["id"]: f for f in payload["findings"]}
    # environment-driven effects that even 2k-step learners and random play show
    assert found["stat-env-return"]["holds"] is True
    assert found["stat-tasks-return"]["holds"] is True
    # the Extreme pairs are missing: the finding says which runs to add instead of failing
    assert "5A-25T-25x15" in found["stat-env-return"]["note"]
    assert found["stat-learned-near-random"]["holds"] is None
    assert found["stat-coma-behind"]["holds"] is None  # COMA was not trained
    # 2 methods x 4 configurations x 2 seeds
    assert len(list(out.glob("*_seed*.json"))) == 16
    for name in ("reproduce.md", "reproduce.html", "findings.json", "report.md"):
        assert (out / name).is_file(), name
    md = (out / "reproduce.md").read_text()
    assert "| VDN | Env Size Baseline | ↓* / ↓* |" in md  # ours / the paper's
    assert "Env Size Extreme (5A-25T-25x15 -> 5A-25T-50x30): no runs on" in md
    assert "steps/s acting only" in md
    data = json.loads((out / "findings.json").read_text())
    t14 = next(i for i in data["items"] if i["ref"] == "Table 14")["data"]
    assert t14["missing"]["env_extreme"] == ["5A-25T-25x15", "5A-25T-50x30"]
    # a rerun trains nothing: every result file is kept as it is
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*_seed*.json")}
    res = runner.invoke(app, ["reproduce", "stat", *SMALL, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert {p: p.stat().st_mtime_ns for p in out.glob("*_seed*.json")} == stamps
    assert json.loads(res.stdout.strip().splitlines()[-1]) == payload


@pytest.mark.xdist_group("reproduce-stat")
def test_stat_table_scaling_prints_table14_form(small_run, tmp_path):
    out, _ = small_run
    res = runner.invoke(app, ["stat", "table", str(out), "--scaling"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "| method | comparison | R | Th | CR | TC | CPT | PAD |"
    row = next(ln for ln in lines if ln.startswith("| VDN | Env Size Baseline |"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:]
    assert len(cells) == 6 and all(c[0] in "↑↓=" and c[1:] in ("*", "ns") for c in cells)
    assert cells[0] == "↓*"  # a 4x larger plane: lower return
    assert any("no runs on 5A-25T-25x15 and 5A-25T-50x30" in ln for ln in lines)
    assert any(ln.startswith("| *Hungarian* | Tasks Baseline |") for ln in lines)
    res = runner.invoke(app, ["stat", "table", str(out), "--scaling", "--format", "csv"])
    assert res.exit_code == 0, res.output
    head, *rows = res.stdout.strip().splitlines()
    assert head == "comparison,method,metric,cell,delta,lo,hi,p,n,n_ref"
    first = rows[0].split(",")
    assert first[0] == "env_baseline" and first[-2:] == ["2", "2"]


def _samples(first: list[float], second: list[float], method: str = "m",
             p=SCALING_PAIRS[0]) -> dict:
    return {(method, p.first): [{"return": v} for v in first],
            (method, p.second): [{"return": v} for v in second]}


def test_change_is_second_minus_first_with_welch():
    p = SCALING_PAIRS[0]
    d = change(_samples([10.0, 12.0, 14.0], [4.0, 5.0, 6.0]), "m", p, "return")
    assert d["delta"] == pytest.approx(-7.0)
    # Welch: se = sqrt(4/3 + 1/3), df = (5/3)^2 / ((4/3)^2/2 + (1/3)^2/2) = 2.941,
    # t_{0.975, 2.941} = 3.219
    se = math.sqrt(4 / 3 + 1 / 3)
    assert d["hi"] - d["lo"] == pytest.approx(2 * 3.219 * se, rel=1e-3)
    assert d["p"] < 0.05 and d["cell"] == "↓*"
    assert d["n"] == 3 and d["n_ref"] == 3
    flat = change(_samples([1.0, 3.0], [2.0, 2.5]), "m", p, "return")
    assert flat["cell"] == "↑ns"
    assert change(_samples([1.0], [2.0]), "m", p, "return")["cell"] == "↑?"
    assert change(_samples([], [2.0]), "m", p, "return") is None
    assert cell(None) == "–"
    assert cell({"delta": 0.0, "p": 1.0}) == "=ns"


def test_scaling_names_missing_configurations():
    sc = scaling(_samples([1.0, 2.0], [0.5, 0.6]), ["m"])
    assert sc["pairs"] == [p.id for p in SCALING_PAIRS]
    assert "env_baseline" not in sc["missing"]
    assert sc["missing"]["agents_extreme"] == ["5A-25T-50x30", "9A-25T-50x30"]
    assert sc["rows"]["env_baseline"]["m"]["R"]["cell"] == "↓ns"
    assert sc["rows"]["tasks_baseline"]["m"]["R"] is None
    with pytest.raises(KeyError, match="env_baseline"):
        pair("bogus")


def test_claim_quantifiers():
    up_sig = {"delta": 2.0, "p": 0.01}
    up_ns = {"delta": 2.0, "p": 0.4}
    down = {"delta": -1.0, "p": 0.01}
    assert claim([up_sig, up_sig], +1) is True
    assert claim([up_sig, up_ns], +1) is None
    assert claim([up_sig, down], +1) is False
    assert claim([up_ns, down], +1, "any") is None
    assert claim([up_sig, down], +1, "any") is True
    assert claim([down], +1, "any") is False
    assert claim([None, {"delta": None}], +1) is None


def test_table14_transcription_is_consistent():
    for metric, rows in stat_paper.TABLE14.items():
        assert set(rows) == {p.id for p in SCALING_PAIRS}, metric
        for pid, text in rows.items():
            cells = text.split()
            assert len(cells) == 6, (metric, pid)
            p = pair(pid)
            three_agent = p.first.startswith("3A") and p.second.startswith("3A")
            # DQN (the first column) only runs on 3-agent configurations
            assert (cells[0] != "–") == three_agent, (metric, pid)
            assert all(c == "–" or (c[0] in "↑↓" and c[1:] in ("*", "ns")) for c in cells)
    assert stat_paper.paper_cell("R", "agents_baseline", "iql") == "↓*"
    assert stat_paper.paper_cell("R", "agents_baseline", "mappo") == "–"
    for tab in (stat_paper.FINAL_RETURN, stat_paper.MAX_RETURN, stat_paper.THROUGHPUT):
        assert len(tab) == 9 and all(len(v) == 6 for v in tab.values())
        # max return >= final return wherever both exist
    for c, row in stat_paper.FINAL_RETURN.items():
        for f, m in zip(row, stat_paper.MAX_RETURN[c], strict=True):
            assert (f is None) == (m is None) and (f is None or m >= f)


@pytest.mark.parametrize("args,message", [
    (["stat", "--regime", "huge"], "unknown --regime 'huge'"),
    (["stat", "--methods", "vdn,alphazero"], "unknown method 'alphazero'"),
    (["stat", "--methods", "vdn+attention"], "unknown method 'vdn+attention'"),
    (["stat", "--model", "m"], "--model applies to mecobench, cocobench and cross"),
    (["stat", "--limit", "3"], "--limit caps cases per condition"),
    (["stat", "--seeds", "4-1"], "--seeds range"),
    (["stat", "--seeds", ""], "--seeds must look like 0-4"),
    (["stat", "--methods", ","], "--methods names no method"),
    (["cocobench", "--regime", "baseline"], "--regime sets what the STAT study trains"),
    (["mecobench", "--steps", "100"], "--steps sets what the STAT study trains"),
])
def test_reproduce_stat_bad_input_is_one_line(args, message, tmp_path):
    from coordbench.errors import CoordbenchError

    out = tmp_path / "never"
    res = runner.invoke(app, ["reproduce", *args, "--out", str(out)])
    assert isinstance(res.exception, CoordbenchError), res.output
    msg = str(res.exception)
    assert message in msg and "\n" not in msg, msg
    assert not (out / "manifest.json").exists()  # refused before any work


def test_train_plan_files_pair_networks_under_their_own_label():
    from coordbench.learn.core import method_label
    from coordbench.reproduce.stat import train_plan
    from coordbench.reproduce.study import Options

    plan = train_plan(Options(quick=True, regime="baseline", methods=("dqn", "vdn+pair"),
                              seeds=(0, 1), steps=1000))
    labels = {(tc.config, method_label(tc.algo, tc.extra)) for tc in plan}
    # DQN only where its joint action space exists (the 3-agent configurations)
    assert ("5A-12T-10x6", "dqn") not in labels and ("3A-6T-5x3", "dqn") in labels
    assert ("5A-12T-10x6", "vdn+pair") in labels
    assert len(plan) == (3 + 4) * 2


@pytest.mark.xdist_group("reproduce-stat")
def test_ctde_competitive_is_judged_on_the_largest_configuration(small_run):
    from coordbench.reproduce.stat import COMPETITIVE_MARGIN
    from coordbench.reproduce.study import VERDICTS, judge

    out, payload = small_run
    found = {f["id"]: f for f in payload["findings"]}["stat-ctde-competitive"]
    assert found["verdict"] in VERDICTS and "5A-12T-10x6" in found["note"]
    data = json.loads((out / "findings.json").read_text())
    mine = next(i for i in data["items"] if i["ref"] == "App. I")["data"]["ctde_competitive"]
    assert list(mine) == ["5A-12T-10x6"]  # the baseline regime's largest
    row = mine["5A-12T-10x6"]
    assert (row["ctde"], row["rival"]) == ("vdn", "iql")
    # the verdict is the non-inferiority test: the difference shifted by the margin
    diff = row["difference"]
    assert row["margin"] > 0 and COMPETITIVE_MARGIN == 0.05
    shifted = {**diff, **{k: diff[k] + row["margin"] for k in ("delta", "lo", "hi")}}
    assert judge(shifted, +1, unit="seeds").verdict == row["verdict"] == found["verdict"]
    assert row["paper_gap"] is not None  # Table 5 has the configuration
