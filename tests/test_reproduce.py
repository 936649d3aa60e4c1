"""`coordbench reproduce`: the findings contract, the files it writes, resuming, bad input,
a model filling the paper's rows (loopback server), and the verdict rule."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.reproduce.study import VERDICTS, direction, slope_direction

runner = CliRunner()
FINDING_KEYS = {"id", "paper_ref", "claim", "paper_value", "coordbench_value", "holds"}


def reproduce(*args: str) -> dict:
    res = runner.invoke(app, ["reproduce", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def check_contract(payload: dict, paper: str) -> None:
    assert payload["paper"] == paper
    assert payload["findings"], "no finding"
    ids = [f["id"] for f in payload["findings"]]
    assert len(ids) == len(set(ids))
    for f in payload["findings"]:
        assert FINDING_KEYS <= set(f), f
        assert f["holds"] in (True, False, None)
        assert isinstance(f["claim"], str) and f["claim"]


@pytest.mark.xdist_group("reproduce")
def test_cocobench_quick_writes_the_study_and_resumes(tmp_path):
    out = tmp_path / "coco"
    payload = reproduce("cocobench", "--quick", "--out", str(out))
    check_contract(payload, "cocobench")
    found = {f["id"]: f for f in payload["findings"]}
    # what the offline planners must show on coordbench's instances
    assert found["coco-oracle"]["holds"] is True
    assert found["coco-central-best"]["holds"] is True
    assert found["coco-blind"]["holds"] is None  # rule planners take no image
    for name in ("reproduce.md", "reproduce.html", "findings.json", "report.md"):
        assert (out / name).is_file(), name
    assert list((out / "figures").glob("cocobench-*.png"))
    html = (out / "reproduce.html").read_text()
    assert "<svg" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing is fetched
    md = (out / "reproduce.md").read_text()
    assert "Fig. 6" in md and "48.0% SR" in md  # the paper's number beside ours
    assert "**Quick mode.**" in md  # quick verdicts say what they are
    assert "## Table 6" in md and "GPT-5.6-sol | 123.8 | 18.4 | 19.2" in md  # compute cost
    data = json.loads((out / "findings.json").read_text())
    assert data["paper"] == "cocobench" and data["items"]
    # construct JSON carries the termination and failure shares
    run = RunDir.open(out)
    episodes = sum(len(run.episode_keys(c)) for c in run.conditions)
    again = reproduce("cocobench", "--quick", "--out", str(out))
    assert again == payload  # recomputed from the same saved runs
    assert sum(len(run.episode_keys(c)) for c in RunDir.open(out).conditions) == episodes


@pytest.mark.xdist_group("reproduce-meco")
def test_mecobench_quick_findings(tmp_path):
    out = tmp_path / "meco"
    payload = reproduce("mecobench", "--quick", "--out", str(out))
    check_contract(payload, "mecobench")
    found = {f["id"]: f for f in payload["findings"]}
    assert found["meco-oracle"]["holds"] is True
    # rule teams need communication to hand over: the paper's sequential finding holds
    assert found["meco-comm-hfr"]["holds"] is True
    assert found["meco-comm-seq-sr"]["holds"] is True
    md = (out / "reproduce.md").read_text()
    for ref in ("Table 9", "Table 10", "Fig. 30", "Table 11", "Table 12", "Table 13",
                "Table 15", "Table 18", "Tables 19-20", "Table 22", "Table 2", "Table 3",
                "Fig. 8b", "Fig. 10", "Section 6.2", "Figs. 13b / 34b"):
        assert f"## {ref}" in md, ref
    # Figs. 13b / 34b: the no-location trends, one per team size (1-4 agents)
    items = {i["ref"]: i["data"] for i in json.loads((out / "findings.json").read_text())[
        "items"]}
    noloc = items["Figs. 13b / 34b"]
    assert set(noloc["trends"]) == {"1", "2", "3", "4"}
    d, a, b = noloc["slope_difference"], noloc["slope_2_4_agents"], noloc["slope_1_agent"]
    assert d["delta"] == pytest.approx(a["slope"] - b["slope"])
    assert found["meco-noloc-objects-sr"]["verdict"] in VERDICTS
    for fid in ("meco-tags-plan", "meco-tags-coordq", "meco-tags-correct-cr", "meco-noise-gain",
                "meco-leader-saturates", "meco-memory-parallel", "meco-memory-sequential",
                "meco-dupgrab-size"):
        assert fid in found, fid
    # the published Table 2 row beside ours, and the conflict finding judged per protocol
    assert "75.6% / +4.6 / +2.8" in md
    assert "protocols with both sides" in found["meco-conflict-sr"]["note"]
    assert (out / "reproduce-tasks" / "v1-quarter.json").is_file()


def test_unknown_paper_and_model_are_one_line(tmp_path):
    from coordbench.errors import CoordbenchError

    res = runner.invoke(app, ["reproduce", "physics", "--out", str(tmp_path / "x")])
    assert isinstance(res.exception, CoordbenchError)
    msg = str(res.exception)
    assert "\n" not in msg and "physics" in msg and "mecobench" in msg and "cocobench" in msg
    res = runner.invoke(app, ["reproduce", "mecobench", "--model", "no-such-model", "--out",
                              str(tmp_path / "y")])
    assert isinstance(res.exception, CoordbenchError)
    msg = str(res.exception)
    assert "\n" not in msg and "no-such-model" in msg and "known" in msg
    assert not (tmp_path / "y" / "manifest.json").exists()  # refused before any work


def test_the_entry_point_prints_one_error_line(tmp_path):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "coordbench", "reproduce", "stat-x", "--out",
                          str(tmp_path / "z")], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    lines = [x for x in res.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "mecobench" in lines[0]


def test_a_model_fills_the_paper_rows(tmp_path):
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_team import household_reply
    from tests.test_llm_teams import models_file

    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "m"
        payload = reproduce("mecobench", "--quick", "--limit", "1", "--max-steps", "3",
                            "--model", "scripted",
                            "--models", str(models), "--out", str(out))
        assert server.requests
    check_contract(payload, "mecobench")
    run = RunDir.open(out)
    drivers = {}
    for cond, spec in run.conditions.items():
        for tr in run.load_episodes(cond):
            drivers.setdefault(spec["agents"], []).append(bool(tr.steps(ModelCallEvent)))
    assert set(drivers) == {"llm", "oracle"}  # every non-reference row is the model's
    assert all(drivers["llm"]) and not any(drivers["oracle"])
    assert "the model `scripted`" in (out / "reproduce.md").read_text()


def test_verdict_rule():
    assert direction({"delta": -0.2, "lo": -0.3, "hi": -0.1}, -1) is True
    assert direction({"delta": -0.2, "lo": -0.3, "hi": 0.1}, -1) is None
    # the wrong side with an interval across 0 decides nothing (inconclusive), nor does 0
    assert direction({"delta": 0.1, "lo": -0.1, "hi": 0.3}, -1) is None
    assert direction({"delta": 0.1, "lo": 0.05, "hi": 0.3}, -1) is False  # contradicted
    assert direction({"delta": 0.0, "lo": 0.0, "hi": 0.0}, +1) is None  # untestable
    assert direction({"delta": None}, +1) is None
    assert slope_direction({"slope": -1.0, "lo": -2.0, "hi": -0.5}, -1) is True
    assert slope_direction({"slope": None}, -1) is None


def test_stratified_conflict_difference_is_worked_by_hand():
    from coordbench.reproduce.mecobench_behaviour import stratified

    def cell(d, lo, hi, n, n_ref):
        return {"delta_SR": {"delta": d, "lo": lo, "hi": hi, "n": n, "n_ref": n_ref}}
    # strata of 10 and 30 episodes: weights 1/4 and 3/4; half-widths 0.196 and 0.392, so
    # standard errors 0.1 and 0.2: se = sqrt((0.25 * 0.1)^2 + (0.75 * 0.2)^2)
    got = stratified({"none": cell(-0.4, -0.596, -0.204, 4, 6),
                       "broadcast": cell(0.0, -0.392, 0.392, 10, 20),
                       "leader": None, "discuss": cell(None, None, None, 0, 5)})
    assert got["delta"] == pytest.approx(0.25 * -0.4 + 0.75 * 0.0)
    se = ((0.25 * 0.1) ** 2 + (0.75 * 0.2) ** 2) ** 0.5
    assert got["lo"] == pytest.approx(-0.1 - 1.96 * se)
    assert got["hi"] == pytest.approx(-0.1 + 1.96 * se)
    assert got["strata"] == ["none", "broadcast"]
    assert stratified({"none": None})["delta"] is None


def test_the_studies_play_the_papers_own_task_and_instance_files(tmp_path):
    import shutil

    from coordbench.suites.constructs.instances import select
    from coordbench.suites.mecobench.instances import EXAMPLES

    tasks = tmp_path / "meco-tasks"
    tasks.mkdir()
    for f in EXAMPLES.glob("*_examples.json"):  # the MECoBench release's own task files
        shutil.copy(f, tasks / f.name)
    out = tmp_path / "meco"
    payload = reproduce("mecobench", "--tasks", str(tasks), "--limit", "2", "--out", str(out))
    check_contract(payload, "mecobench")
    md = (out / "reproduce.md").read_text()
    assert f"the task files of `{tasks}`" in md
    manifest = json.loads((out / "manifest.json").read_text())
    sources = {c["source"] for c in manifest["conditions"].values()}
    assert len(sources) == 1 and next(iter(sources)).startswith("meco-tasks-")
    assert all(c["tasks_file"] for c in manifest["conditions"].values())
    inst = tmp_path / "coco-instances"
    inst.mkdir()
    raws = select("rep240")
    (inst / "a.json").write_text(json.dumps(raws[:60:6]))
    (inst / "b.json").write_text(json.dumps(raws[60::12]))
    out = tmp_path / "coco"
    payload = reproduce("cocobench", "--instances", str(inst), "--out", str(out))
    check_contract(payload, "cocobench")
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(name.startswith("constructs_file-") for name in manifest["conditions"])
    n = len(raws[:60:6]) + len(raws[60::12])
    run = RunDir.open(out)
    main = next(c for c in run.conditions if "_central_rule_" in c)
    assert len(run.episode_keys(main)) == n


@pytest.mark.parametrize(("args", "needle"), [
    (["cocobench", "--tasks", "."], "--tasks names MECoBench task files: it applies to "
                                    "mecobench only"),
    (["mecobench", "--instances", "."], "--instances names construct instance files"),
    (["mecobench", "--tasks", "EMPTY"], "holds no task files (*.json)"),
    (["mecobench", "--tasks", "nowhere"], "not a folder"),
    (["mecobench", "--tasks", "BROKEN"], "broken.json"),
])
def test_bad_task_folders_are_one_line(args, needle, tmp_path):
    from tests.cli_errors import error_line

    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "BROKEN").mkdir()
    (tmp_path / "BROKEN" / "broken.json").write_text("{not json")
    args = [str(tmp_path / a) if a in ("EMPTY", "BROKEN") else a for a in args]
    assert needle in error_line(["reproduce", *args, "--out", str(tmp_path / "x")], tmp_path)
    assert not (tmp_path / "x" / "episodes").exists()
