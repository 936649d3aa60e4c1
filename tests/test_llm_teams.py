"""Model-driven teams end to end through the CLI against a loopback OpenAI-compatible server."""

import json

import pytest
from typer.testing import CliRunner

from coordbench.agents.team.protocols import PROTOCOLS
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.llm.loopback import ScriptedServer
from tests.scripted_team import household_reply

runner = CliRunner()


def models_file(tmp_path, base_url, images=False, retries=3):
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                 f"    supports_images: {str(images).lower()}\n    max_retries: {retries}\n"
                 f"    timeout_s: 2\n    max_connections: 4\n")
    return f


def run(tmp_path, models, *extra):
    res = runner.invoke(app, ["mecobench", "run", "--agents", "llm", "--model", "scripted",
                              "--models", str(models), "--structure", "parallel", "--team",
                              "2", "--max-steps", "4", "--cache-path",
                              str(tmp_path / "cache.sqlite"), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_end_to_end(tmp_path, protocol):
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        payload = run(tmp_path, models, "--protocol", protocol, "--out", str(out))
        assert payload["cases"] == 3
        assert payload["tokens_per_step"]["mean"] > 0
        assert payload["protocol_failures"]["mean"] > 0  # the script fails on purpose
        assert len(server.requests) > 0
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    trajs = rd.load_episodes(cond)  # every episode validates against the schema
    assert len(trajs) == 3
    for tr in trajs:
        calls = tr.steps(ModelCallEvent)
        assert calls and all(c.model == "scripted" for c in calls)
        assert tr.header.models == {"agent_0": "scripted", "agent_1": "scripted"}
        text = tr.to_jsonl()
        assert "api_key" not in text.lower()
        fails = [a for e in tr.events if e.type == "household_step" for a in e.actions
                 if a.outcome == "protocol_failure"]
        assert all(a.detail for a in fails)
    # every call's prompt is kept once, by request hash, as the server received it
    sent = [json.dumps(r["messages"], sort_keys=True) for r in server.requests]
    for tr in trajs:
        for c in tr.steps(ModelCallEvent):
            prompt = rd.load_prompt(c.request_hash)
            assert prompt["model"] == "scripted-1"
            assert json.dumps(prompt["messages"], sort_keys=True) in sent
    hashes = {c.request_hash for tr in trajs for c in tr.steps(ModelCallEvent)}
    assert len(list((out / "prompts").iterdir())) == len(hashes)


def test_faults_are_retried_and_nothing_is_lost(tmp_path):
    faults = [429, 500, "garbage", "slow:3", 502] * 3
    with ScriptedServer(household_reply, faults) as server:
        models = models_file(tmp_path, server.base_url, retries=6)
        out = tmp_path / "run"
        payload = run(tmp_path, models, "--protocol", "broadcast", "--out", str(out),
                      "--no-cache")
        assert payload["cases"] == 3
    trajs = RunDir.open(out).load_episodes(next(iter(RunDir.open(out).conditions)))
    attempts = [c.attempts for t in trajs for c in t.steps(ModelCallEvent)]
    assert len(trajs) == 3 and max(attempts) > 1


def test_cached_rerun_makes_no_call_and_resume_skips(tmp_path):
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        first = run(tmp_path, models, "--protocol", "broadcast", "--out", str(tmp_path / "a"))
        n = len(server.requests)
        again = run(tmp_path, models, "--protocol", "broadcast", "--out", str(tmp_path / "b"))
        assert len(server.requests) == n  # every reply came from the cache
        assert again["SR"] == first["SR"] and again["CR"] == first["CR"]
        run(tmp_path, models, "--protocol", "broadcast", "--out", str(tmp_path / "a"),
            "--no-cache")
        assert len(server.requests) == n  # finished episodes are skipped


def test_text_only_models_get_no_images(tmp_path):
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url, images=False)
        run(tmp_path, models, "--protocol", "leader_vision", "--images", "--limit", "1",
            "--out", str(tmp_path / "t"), "--no-cache")
        assert all(isinstance(m["content"], str) for r in server.requests
                   for m in r["messages"])
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url, images=True)
        run(tmp_path, models, "--protocol", "leader_vision", "--images", "--limit", "1",
            "--out", str(tmp_path / "v"), "--no-cache")
        parts = [p for r in server.requests for m in r["messages"]
                 if isinstance(m["content"], list) for p in m["content"]]
        assert any(p.get("type") == "image_url" for p in parts)
    # a stored prompt names each image it showed by the file --images saved it as
    shown = [p["sha256"] for f in (tmp_path / "v" / "prompts").iterdir()
             for m in json.loads(f.read_text())["messages"] if isinstance(m["content"], list)
             for p in m["content"] if p.get("type") == "image"]
    assert shown and all((tmp_path / "v" / "images" / f"{h}.png").is_file() for h in shown)


def test_token_budget_stops_episodes(tmp_path):
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        run(tmp_path, models, "--protocol", "none", "--max-tokens-per-episode", "50",
            "--out", str(tmp_path / "b"), "--no-cache")
    rd = RunDir.open(tmp_path / "b")
    ends = [t.end for t in rd.load_episodes(next(iter(rd.conditions)))]
    assert all(e.termination == "normal_stop" and "token budget" in e.detail for e in ends)


def test_unreachable_endpoint_is_one_clear_line(tmp_path):
    import subprocess
    import sys

    models = models_file(tmp_path, "http://127.0.0.1:9/v1", retries=0)
    res = subprocess.run([sys.executable, "-m", "coordbench", "models", "check", "scripted",
                          "--models", str(models)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "failed" in res.stderr and "Traceback" not in res.stderr


def test_report_shows_model_usage_and_tags(tmp_path):
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "r"
        run(tmp_path, models, "--protocol", "broadcast", "--out", str(out))
    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0, res.output
    text = (out / "report.md").read_text()
    assert "Model usage" in text and "| agent | scripted |" in text
    assert "Behaviour tags" in text and "Info-Plan" in text
