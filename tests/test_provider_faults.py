"""Trust under faults: provider failures never become results, hostile replies never end a run,
a key never leaks, and a rerun against a healthy server replays exactly what failed.

Every server here is a loopback `ScriptedServer`; every wait in it is bounded.
"""

import asyncio
import json
import time

import httpx2
import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.llm.client import ModelHarness
from coordbench.llm.loopback import SHAPES, ScriptedServer
from coordbench.llm.providers import read_reply
from coordbench.llm.registry import ModelSpec, Registry
from coordbench.runner.episode import ProviderFailed
from tests.scripted_team import household_reply

runner = CliRunner()
KEY = "sk-test-0123456789abcdef"


def models_file(tmp_path, base_url, retries=2, timeout=2.0, key=False):
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                 f"    max_retries: {retries}\n    timeout_s: {timeout}\n"
                 f"    max_connections: 4\n" + ("    api_key_env: FAULT_TEST_KEY\n" if key else ""))
    return f


def household(tmp_path, models, out, *extra):
    return runner.invoke(app, ["mecobench", "run", "--agents", "llm", "--model", "scripted",
                               "--models", str(models), "--structure", "parallel", "--team",
                               "2", "--max-steps", "3", "--no-cache", "--json", "--out",
                               str(out), *extra])


def constructs(tmp_path, models, out, *extra):
    return runner.invoke(app, ["constructs", "run", "--subset", "rep240", "--construct", "D1",
                               "--agents", "llm", "--model", "scripted", "--models",
                               str(models), "--limit", "3", "--no-cache", "--json", "--out",
                               str(out), *extra])


def construct_reply(body):
    return "REASON: first on the menu\nACTION: 0"


def content(run_dir):
    """Return {episode: its events without timings}: what must match between two runs."""
    rd = RunDir.open(run_dir)
    out = {}
    for cond in rd.conditions:
        for tr in rd.load_episodes(cond):
            events = [e.model_dump(exclude={"latency_s", "attempts", "tries"}) for e in tr.events]
            out[tr.header.episode_id] = events
    return out


@pytest.mark.parametrize("fault", [401, 403, 404, "dead"])
def test_provider_failures_are_not_results_and_a_rerun_replays_them(tmp_path, fault):
    out = tmp_path / "run"
    if fault == "dead":
        res = household(tmp_path, models_file(tmp_path, "http://127.0.0.1:9/v1", retries=1),
                        out)
    else:
        with ScriptedServer(household_reply, mix={fault: 1.0}) as server:
            res = household(tmp_path, models_file(tmp_path, server.base_url), out)
    assert res.exit_code == 3, res.output
    assert "failed for provider reasons" in res.output and "Traceback" not in res.output
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert rd.episode_keys(cond) == []  # nothing counted
    errored = rd.errored_keys(cond)
    assert errored  # kept for inspection
    tr = RunDir.open(out)
    text = tr.errored_path(cond, errored[0]).read_text()
    assert '"termination":"error"' in text
    # the report of a run whose episodes all errored still composes, and says so
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    assert "errored by model provider failures are not counted" in (out / "report.md"
                                                                     ).read_text()
    with ScriptedServer(household_reply) as server:
        models = models_file(tmp_path, server.base_url)
        res = household(tmp_path, models, out)
        assert res.exit_code == 0, res.output
        clean = household(tmp_path, models, tmp_path / "clean")
        assert clean.exit_code == 0
    rd = RunDir.open(out)
    assert rd.episode_keys(cond) == ["case0000", "case0001", "case0002"]
    assert rd.errored_keys(cond) == []  # replayed, so no longer errored
    assert content(out) == content(tmp_path / "clean")
    stats = json.loads((out / "harness_stats.json").read_text())
    assert [s["errored_episodes"] > 0 for s in stats] == [True, False]


def test_a_run_whose_every_episode_errored_prints_no_table_and_exits_3(tmp_path):
    """Without --json the command summarizes its condition: with no finished episode it says
    so instead of failing on the missing metrics."""
    with ScriptedServer(household_reply, mix={401: 1.0}) as server:
        res = runner.invoke(app, ["mecobench", "run", "--agents", "llm", "--model", "scripted",
                                  "--models", str(models_file(tmp_path, server.base_url)),
                                  "--limit", "1", "--no-cache", "--out",
                                  str(tmp_path / "run")])
    assert res.exit_code == 3, res.output
    assert "no finished episode" in res.output and "failed for provider reasons" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_outage_longer_than_the_backoff_errors_then_heals(tmp_path):
    # every request of the first run fails with 503 (retried, then given up on)
    out = tmp_path / "run"
    with ScriptedServer(household_reply, mix={503: 1.0}) as server:
        res = household(tmp_path, models_file(tmp_path, server.base_url, retries=2), out,
                        "--limit", "2")
        assert res.exit_code == 3
        # 2 episodes x 2 agents x (3 attempts with the reply schema + 1 without) at most
        assert len(server.requests) <= 2 * 2 * (3 + 1)
    with ScriptedServer(household_reply) as server:
        assert household(tmp_path, models_file(tmp_path, server.base_url), out,
                         "--limit", "2").exit_code == 0
    assert RunDir.open(out).errored_keys(next(iter(RunDir.open(out).conditions))) == []


def test_the_breaker_and_fail_fast_stop_a_sweep(tmp_path):
    dead = models_file(tmp_path, "http://127.0.0.1:9/v1", retries=0)
    res = constructs(tmp_path, dead, tmp_path / "ff", "--fail-fast", "--limit", "40")
    assert res.exit_code == 3
    rd = RunDir.open(tmp_path / "ff")
    (cond,) = rd.conditions
    n_failed = len(rd.errored_keys(cond))
    assert 1 <= n_failed < 40  # stopped: the rest never started
    res = constructs(tmp_path, dead, tmp_path / "br", "--breaker", "2", "--limit", "40")
    assert res.exit_code == 3
    rd = RunDir.open(tmp_path / "br")
    assert 2 <= len(rd.errored_keys(cond)) < 40


def test_a_construct_run_errors_and_replays_like_a_household_run(tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(construct_reply, mix={401: 1.0}) as server:
        assert constructs(tmp_path, models_file(tmp_path, server.base_url), out).exit_code == 3
    with ScriptedServer(construct_reply) as server:
        models = models_file(tmp_path, server.base_url)
        assert constructs(tmp_path, models, out).exit_code == 0
        assert constructs(tmp_path, models, tmp_path / "clean").exit_code == 0
    assert content(out) == content(tmp_path / "clean")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_reply_shapes_are_provider_faults_retried_never_the_agents(tmp_path, shape):
    # a 200 whose body is unusable is the provider's fault: retried like a 5xx, never
    # written as the agents' protocol failure
    out = tmp_path / "run"
    with ScriptedServer(household_reply, [shape, shape]) as server:
        res = household(tmp_path, models_file(tmp_path, server.base_url, retries=2), out,
                        "--limit", "1")
        served = list(server.served)
    assert res.exit_code == 0, res.output
    rd = RunDir.open(out)
    (tr,) = rd.load_episodes(next(iter(rd.conditions)))
    calls = tr.steps(ModelCallEvent)
    assert served.count(shape) == 2
    assert not any(c.error and "malformed reply" in c.error for c in calls)
    assert sum(c.attempts for c in calls) == len(served)  # the retries are on the record
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0


@pytest.mark.parametrize("shape", ["no_choices", "content_dict", "usage_str"])
def test_a_provider_that_only_sends_garbage_errors_the_episode(tmp_path, shape):
    out = tmp_path / "run"
    with ScriptedServer(household_reply, [shape] * 200) as server:
        res = household(tmp_path, models_file(tmp_path, server.base_url, retries=1), out,
                        "--limit", "1")
    assert res.exit_code == 3, res.output
    assert "malformed reply" in res.output
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert rd.episode_keys(cond) == [] and len(rd.errored_keys(cond)) == 1


FAULT_MIX = {429: 0.06, 500: 0.06, 502: 0.04, "garbage": 0.05, "empty": 0.05,
             "truncated": 0.05, "reset": 0.05, "drip:0.05": 0.03, "hang:3": 0.02,
             "slow:0.2": 0.04, "null_choices": 0.03, "content_dict": 0.03,
             "usage_str": 0.03}


def test_a_mix_of_faults_never_ends_a_run(tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(household_reply, mix=FAULT_MIX, seed=7) as server:
        res = household(tmp_path, models_file(tmp_path, server.base_url, retries=8,
                                              timeout=1.0), out, "--protocol", "broadcast")
        served = [f for f in server.served if f is not None]
    # all three episodes are results: every transient fault was retried away
    assert res.exit_code == 0, res.output
    assert len(served) >= 10
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert len(rd.episode_keys(cond)) == 3 and rd.errored_keys(cond) == []
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    # every request the server saw is one attempt in the episodes' records: the faults
    # retried away are there, each with its outcome and why
    calls = [c for key in rd.episode_keys(cond)
             for c in rd.load_episode(cond, key).steps(ModelCallEvent)]
    tries = [a for c in calls for a in c.tries]
    assert len(tries) == sum(c.attempts for c in calls) == len(server.served)
    assert all(c.tries[-1].outcome == "ok" for c in calls)
    # every fault that answers at once is a failed attempt; a slow, dripping or hanging one
    # either answers in time or meets the 1 s deadline
    late = [f for f in served if str(f).startswith(("slow", "drip", "hang"))]
    assert sum(a.outcome not in ("ok", "timeout") for a in tries) == len(served) - len(late)
    assert sum(a.outcome == "timeout" for a in tries) <= len(late)
    assert all(a.why for a in tries if a.outcome != "ok")


def test_a_dripping_server_meets_the_deadline():
    async def go():
        with ScriptedServer(household_reply, ["drip:0.2"] * 3) as server:
            reg = Registry({"m": ModelSpec(alias="m", base_url=server.base_url, model="m",
                                           timeout_s=0.5, max_retries=1)})
            h = ModelHarness(reg, None, backoff_base=0.01)
            start = time.perf_counter()
            with pytest.raises(ProviderFailed, match="deadline"):
                await h.complete("m", [{"role": "user", "content": "hi"}])
            return time.perf_counter() - start
    assert asyncio.run(go()) < 5  # 2 attempts of 0.5 s, not the ~40 s the drip would take


def test_a_key_the_server_echoes_never_reaches_a_file_or_the_output(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_TEST_KEY", KEY)
    out = tmp_path / "run"

    def echo(body):
        return f"my key is {KEY}"  # a reply that repeats the key, too

    with ScriptedServer(echo, mix={"echo_key": 0.5}, seed=3) as server:
        models = models_file(tmp_path, server.base_url, key=True)
        res = household(tmp_path, models, out)
    pieces = {KEY[i:i + 16].encode() for i in range(len(KEY) - 15)}
    assert not any(p.decode() in res.output for p in pieces)
    for path in out.rglob("*"):
        if path.is_file():  # no piece of the key, the attempts' records included
            data = path.read_bytes()
            assert not any(p in data for p in pieces), path
    # the 401s that echoed it are recorded, redacted, as the attempts of errored episodes
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    errored = [rd.errored_path(cond, k).read_text() for k in rd.errored_keys(cond)]
    assert any('"outcome":"permanent","why":"HTTP 401' in t and "[redacted]" in t
               for t in errored)


def test_read_reply_checks_every_field():
    good = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    assert read_reply(good) == ("hi", 3, 1, 0, "stop")
    parts = {**good, "choices": [{"message": {"content": [{"type": "text", "text": "a"},
                                                          {"type": "text", "text": "b"}]}}]}
    assert read_reply(parts)[0] == "ab"
    for bad in ({"choices": None}, {"choices": [None]}, {"choices": [{"message": None}]},
                {**good, "usage": {"prompt_tokens": True}},
                {**good, "usage": {"prompt_tokens": 10**30 * -1}},
                {**good, "choices": [{"message": {"content": {"a": 1}}}]},
                {**good, "choices": [{"message": {"content": 5}}]},
                {**good, "choices": [{"message": {"content": "x"}, "finish_reason": []}]}):
        with pytest.raises(Exception, match="malformed reply"):
            read_reply(bad)


def test_the_harness_never_exceeds_its_connection_cap_while_retrying():
    async def go():
        with ScriptedServer(lambda b: "ok", mix={500: 0.5, "slow:0.05": 0.5}, seed=2) as srv:
            reg = Registry({"m": ModelSpec(alias="m", base_url=srv.base_url, model="m",
                                           max_connections=3, max_retries=20)})
            h = ModelHarness(reg, None, backoff_base=0.001)
            await asyncio.gather(*(h.complete("m", [{"role": "user", "content": str(i)}])
                                   for i in range(30)))
            return h.stats.max_in_flight, h.stats.retries
    # the harness's own count of attempts under way: the server's count lags (a handler
    # thread ends a moment after its client has the reply and may already send the next)
    peak, retries = asyncio.run(go())
    assert peak == 3 and retries > 0


def test_mocked_transport_failures_classify(tmp_path):
    def reg(handler):
        r = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m",
                                     max_retries=1)})
        return ModelHarness(r, None, http_client=httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler)), backoff_base=0.001)

    def boom(request):
        raise httpx2.ConnectError("refused")

    with pytest.raises(ProviderFailed, match="after 2 attempts"):
        asyncio.run(reg(boom).complete("m", [{"role": "user", "content": "x"}]))
    h = reg(lambda r: httpx2.Response(422, json={"error": {"message": "bad"}}))
    assert asyncio.run(h.complete("m", [{"role": "user", "content": "x"}])).error


def test_structured_output_is_sent_and_dropped_for_a_server_that_refuses_it():
    seen = []

    def refuses(request):
        body = json.loads(request.content)
        seen.append("response_format" in body)
        if "response_format" in body:
            return httpx2.Response(400, json={"error": {"message": "response_format unused"}})
        return httpx2.Response(200, json={"choices": [{"message": {"content": "{}"}}]})

    def accepts(request):
        body = json.loads(request.content)
        seen.append(body.get("response_format", {}).get("json_schema", {}).get("schema"))
        return httpx2.Response(200, json={"choices": [{"message": {"content": "{}"}}]})

    schema = {"type": "object"}
    for handler in (refuses, accepts):
        reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m")})
        h = ModelHarness(reg, None, http_client=httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler)))
        for _ in range(2):
            out = asyncio.run(h.complete("m", [{"role": "user", "content": "x"}],
                                         schema=schema))
            assert out.error is None and out.structured == (handler is accepts)
    # refused once, asked again without, never sent again; accepted: sent every time
    assert seen == [True, False, False, schema, schema]


def test_a_schema_a_server_errors_on_is_dropped_and_llama_cpp_gets_its_own_form():
    seen = []

    def breaks(request):  # llama.cpp's server answers an unknown response_format with 500
        body = json.loads(request.content)
        seen.append(body.get("response_format"))
        if body.get("response_format", {}).get("type") == "json_schema":
            return httpx2.Response(500, json={"error": {"message": "literal_error"}})
        return httpx2.Response(200, json={"choices": [{"message": {"content": "{}"}}]})

    for form in ("json_schema", "json_object"):
        reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m",
                                       max_retries=0, structured_output=form)})
        h = ModelHarness(reg, None, http_client=httpx2.AsyncClient(
            transport=httpx2.MockTransport(breaks)))
        for k in range(2):
            out = asyncio.run(h.complete("m", [{"role": "user", "content": "x"}],
                                         schema={"type": "object"}))
            assert out.error is None
            if form == "json_schema":  # one record holds both attempts of the first call
                assert out.attempts == (2 if k == 0 else 1)
    kinds = [f["type"] if f else None for f in seen]
    assert kinds == ["json_schema", None, None, "json_object", "json_object"]
    assert seen[-1]["schema"] == {"type": "object"}



def test_a_call_that_fails_with_and_without_its_schema_records_every_attempt():
    def fails(request):
        return httpx2.Response(503, json={"error": {"message": "down"}})

    reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m",
                                   max_retries=2, structured_output="json_schema")})
    h = ModelHarness(reg, None, backoff_base=0.001, http_client=httpx2.AsyncClient(
        transport=httpx2.MockTransport(fails)))
    with pytest.raises(ProviderFailed) as e:
        asyncio.run(h.complete("m", [{"role": "user", "content": "x"}],
                               schema={"type": "object"}))
    # 3 attempts with the schema, 1 without: the failure says both, the schema's first
    text = str(e.value)
    assert "(after 3 attempts); asked again without the schema: " in text
    assert text.endswith("(after 1 attempt)")


def test_every_attempt_of_a_call_is_its_own_record_in_the_episode(monkeypatch):
    key = "sk-" + "q7" * 160  # longer than any cut of an error text
    replies = [(429, {"error": {"message": f"slow down {key}"}}, {"Retry-After": "0"}),
               (200, "<html>oops</html>", {}),
               (500, {"error": {"message": f"boom for {key}"}}, {}),
               (422, {"error": {"message": "schema not supported"}}, {}),
               (200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                          "role": "assistant", "content": "{}"}}],
                      "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                "total_tokens": 2}}, {})]

    def handler(request):
        status, body, headers = replies.pop(0)
        if isinstance(body, str):
            return httpx2.Response(status, text=body, headers=headers)
        return httpx2.Response(status, json=body, headers=headers)

    monkeypatch.setenv("COORDBENCH_TEST_KEY_TRIES", key)
    reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m",
                                   max_retries=3, structured_output="json_schema",
                                   api_key_env="COORDBENCH_TEST_KEY_TRIES")})
    h = ModelHarness(reg, None, backoff_base=0.001, http_client=httpx2.AsyncClient(
        transport=httpx2.MockTransport(handler)))
    # with no episode open, the record the episode would get is the call's event
    out = asyncio.run(h.complete("m", [{"role": "user", "content": "x"}],
                                 who=(0, "agent", "act"), schema={"type": "object"}))
    assert out.error is None and out.attempts == 5 and not replies
    event = ModelCallEvent.model_validate({**out.event, "t": 0})
    assert [(a.outcome, a.with_schema) for a in event.tries] == [
        ("throttled", True), ("malformed", True), ("transient", True), ("refused", True),
        ("ok", False)]
    assert all(a.wait_s > 0 for a in event.tries[:3]) and event.tries[3].wait_s == 0
    assert "500" in event.tries[2].why and "[redacted]" in event.tries[2].why
    assert key[:20] not in event.model_dump_json()


def test_harness_stats_name_the_command_that_spent_the_tokens(tmp_path):
    import subprocess
    import sys

    from coordbench.llm.loopback import ScriptedServer
    from tests.test_construct_protocols import _reply

    out = tmp_path / "run"
    with ScriptedServer(_reply) as server:
        models = models_file(tmp_path, server.base_url)
        for limit in ("1", "2"):
            res = subprocess.run([sys.executable, "-m", "coordbench", "constructs", "run",
                                  "--subset", "rep240", "--construct", "D1", "--agents", "llm",
                                  "--model", "scripted", "--models", str(models), "--limit",
                                  limit, "--no-cache", "--out", str(out), "--json"],
                                 capture_output=True, text=True, timeout=300)
            assert res.returncode == 0, res.stderr
    entries = json.loads((out / "harness_stats.json").read_text())
    assert [e["command"].split("--limit ")[1].split()[0] for e in entries] == ["1", "2"]
    # the manifest still names the command that created the run
    assert "--limit 1" in json.loads((out / "manifest.json").read_text())["command"]


def test_the_breaker_opens_for_a_model_asked_with_a_schema():
    seen = []

    def down(request):
        seen.append(request)
        return httpx2.Response(500, json={"error": {"message": "down"}})

    reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m",
                                   max_retries=0, structured_output="json_schema")})
    h = ModelHarness(reg, None, backoff_base=0.001, breaker=2, http_client=httpx2.AsyncClient(
        transport=httpx2.MockTransport(down)))
    stops = []
    for _ in range(4):
        with pytest.raises(ProviderFailed) as e:
            asyncio.run(h.complete("m", [{"role": "user", "content": "x"}],
                                   schema={"type": "object"}))
        stops.append(e.value.stop_run)
    # call 1: the schema attempt and the re-ask (one failure); call 2: the schema attempt
    # opens the breaker, and no re-ask is sent; calls 3-4: nothing is sent
    assert stops == [False, True, True, True] and len(seen) == 3
    assert "circuit open" in str(e.value) and "asked again" not in str(e.value)
