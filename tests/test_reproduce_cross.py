"""`coordbench reproduce cross`: the cross-family study offline (rule minds, scripted
allocators, a learned team) and with a model in every protocol row (loopback server)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import MessageEvent, ModelCallEvent
from tests.scripted_team import household_reply

FINDING_KEYS = {"id", "paper_ref", "claim", "paper_value", "coordbench_value", "holds"}


def _reproduce(*args: str) -> dict:
    res = CliRunner().invoke(app, ["reproduce", "cross", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def _reply(body):
    user = body["messages"][-1]["content"]
    user = user if isinstance(user, str) else user[0]["text"]
    if "ACTION MENU" in user:  # a construct mind's menu
        ids = re.findall(r"^(\d+): agent_", user, flags=re.M)
        return "REASON: nearest\nACTION: " + (ids[-1] if ids else "0")
    if '{"task"' in user:  # a STAT mind with a choice
        free = re.findall(r"^- task (\d+):", user, flags=re.M)
        return json.dumps({"task": int(free[0]) if free else 0, "memory": "took nearest"})
    return household_reply(body)


@pytest.mark.xdist_group("reproduce-cross")
def test_cross_quick_offline_then_with_a_model(tmp_path):
    out = tmp_path / "cross"
    payload = _reproduce("--quick", "--steps", "1000", "--out", str(out))
    assert payload["paper"] == "cross"
    found = {f["id"]: f for f in payload["findings"]}
    assert len(found) == len(payload["findings"])
    for f in payload["findings"]:
        assert FINDING_KEYS <= set(f) and f["holds"] in (True, False, None)
    # what rule minds must show: telling teammates what one takes removes duplicated claims
    # in every family, and more agents contend more
    assert found["X-rule-broadcast-redundancy"]["holds"] is True
    assert set(found["X-rule-broadcast-redundancy"]["coordbench_value"]) == {
        "household", "constructs", "stat"}
    assert set(found["X-rule-discuss-redundancy"]["coordbench_value"]) == {
        "household", "constructs"}  # STAT has no discuss
    for family in ("household", "constructs", "stat"):
        assert found[f"X-team-{family}"]["holds"] is True
    assert "X-learned-3A-6T-5x3" in found
    for name in ("reproduce.md", "reproduce.html", "findings.json", "report.md"):
        assert (out / name).is_file(), name
    md = (out / "reproduce.md").read_text()
    assert "Who allocates best on the same STAT instances" in md
    assert "learned (mappo+pair, 1 seeds)" in md
    run = RunDir.open(out)
    suites = {spec["suite"] for spec in run.conditions.values()}
    assert suites == {"mecobench", "constructs", "stat"}
    assert (out / "learned" / "manifest.json").is_file()
    episodes = sum(len(run.episode_keys(c)) for c in run.conditions)

    from coordbench.llm.loopback import ScriptedServer

    with ScriptedServer(_reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n"
                          "    max_retries: 0\n    timeout_s: 5\n")
        with_model = _reproduce("--quick", "--steps", "1000", "--out", str(out), "--model",
                                "s", "--models", str(models), "--limit", "1")
    found = {f["id"]: f for f in with_model["findings"]}
    assert "X-llm-broadcast-redundancy" in found
    assert any(k.startswith("X-llm-") and k.endswith("3A-6T-5x3") for k in found)
    run = RunDir.open(out)
    llm = [c for c, spec in run.conditions.items() if spec.get("model") == "s"]
    assert {run.conditions[c]["suite"] for c in llm} == {"mecobench", "constructs", "stat"}
    for c in llm:
        trs = run.load_episodes(c)
        assert trs and all(t.steps(ModelCallEvent) for t in trs), c
        if "none" not in c:
            assert any(t.steps(MessageEvent) for t in trs), c
    # the offline rows were not played again
    assert sum(len(run.episode_keys(c)) for c in run.conditions if c not in llm) == episodes
    assert list((out / "figures").glob("cross-*.png"))  # the study draws its figures
    played = {c: len(run.episode_keys(c)) for c in run.conditions}

    # a second model: only its rows play; the study pairs the two models
    with ScriptedServer(_reply) as server:
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n"
                          f"  t:\n    base_url: {server.base_url}\n    model: t\n")
        both = _reproduce("--quick", "--steps", "1000", "--out", str(out), "--model",
                          "s,t", "--models", str(models), "--limit", "1")
        assert {r["model"] for r in server.requests} == {"t"}
    run = RunDir.open(out)
    assert all(len(run.episode_keys(c)) == n for c, n in played.items())
    found = {f["id"]: f for f in both["findings"]}
    assert found["X-llm-broadcast-redundancy@t"]["models"] == ["t"]
    data = json.loads((out / "findings.json").read_text())
    pairs = next(i["data"] for i in data["items"] if i["ref"] == "Models, paired")["pairs"]
    assert set(pairs) == {"s - t"} and pairs["s - t"]["pairs"] > 0


def test_interval_bars_take_an_end_a_rounding_error_inside_its_estimate():
    from coordbench.reproduce.plots import interval_bars

    # a correlation's interval over few points can end 1e-16 past its estimate
    fig = interval_bars("r", {"panel": {"a": (0.5, 0.5 + 1e-16, 0.7), "b": (0.2, None, None),
                                        "c": (None, None, None)}})
    assert fig.caption == "r"
