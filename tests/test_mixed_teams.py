"""Mixed teams: `--team SEAT=KIND[:ARG],...` names each seat's agent (MECoBench seats: llm:ALIAS
or rule); the header records each seat's driver, only model seats call the model."""

import json

import pytest
from typer.testing import CliRunner

from coordbench.agents.team.seats import Seat, parse_team
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import HouseholdStepEvent, ModelCallEvent
from coordbench.errors import ConfigError
from coordbench.llm.loopback import ScriptedServer
from tests.cli_errors import error_line
from tests.scripted_team import household_reply


def test_parse_team_specs():
    assert parse_team("3", ("llm", "rule"), "MECoBench") == 3
    assert parse_team("agent_1=rule, agent_0=llm:A", ("llm", "rule"), "MECoBench") == (
        Seat("llm", "A"), Seat("rule"))
    assert Seat("llm", "A").driver == "llm:A" and Seat("rule").driver == "rule"


@pytest.mark.parametrize(("text", "needle"), [
    ("agent_0=llm:A,agent_2=rule", "2 seats but no agent_1"),
    ("agent_0=llm:A,agent_0=rule", "names seat agent_0 twice"),
    ("agent_0=oracle,agent_1=rule", "a MECoBench seat is one of llm, rule, not oracle"),
    ("agent_0=wizard", "unknown kind 'wizard'"),
    ("agent_0=llm,agent_1=rule", "llm needs its argument (llm:ALIAS)"),
    ("robot=rule", "write SEAT=KIND[:ARG]"),
])
def test_bad_team_specs_are_one_line(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_team(text, ("llm", "rule"), "MECoBench")
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_mixed_mecobench_team_end_to_end(tmp_path):
    with ScriptedServer(household_reply) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                          "    model: scripted-1\n    timeout_s: 2\n")
        out = tmp_path / "run"
        res = CliRunner().invoke(app, [
            "mecobench", "run", "--team", "agent_0=llm:scripted,agent_1=rule", "--protocol",
            "broadcast", "--models", str(models), "--max-steps", "4", "--no-cache", "--out",
            str(out), "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout.strip().splitlines()[-1])["cases"] == 3
    run = RunDir.open(out)
    (cond,) = run.conditions
    assert "_team-llm-scripted+rule_" in cond
    assert run.conditions[cond]["seats"] == [{"kind": "llm", "arg": "scripted"},
                                             {"kind": "rule", "arg": None}]
    from coordbench import load_run
    from coordbench.report.leaderboard import model_of

    assert model_of(run.conditions[cond]) == "llm:scripted+rule"  # a leaderboard row
    frame = load_run(out).episodes()
    assert set(frame["team"]) == {"agent_0=llm:scripted,agent_1=rule"}
    for tr in run.load_episodes(cond):
        assert [a.driver for a in tr.header.team] == ["llm:scripted", "rule"]
        assert tr.header.models == {"agent_0": "scripted"}
        calls = tr.steps(ModelCallEvent)
        assert calls and {c.agent for c in calls} == {0}  # the rule seat never calls
        acts = [a for e in tr.steps(HouseholdStepEvent) for a in e.actions if a.agent == 1]
        assert acts and all(a.outcome != "protocol_failure" for a in acts)


def test_bad_mixed_teams_from_the_cli(tmp_path):
    cases = [
        (["--team", "agent_0=llm:x,agent_1=rule", "--model", "x"], "drop --model"),
        (["--team", "agent_0=learned:ck.pt,agent_1=rule"], "not learned"),
        (["--structure", "sequential", "--team", "agent_0=rule,agent_1=rule,agent_2=rule"],
         "sequential tasks are played by teams of 2"),
    ]
    for args, needle in cases:
        assert needle in error_line(["mecobench", "run", *args, "--out", str(tmp_path / "x")],
                                    tmp_path)
    assert not (tmp_path / "x").exists()


def test_a_mixed_construct_team_end_to_end(tmp_path):
    from tests.test_construct_protocols import _reply

    with ScriptedServer(_reply) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n")
        out = tmp_path / "run"
        res = CliRunner().invoke(app, [
            "constructs", "run", "--subset", "rep240", "--construct", "D3", "--team",
            "agent_0=rule,agent_1=llm:s", "--limit", "2", "--models", str(models),
            "--no-cache", "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout.strip().splitlines()[-1])["instances"] == 2
    run = RunDir.open(out)
    (cond,) = run.conditions
    assert "_team2_decentralized_team-rule+llm-s_" in cond and "_proto-none" in cond
    for tr in run.load_episodes(cond):
        assert [a.driver for a in tr.header.team] == ["rule", "llm:s"]
        assert tr.header.models == {"agent_1": "s"}
        assert {c.agent for c in tr.steps(ModelCallEvent)} == {1}
        assert any(a.agent == 0 for e in tr.steps(HouseholdStepEvent) for a in e.actions)


def test_bad_mixed_construct_teams_from_the_cli(tmp_path):
    cases = [
        (["--team", "agent_0=oracle,agent_1=rule"], "a construct seat is one of llm, rule"),
        (["--team", "agent_0=rule,agent_1=rule,agent_2=rule,agent_3=rule,agent_4=rule"],
         "--team must be 2, 3 or 4, got 5"),
        (["--team", "agent_0=llm:x,agent_1=rule", "--model", "x"], "drop --model"),
    ]
    for args, needle in cases:
        assert needle in error_line(["constructs", "run", *args, "--out",
                                     str(tmp_path / "x")], tmp_path)
    assert not (tmp_path / "x").exists()


def test_a_mixed_stat_team_end_to_end(tmp_path):
    from coordbench.core.trajectory import StatStepEvent
    from tests.test_stat_llm import models_file, nearest_reply

    with ScriptedServer(nearest_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        res = CliRunner().invoke(app, [
            "stat", "eval", "--config", "3A-6T-5x3", "--policy", "rule", "--protocol",
            "broadcast", "--team", "agent_0=llm:scripted,agent_1=rule,agent_2=rule",
            "--episodes", "2", "--episode-limit", "6", "--models", str(models),
            "--no-cache", "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
    run = RunDir.open(out)
    (cond,) = run.conditions
    assert "team-llm-scripted+rule+rule-broadcast" in cond
    for tr in run.load_episodes(cond):
        assert [a.driver for a in tr.header.team] == ["llm:scripted", "rule", "rule"]
        assert {c.agent for c in tr.steps(ModelCallEvent)} == {0}
        assert tr.steps(StatStepEvent)
    assert "--team names 2 seats; 3A-6T-5x3 has 3 agents" in error_line(
        ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "rule", "--team",
         "agent_0=rule,agent_1=rule", "--out", str(tmp_path / "x")], tmp_path)
    assert "--team seats minds: it needs --policy rule or llm, not greedy" in error_line(
        ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--team",
         "agent_0=rule,agent_1=rule,agent_2=rule", "--out", str(tmp_path / "x")], tmp_path)
