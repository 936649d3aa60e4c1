"""Many models in one study: three scripted planners of known skill (tests/scripted_models.py)
on the loopback server rank as their scripts imply, the paired tests find the differences
the scripts put there, a one-model study is the paper's study, and adding a model plays
only that model's episodes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.errors import CoordbenchError
from coordbench.llm.loopback import ScriptedServer
from coordbench.reproduce.models import mostly, order_breaks, parse_models
from coordbench.reproduce.study import VERDICTS
from tests.scripted_models import oracle_plans, planner_reply, registry

runner = CliRunner()
N = 4  # instances per condition


def _study(models_file, out, *models: str) -> dict:
    args = ["reproduce", "cocobench", "--quick", "--limit", str(N), "--models",
            str(models_file), "--out", str(out), "--json"]
    for m in models:
        args += ["--model", m]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def _episodes(out) -> dict[str, int]:
    run = RunDir.open(out)
    return {c: len(run.episode_keys(c)) for c in run.conditions}


@pytest.mark.xdist_group("reproduce")
def test_three_scripted_models_rank_as_their_scripts_imply(tmp_path):
    plans = oracle_plans([(None, N), ("D4", N)])
    out = tmp_path / "study"
    with ScriptedServer(planner_reply(plans)) as server:
        models = registry(tmp_path, server.base_url)
        _study(models, out, "good", "err")
        before = _episodes(out)
        served = len(server.requests)
        payload = _study(models, out, "good,err", "never")  # comma-separated works too
        # adding a model played only that model's episodes
        assert {r["model"] for r in server.requests[served:]} == {"never"}
        after = _episodes(out)
        assert all(after[c] == n for c, n in before.items())
        assert len(after) > len(before)
        one = _study(models, tmp_path / "one", "good")
    data = json.loads((out / "findings.json").read_text())
    items = {i["ref"]: i["data"] for i in data["items"]}
    table1 = items["Table 1 / Figs. 7-9"]["table1"]
    sr = {m: table1[m]["SR"]["mean"] for m in ("good", "err", "never")}
    assert sr["good"] == 1.0 and sr["never"] == 0.0 and sr["good"] > sr["err"] > sr["never"]
    for m, row in table1.items():  # SR per construct adds up to the overall SR
        per = [row[f"SR_D{k}"] for k in (1, 2, 3, 4)]
        assert sum(r["count"] for r in per) == row["SR"]["count"], m
        assert sum(r["n"] for r in per) == row["SR"]["n"], m
        assert {r["mean"] for r in per if r["n"]} == ({1.0} if m == "good" else
                                                     {0.0} if m == "never" else
                                                     {r["mean"] for r in per if r["n"]})
    pairs = items["Models, paired"]["pairs"]
    assert set(pairs) == {"good - err", "good - never", "err - never"}
    for key in pairs:  # every difference the scripts put there is found, after Holm
        assert pairs[key]["delta"] > 0 and pairs[key]["lo"] > 0, key
        assert pairs[key]["p_holm"] < 0.05 and pairs[key]["p_holm"] >= pairs[key]["p"]
    # err fails exactly the instances its script fails: every discordant pair favours good
    assert pairs["good - err"]["discordant"][1] == 0
    # every finding names the models it was judged on
    found = {f["id"]: f for f in payload["findings"]}
    assert found["coco-models-blind"]["models"] == ["good", "err", "never"]
    assert found["coco-oracle@never"]["models"] == ["never"]
    # a one-model study is the paper's study: the same numbers as that model's part here
    for f in one["findings"]:
        assert f["models"] == ["good"]
        mine = found[f"{f['id']}@good"]
        assert (mine["coordbench_value"], mine["holds"]) == (f["coordbench_value"],
                                                             f["holds"]), f["id"]
    md = (out / "reproduce.md").read_text()
    assert "## Table 1 [good]" in md and "## Models, paired" in md
    assert "| model | SR | CS | SR D1 | C_D1 | SR D2 |" in md


@pytest.mark.parametrize("value", ["", "a,,b", " , "])
def test_an_empty_model_name_is_one_line(value):
    with pytest.raises(CoordbenchError, match="empty model") as e:
        parse_models([value])
    assert "\n" not in str(e.value)


def test_an_unknown_model_among_several_is_one_line_before_any_work(tmp_path):
    with ScriptedServer(lambda body: "REASON: x") as server:
        models = registry(tmp_path, server.base_url)
        res = runner.invoke(app, ["reproduce", "cocobench", "--quick", "--model", "good",
                                  "--model", "nobody", "--models", str(models), "--out",
                                  str(tmp_path / "x")])
    assert isinstance(res.exception, CoordbenchError)
    msg = str(res.exception)
    assert "\n" not in msg and "nobody" in msg
    assert not (tmp_path / "x" / "manifest.json").exists()


def test_models_repeat_once_in_order():
    assert parse_models(["b,a", "a", "c"]) == ("b", "a", "c")


def test_most_models_rule():
    assert mostly([True, True, None]) is True
    assert mostly([True, None, False]) is None
    assert mostly([True, False]) is False  # half contradict it
    assert mostly([]) is None


def test_order_breaks_is_decided_by_intervals():
    sure = {"delta": 0.5, "lo": 0.2, "hi": 0.8}
    worse = {"delta": -0.3, "lo": -0.5, "hi": -0.1}
    unsure = {"delta": 0.1, "lo": -0.2, "hi": 0.4}
    lower = {"delta": -0.01, "lo": -0.3, "hi": 0.3}  # below 0, but the runs cannot tell

    def diff(table):
        return lambda a, b: table.get((a, b), {"delta": 0.0, "lo": -1, "hi": 1})

    ability = {("A", "B"): sure}
    assert order_breaks(["A", "B"], diff(ability), diff({("A", "B"): worse})) is True
    assert order_breaks(["A", "B"], diff(ability), diff({("A", "B"): sure})) is False
    assert order_breaks(["A", "B"], diff(ability), diff({("A", "B"): unsure})) is None
    assert order_breaks(["A", "B"], diff(ability), diff({("A", "B"): lower})) is None
    assert order_breaks(["A", "B"], diff({}), diff({("A", "B"): worse})) is None


@pytest.mark.xdist_group("reproduce")
def test_repeats_play_every_model_row_with_k_seeds(tmp_path):
    plans = oracle_plans([(None, 1), ("D4", 1)])
    out = tmp_path / "k"
    with ScriptedServer(planner_reply(plans)) as server:
        models = registry(tmp_path, server.base_url)
        res = runner.invoke(app, ["reproduce", "cocobench", "--quick", "--limit", "1",
                                  "--model", "good", "--model", "never", "--repeats", "2",
                                  "--models", str(models), "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
    names = list(RunDir.open(out).conditions)
    for model in ("good", "never"):
        mine = [n for n in names if f"llm-{model}_" in n]
        assert mine and {n.replace("_seed1", "_seed0") for n in mine} == {
            n for n in mine if "_seed0" in n}
    assert not any("oracle" in n and "_seed1" in n for n in names)  # reference rows once
    data = json.loads((out / "findings.json").read_text())
    rep = next(i["data"] for i in data["items"] if i["ref"] == "Models, repeated")
    assert rep["good"]["k"] == 2 and rep["never"]["pass@k"] == 0.0
    # the scripted planners are deterministic: every seed gives the same outcome
    assert rep["good"]["pass@k"] == rep["good"]["pass^k"] > 0


@pytest.mark.parametrize("args, needle", [
    (["--repeats", "0", "--model", "good"], "--repeats"),
    (["--repeats", "2"], "give --model"),
])
def test_bad_repeats_are_one_line(args, needle, tmp_path):
    from tests.cli_errors import error_line

    line = error_line(["reproduce", "cocobench", "--quick", *args, "--out",
                       str(tmp_path / "r")], tmp_path)
    assert needle in line
    assert not (tmp_path / "r").exists()


@pytest.mark.xdist_group("reproduce-meco")
def test_a_two_model_mecobench_study_adds_the_papers_model_items(tmp_path):
    from tests.scripted_team import household_reply

    out = tmp_path / "meco"
    with ScriptedServer(household_reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text("models:\n" + "".join(
            f"  {m}:\n    base_url: {server.base_url}\n    model: {m}\n    timeout_s: 5\n"
            for m in ("strong", "weak")))
        res = runner.invoke(app, ["reproduce", "mecobench", "--quick", "--limit", "1",
                                  "--max-steps", "2", "--model", "strong,weak", "--models",
                                  str(models), "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    found = {f["id"]: f for f in payload["findings"]}
    for fid in ("meco-models-second-agent", "meco-models-sequential-harder",
                "meco-models-ability-correlates", "meco-models-weak-gain",
                "meco-models-capability-not-coordination", "meco-models-vision-auc",
                "meco-models-strong-leader-lifts", "meco-models-strong-leader-short"):
        assert found[fid]["models"] == ["strong", "weak"], fid
    # Fig. 32's mixed team: the first model leads the second's follower
    specs = RunDir.open(out).conditions.values()
    mixed = [s for s in specs if s.get("leader_model")]
    assert [(s["leader_model"], s["model"], s["protocol"]) for s in mixed] == [
        ("strong", "weak", "leader")]
    md = (out / "reproduce.md").read_text()
    for ref in ("## Table 8 / Figs. 5-6", "## Fig. 11", "## Fig. 32",
                "## Table 9 / Fig. 7a [weak]", "## Tables 14 / 16", "## Fig. 37",
                "## Figs. 13b / 34b [weak]"):
        assert ref in md, ref
    for fid in ("meco-models-second-agent-cr", "meco-models-noloc-drop",
                "meco-models-noloc-second-agent-cr", "meco-models-noisy-second-agent",
                "meco-models-dupgrab-gain"):
        assert found[fid]["models"] == ["strong", "weak"], fid
        assert found[fid]["verdict"] in VERDICTS, fid
    # two models: a correlation over models has no estimate
    assert found["meco-models-dupgrab-gain"]["verdict"] == "untestable"
    assert found["meco-noloc-objects-sr@weak"]["verdict"] in VERDICTS
    items = {i["ref"]: i["data"] for i in json.loads((out / "findings.json").read_text())[
        "items"]}
    t8 = items["Table 8 / Figs. 5-6"]
    for m in ("strong", "weak"):
        lv, row = t8["levels"][m], t8["table8"][m]
        assert row["P1 AUC"] == lv["parallel_1"]["AUC"]
        p2, s2 = lv["parallel_2"]["CR"]["mean"], lv["sequential_2"]["CR"]["mean"]
        assert row["Avg. CR"] == pytest.approx((p2 + s2) / 2)
        assert set(t8["cr_gain"][m]) >= {"delta", "lo", "hi", "n"}
        assert set(items["Tables 14 / 16"]["no_location"][m]) == {"1", "2"}
        r = items["Fig. 37"]["rate"][m]  # over the parallel two-agent episodes
        assert r["n"] == lv["parallel_2"]["n"] >= 1
    figures = {p.name for p in (out / "figures").glob("*.png")}
    assert len(figures) >= 3


def test_a_study_prints_its_estimate_and_keeps_to_its_cost_limit(tmp_path):
    import subprocess
    import sys

    plans = oracle_plans([(None, 2), ("D4", 2)])
    out = tmp_path / "priced"

    def study(*extra):
        return subprocess.run(
            [sys.executable, "-m", "coordbench", "reproduce", "cocobench", "--quick",
             "--limit", "2", "--model", "good", "--models", str(priced), "--out", str(out),
             *extra], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)

    with ScriptedServer(planner_reply(plans)) as server:
        priced = tmp_path / "priced.yaml"
        # $1 per 1,000 tokens: a planner call costs about $0.25, an episode a few dollars
        priced.write_text(f"models:\n  good:\n    base_url: {server.base_url}\n"
                          "    model: good\n    prices: {prompt_per_mtok: 1000, "
                          "completion_per_mtok: 1000}\n")
        res = study("--cost-limit", "200")
        assert res.returncode == 0, res.stderr
        plan = [x for x in res.stderr.splitlines() if x.startswith("  good:")]
        assert plan and "13 of 14 episodes to play" in plan[0] and "(from 1 episode" in plan[0]
        data = json.loads((out / "findings.json").read_text())
        cost = next(i["data"] for i in data["items"] if i["ref"] == "Models, cost")["good"]
        assert cost["episodes"] == 14 and cost["cost"] > 1 and cost["wall_s"] > 0
        kept = _episodes(out)
        # a new model whose estimate exceeds the limit: refused without a terminal
        priced.write_text(priced.read_text() + f"  dear:\n    base_url: {server.base_url}\n"
                          "    model: dear\n    prices: {prompt_per_mtok: 1000, "
                          "completion_per_mtok: 1000}\n")
        res = study("--model", "dear", "--cost-limit", "3")
        assert res.returncode == 2
        (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
        assert "--cost-limit $3" in line and "--yes" in line
        assert all(_episodes(out)[c] == n for c, n in kept.items())  # nothing lost
        served = len(server.requests)
        res = study("--model", "dear", "--cost-limit", "3", "--yes")
        assert res.returncode == 0, res.stderr
        spent = json.loads((out / "harness_stats.json").read_text())[-1]["cost"]
    # the limit stops the calls: one episode's worth past it at most, never the whole study
    assert len(server.requests) - served < 40 and spent < 3 + 8
