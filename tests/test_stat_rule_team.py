"""Rule-based STAT teams under the household protocols (`stat eval --policy rule`): the
claiming minds of `agents.team.claims` on the task-allocation engine."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from coordbench.agents.stat.llm import STAT_PROTOCOLS
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import MessageEvent, StatStepEvent
from coordbench.suites.stat.suite import SUITE, StatEvalSpec

TALKING = [p for p in STAT_PROTOCOLS if p != "none"]


def _run(tmp_path, config, policy, protocol=None, episodes=6):
    args = ["stat", "eval", "--config", config, "--policy", policy, "--episodes",
            str(episodes), "--out", str(tmp_path), "--json"]
    if protocol:
        args += ["--protocol", protocol]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    spec = StatEvalSpec(config, policy, protocol=protocol or "none")
    return json.loads(res.stdout.strip().splitlines()[-1]), RunDir.open(tmp_path).load_episodes(
        SUITE.condition(spec))


@pytest.mark.parametrize("config", ["3A-6T-5x3", "5A-25T-50x30"])
def test_talking_rule_teams_allocate_as_the_greedy_allocator(tmp_path, config):
    _, greedy = _run(tmp_path, config, "greedy")
    for p in TALKING:
        _, team = _run(tmp_path, config, "rule", p)
        # claims in index order are the greedy allocator, decided by the agents themselves
        for a, b in zip(greedy, team, strict=True):
            assert [e.executed for e in a.steps(StatStepEvent)] == [
                e.executed for e in b.steps(StatStepEvent)]
        msgs = [m for t in team for m in t.steps(MessageEvent)]
        assert msgs and all(m.content.startswith(("TAKE", "NOTHING", "{")) for m in msgs)
        assert all(t.header.protocol == p and t.header.policy == "rule" and not t.header.models
                   for t in team)


def test_going_alone_conflicts_more(tmp_path):
    alone, trs = _run(tmp_path, "5A-25T-50x30", "rule", "none", episodes=10)
    talk, _ = _run(tmp_path, "5A-25T-50x30", "rule", "broadcast", episodes=10)
    assert alone["conflict_rate"]["mean"] > 5 * talk["conflict_rate"]["mean"]
    assert alone["return"]["mean"] < talk["return"]["mean"]
    assert not any(t.steps(MessageEvent) for t in trs)
    report = (tmp_path / "report.md").read_text()
    assert "| 5A-25T-50x30 | rule (none) |" in report


def test_rule_team_manifest_keeps_its_protocol_not_a_model():
    fields = SUITE.manifest(StatEvalSpec("3A-6T-5x3", "rule", protocol="leader"))
    assert fields["protocol"] == "leader" and "model" not in fields
    assert SUITE.condition(StatEvalSpec("3A-6T-5x3", "rule", protocol="leader")).startswith(
        "stat_3A-6T-5x3_rule-leader_")
