"""`reproduce attribution --quick`: the counterfactual method against injected failures in
every family, the baselines beside it, and the Who&When judge against a loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.llm.loopback import ScriptedServer
from coordbench.reproduce import attribution as A
from coordbench.reproduce.study import Options
from tests.cli_errors import error_line


# the quick study is the expensive part: played once, on one worker (a session-scoped
# fixture of grouped tests; a module-scoped one was played again on the second worker)
@pytest.fixture(scope="session")
def study(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("attr") / "study"
    res = CliRunner().invoke(app, ["reproduce", "attribution", "--quick", "--out", str(out),
                                   "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.xdist_group("reproduce-attribution")
def test_the_counterfactual_method_finds_the_injected_seat_and_step(study):
    out, payload = study
    assert payload["paper"] == "attribution"
    verdicts = {f["id"]: f["verdict"] for f in payload["findings"]}
    assert verdicts["cf-agent"] == "holds" and verdicts["cf-step"] == "holds"
    assert verdicts["cf-beats-random"] == "holds"
    (item,) = json.loads((out / "findings.json").read_text())["items"]
    data = item["data"]
    families = {a.family for a in A.arms(Options(quick=True))}
    # every family contributes failures the injection caused
    assert set(data["caused"]) == families and all(v > 0 for v in data["caused"].values())
    acc = data["accuracy"]
    cf, rnd, last = acc["counterfactual"], acc["random"], acc["last_agent"]
    assert cf["all"]["agent"]["mean"] >= 0.9 and cf["all"]["step_within"]["mean"] >= 0.7
    for fam in families:
        assert cf[fam]["agent"]["mean"] >= 0.9, fam
    assert rnd["all"]["agent"]["mean"] < 0.6 and last["all"]["agent"]["mean"] < 0.7
    assert cf["all"]["agent"]["n"] == sum(data["caused"].values())
    # a fresh reference names the seat; its step lies no earlier than the clean one's
    ruled = acc[A.TAKEOVER_METHOD]["all"]
    assert ruled["agent"]["mean"] >= 0.9
    assert ruled["step"]["mean"] <= cf["all"]["step"]["mean"]
    # results live beside the episodes, one folder per question; a rerun replays nothing
    run = RunDir.open(out)
    stored = list((out / "attribution").rglob("*.json"))
    assert len(stored) == cf["all"]["agent"]["n"]
    taken = [*(out / "attribution-rule").rglob("*.json"),
             *(out / "attribution-expert").rglob("*.json")]
    assert len(taken) == len(stored)
    assert run.conditions and "Who&When" in (out / "reproduce.md").read_text()


def test_its_options_are_checked(tmp_path):
    assert "--model and --limit do not apply" in error_line(
        ["reproduce", "attribution", "--quick", "--model", "x"], tmp_path)
    assert "--judge names the log-reading judge" in error_line(
        ["reproduce", "mecobench", "--quick", "--judge", "x"], tmp_path)


@pytest.mark.xdist_group("reproduce-attribution")
def test_the_judge_plays_both_prompts_on_caused_failures(study, tmp_path):
    out, _ = study
    cases = A.caused(RunDir.open(out), Options(quick=True))[:3]

    def reply(body):
        text = str(body["messages"][-1]["content"])
        if "hold the decisive error" in text:  # step by step: never yes
            return "1. No\n2. Agent Name: none\n3. Reason: a detour."
        return "Agent Name: agent_1\nStep Number: 2\nReason: it stopped."

    with ScriptedServer(reply) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  judge:\n    base_url: {server.base_url}\n"
                          "    model: scripted-1\n    timeout_s: 5\n")
        got = A._judged(cases, Options(quick=True, judge="judge", models=str(models)))
    assert set(got) == {"judge all_at_once", "judge step_by_step"}
    assert got["judge all_at_once"] == [(1, 2)] * len(cases)
    assert got["judge step_by_step"] == [(None, None)] * len(cases)
    # every step of every episode was asked (no yes stops the walk early)
    assert len(server.requests) > 2 * len(cases)
