"""Every request a provider saw is an attempt on the record: in a saved episode's or an
errored episode's model calls (`tries`) and in RUN/harness_stats.json, also for the calls a
provider failure, --fail-fast or the breaker cut short (a researcher paying per request can
reconcile the bill). Each server is a loopback `ScriptedServer` that fails every request."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.llm.client import ModelHarness
from coordbench.llm.loopback import ScriptedServer
from tests.scripted_team import household_reply

runner = CliRunner()


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    """Backoffs of 10 ms: the attempts, not the waits, are under test."""
    init = ModelHarness.__init__

    def fast(self, *args, **kwargs):
        kwargs.setdefault("backoff_base", 0.01)
        init(self, *args, **kwargs)

    monkeypatch.setattr(ModelHarness, "__init__", fast)


def _models(tmp_path, base_url: str) -> str:
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                 "    max_retries: 1\n    timeout_s: 0.6\n    max_connections: 4\n")
    return str(f)


def recorded(out) -> tuple[int, int, list[str]]:
    """Return (attempts in every saved and errored episode, harness_stats.json's attempts,
    the outcomes of every recorded try)."""
    rd = RunDir.open(out)
    total, outcomes = 0, []
    for cond in rd.conditions:
        trajs = list(rd.load_episodes(cond))
        trajs += [Trajectory.from_jsonl(rd.errored_path(cond, k).read_text(encoding="utf-8"))
                  for k in rd.errored_keys(cond)]
        for tr in trajs:
            for call in tr.steps(ModelCallEvent):
                total += call.attempts
                assert call.attempts == len(call.tries)
                outcomes += [t.outcome for t in call.tries]
    stats = json.loads((out / "harness_stats.json").read_text(encoding="utf-8"))
    return total, sum(e["attempts"] for e in stats), outcomes


FAULTS = [429, 500, 503, "reset", "truncated", "null_choices", "hang:1.0", "drip:0.05"]
PATHS = {"default": [], "fail-fast": ["--fail-fast"], "breaker": ["--breaker", "20"]}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("fault", FAULTS)
def test_every_request_the_server_saw_is_an_attempt_on_record(tmp_path, fault, path):
    out = tmp_path / "run"
    with ScriptedServer(household_reply, mix={fault: 1.0}) as server:
        res = runner.invoke(app, [
            "mecobench", "run", "--agents", "llm", "--model", "scripted", "--models",
            _models(tmp_path, server.base_url), "--structure", "parallel", "--team", "2",
            "--limit", "4", "--max-steps", "2", "--in-flight", "2", "--no-cache", "--json",
            "--out", str(out), *PATHS[path]])
        seen = len(server.requests)
    assert res.exit_code == 3, res.output
    in_episodes, in_stats, outcomes = recorded(out)
    assert seen > 0
    assert in_episodes == in_stats == seen, (fault, path, in_episodes, in_stats, seen)
    assert "ok" not in outcomes
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert payload["errored_episodes"] >= 1 and payload["errored_reason"]
