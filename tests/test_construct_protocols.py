"""Construct teams under the household protocols: rule minds (the decentralized rules behind
the protocol registry's verbs) and model minds against a loopback server."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.trajectory import HouseholdStepEvent, MessageEvent, ModelCallEvent
from coordbench.metrics.constructs import episode_metrics
from coordbench.metrics.profile import episode_profile
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import select
from tests.cli_errors import error_line

TALKING = ("broadcast", "discuss", "leader", "shared_memory")


def _events(tr):
    return [e.model_dump() for e in tr.events]


@pytest.fixture(scope="module")
def sample():
    return [raw for c in ("D1", "D2", "D3", "D4") for raw in select("rep240", c, None, None)[:6]]


def test_protocol_none_is_the_decentralized_planner(sample):
    for raw in sample:
        base = run_construct(raw, ConstructSpec("decentralized", "rule"), "x")
        none = run_construct(raw, ConstructSpec("decentralized", "rule", protocol="none"), "x")
        assert _events(none) == _events(base)
        assert none.header.protocol == "none" and none.header.params["planner"] == "decentralized"


def test_each_protocol_records_its_phases_and_removes_contention(sample):
    d1 = [raw for raw in sample if raw["coordbench_construct"]["construct"] == "D1"]
    red = {}
    for p in ("none", *TALKING):
        trs = [run_construct(raw, ConstructSpec("decentralized", "rule", protocol=p), "x")
               for raw in d1]
        red[p] = sum(episode_profile(t)["redundancy"] for t in trs)
        msgs = [m for t in trs for m in t.steps(MessageEvent)]
        phases = {m.phase for m in msgs}
        assert phases == {"none": set(), "broadcast": {"broadcast"}, "discuss": {"discuss"},
                          "leader": {"report", "assignment"},
                          "shared_memory": {"memory"}}[p], p
        if p == "leader":  # each instruction goes to one agent, from agent 0
            orders = [m for m in msgs if m.phase == "assignment"]
            assert all(m.sender == 0 and len(m.recipients) == 1 for m in orders)
        if p == "discuss":  # a round ends once every agent repeats its claim
            assert any(m.content.startswith("READY") for m in msgs)
            assert all(m.round <= 2 for m in msgs)
        for t in trs:  # messages come before the step they belong to
            steps = {e.t: i for i, e in enumerate(t.events) if isinstance(e, HouseholdStepEvent)}
            assert all(i < steps[e.t] for i, e in enumerate(t.events)
                       if isinstance(e, MessageEvent))
        assert all(episode_metrics(t)["SR"] == 1.0 for t in trs) or p == "none"
    # telling teammates what one goes for removes the duplicated grabs of going alone
    assert red["none"] > 0
    assert all(red[p] < red["none"] for p in TALKING)


def test_agents_follow_the_leader_plan(sample):
    """Under leader, no agent goes for an object the leader told it to leave to others."""
    checked = 0
    for raw in sample:
        tr = run_construct(raw, ConstructSpec("decentralized", "rule", protocol="leader"), "x")
        leave = {(m.t, m.recipients[0]): {int(x) for found in re.findall(r"LEAVE ([\d ]+)",
                                                                       m.content)
                                          for x in found.split()}
                 for m in tr.steps(MessageEvent) if m.phase == "assignment"}
        for e in tr.steps(HouseholdStepEvent):
            for a in e.actions:
                if a.action in ("grab", "open", "slice"):
                    assert a.args.get("obj") not in leave.get((e.t, a.agent), set())
                    checked += 1
    assert checked > 50


def _reply(body):
    user = body["messages"][-1]["content"]
    user = user if isinstance(user, str) else user[0]["text"]
    if "JSON list" in user:
        return json.dumps([{"agent": 0, "instruction": "take the nearest item"},
                           {"agent": 1, "instruction": "open the box"}])
    if "Shared team memory" in user:
        return '{"claims": {"12": 0}}'
    if "Start your reply with READY" in user:
        return "READY I take the nearest item."
    if "Send one short message" in user or "Report to the leader" in user:
        return "I take the nearest item."
    ids = [line.split(":")[0] for line in user.splitlines()
           if line[:1].isdigit() and ": agent_" in line]
    if len(user) % 5 == 0:
        return "REASON: unsure"  # no id: a protocol failure
    return "REASON: go\nACTION: " + (ids[len(user) % len(ids)] if ids else "x")


def test_model_minds_under_every_protocol(tmp_path):
    from coordbench.llm.loopback import ScriptedServer

    with ScriptedServer(_reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n"
                          "    max_retries: 0\n    timeout_s: 5\n")
        for p in ("none", *TALKING):
            out = tmp_path / p
            res = CliRunner().invoke(app, [
                "constructs", "run", "--subset", "rep240", "--construct", "D1", "--team", "2",
                "--limit", "2", "--protocol", p, "--agents", "llm", "--model", "s",
                "--models", str(models), "--no-cache", "--out", str(out), "--json"])
            assert res.exit_code == 0, res.output
            assert json.loads(res.stdout.strip().splitlines()[-1])["instances"] == 2
            manifest = json.loads((out / "manifest.json").read_text())
            (cond, spec), = manifest["conditions"].items()
            assert f"_proto-{p}" in cond and spec["protocol"] == p
            assert spec["planner"] == "decentralized"
            eps = sorted((out / "episodes" / cond).glob("*.jsonl"))
            lines = [json.loads(x) for x in eps[0].read_text().splitlines()]
            calls = [x for x in lines[1:] if x["type"] == "model_call"]
            phases = {c["phase"] for c in calls}
            want = {"none": {"act"}, "broadcast": {"act", "broadcast"},
                    "discuss": {"act", "discuss"}, "leader": {"act", "report", "assignment"},
                    "shared_memory": {"act", "memory"}}[p]
            assert phases == want, (p, phases)
            assert all(c["parse_status"] in ("ok", "failed") for c in calls)
            msgs = [x for x in lines[1:] if x["type"] == "message"]
            assert bool(msgs) == (p != "none")
            if p == "leader":
                assert {c["role"] for c in calls if c["agent"] == 0} == {"leader"}
    # replies without a menu id were recorded as protocol failures, the episode went on
    assert any("REASON: unsure" == r for r in map(_reply, server.requests))


def test_model_mind_failures_are_recorded(tmp_path):
    from coordbench.core.rundir import RunDir
    from coordbench.llm.loopback import ScriptedServer

    with ScriptedServer(_reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n")
        res = CliRunner().invoke(app, [
            "constructs", "run", "--subset", "rep240", "--construct", "D3", "--team", "2",
            "--limit", "3", "--protocol", "broadcast", "--agents", "llm", "--model", "s",
            "--models", str(models), "--no-cache", "--out", str(tmp_path / "r")])
        assert res.exit_code == 0, res.output
    run = RunDir.open(tmp_path / "r")
    (cond,) = run.conditions
    trs = run.load_episodes(cond)
    calls = [c for t in trs for c in t.steps(ModelCallEvent) if c.phase == "act"]
    failed = [c for c in calls if c.parse_status == "failed"]
    records = [a for t in trs for e in t.steps(HouseholdStepEvent) for a in e.actions]
    assert failed and len(failed) == sum(a.outcome == "protocol_failure" for a in records)
    assert all(t.steps(MessageEvent) for t in trs)


@pytest.mark.parametrize(("args", "needle"), [
    (["--protocol", "leader_vision"], "protocol 'leader_vision' is not supported by construct"),
    (["--protocol", "shout"], "unknown protocol 'shout'"),
    (["--protocol", "broadcast", "--planner", "central"], "needs --planner decentralized"),
    (["--protocol", "none", "--agents", "oracle"], "needs --agents rule or llm"),
    (["--protocol", "broadcast", "--agents", "llm"], "--agents llm needs --model"),
])
def test_bad_protocol_input_is_one_line(args, needle, tmp_path):
    assert needle in error_line(["constructs", "run", "--limit", "1", "--out",
                                 str(tmp_path / "r"), *args], tmp_path)
    assert not (tmp_path / "r").exists()


def test_conditions_without_a_protocol_keep_their_names_and_manifests(tmp_path):
    res = CliRunner().invoke(app, ["constructs", "run", "--subset", "rep240", "--construct",
                                   "D1", "--limit", "1", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (cond, spec), = manifest["conditions"].items()
    assert "proto" not in cond and "protocol" not in spec and spec["planner"] == "central"
