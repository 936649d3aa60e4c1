"""The model harness over the real AsyncOpenAI client with a mocked transport."""

import asyncio
import json

import httpx2
import pytest

from coordbench.errors import ConfigError
from coordbench.llm.cache import ResponseCache, request_key
from coordbench.llm.client import ModelHarness
from coordbench.llm.registry import ModelSpec, Registry, load_registry
from coordbench.runner.episode import ProviderFailed


def chat(text="ok", prompt=11, completion=3):
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": 4}}}


def harness(handler, cache=None, **spec):
    reg = Registry({"m": ModelSpec(alias="m", base_url="http://mock/v1", model="m", **spec)})
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return ModelHarness(reg, cache, http_client=client, backoff_base=0.001)


def test_usage_images_and_request_shape():
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=chat("hello"))

    h = harness(handler, supports_images=True, prices={"prompt_per_mtok": 1e6 / 11})
    msg = [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    out = asyncio.run(h.complete("m", msg))
    assert out.text == "hello" and out.prompt_tokens == 11 and out.completion_tokens == 3
    assert out.cached_tokens == 4 and out.attempts == 1 and not out.cache_hit
    assert out.cost == pytest.approx(1.0)
    assert seen[0]["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png")
    assert seen[0]["temperature"] == 0.0


def test_retries_on_429_and_500_then_success():
    replies = [429, 500, 200]

    def handler(request):
        status = replies.pop(0)
        return httpx2.Response(status, json=chat() if status == 200 else {"error": {}})

    h = harness(handler)
    out = asyncio.run(h.complete("m", [{"role": "user", "content": "hi"}]))
    assert out.error is None and out.attempts == 3 and h.stats.retries == 2


def test_rejected_requests_are_reply_failures_and_provider_failures_raise():
    # a request the server refuses (400) is the agent's recorded failure, not the provider's
    h = harness(lambda r: httpx2.Response(400, json={"error": {"message": "bad image"}}))
    out = asyncio.run(h.complete("m", [{"role": "user", "content": "hi"}]))
    assert out.error and "400" in out.error and out.attempts == 1 and not out.provider_failed
    # transient failures past the retries, and authentication, are the provider's
    h = harness(lambda r: httpx2.Response(503, json={"error": {}}), max_retries=2)
    with pytest.raises(ProviderFailed, match="after 3 attempts"):
        asyncio.run(h.complete("m", [{"role": "user", "content": "hi"}]))
    assert h.stats.failures == 1
    h = harness(lambda r: httpx2.Response(401, json={"error": {"message": "expired"}}))
    with pytest.raises(ProviderFailed, match="401"):
        asyncio.run(h.complete("m", [{"role": "user", "content": "hi"}]))
    # `check` reports instead of raising
    assert "401" in asyncio.run(h.check("m")).error


def test_cache_hits_make_no_call(tmp_path):
    calls = []

    def handler(request):
        calls.append(1)
        return httpx2.Response(200, json=chat("cached?"))

    cache = ResponseCache(tmp_path / "c.sqlite")
    h = harness(handler, cache)
    msgs = [{"role": "user", "content": "same"}]
    first = asyncio.run(h.complete("m", msgs))
    second = asyncio.run(h.complete("m", msgs))
    assert len(calls) == 1 and second.cache_hit and second.text == first.text
    assert second.prompt_tokens == first.prompt_tokens and h.stats.cache_hits == 1
    # images enter the key by hash, generation settings enter it too
    a = request_key("m", None, [{"type": "image_url", "image_url": {"url": "data:1"}}], {})
    b = request_key("m", None, [{"type": "image_url", "image_url": {"url": "data:2"}}], {})
    assert a != b and request_key("m", None, msgs, {"t": 1}) != request_key("m", None, msgs, {})


def test_connection_cap_is_respected():
    state = {"now": 0, "max": 0}

    async def handler(request):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return httpx2.Response(200, json=chat())

    h = harness(handler, max_connections=3)

    async def many():
        await asyncio.gather(*(h.complete("m", [{"role": "user", "content": str(i)}])
                               for i in range(20)))

    asyncio.run(many())
    assert state["max"] == 3 and h.stats.max_in_flight == 3 and h.stats.calls == 20


def test_registry_file_and_errors(tmp_path):
    f = tmp_path / "models.yaml"
    f.write_text("models:\n  big:\n    base_url: http://x/v1\n    model: big-1\n"
                 "    supports_images: true\n    prices: {prompt_per_mtok: 2}\n")
    reg = load_registry(f)
    assert reg.get("big").supports_images and "smollm2" in reg.models
    with pytest.raises(ConfigError, match="unknown model alias 'small'"):
        reg.get("small")
    f.write_text("models:\n  big:\n    model: 3\n    colour: red\n")
    with pytest.raises(ConfigError, match="models.yaml: model 'big'"):
        load_registry(f)
    with pytest.raises(ConfigError, match="no such models file"):
        load_registry(tmp_path / "none.yaml")


@pytest.mark.parametrize("status", [401, 500])
def test_a_long_key_echoed_by_the_provider_is_redacted_before_it_is_cut(status, monkeypatch):
    """A 320-character key echoed in an error: no 12-character piece of it survives in the
    failure text (it used to be cut at 200 characters first, leaving the key's head)."""
    import random
    import string

    from coordbench.llm.providers import MIN_KEY_PIECE, redact_secrets

    rnd = random.Random(7)
    key = "sk-" + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(317))
    monkeypatch.setenv("COORDBENCH_TEST_KEY", key)

    def handler(request):
        assert request.headers["authorization"] == f"Bearer {key}"
        return httpx2.Response(status, json={"error": {"message": f"bad key {key} (id 7)"}})

    h = harness(handler, api_key_env="COORDBENCH_TEST_KEY", max_retries=1)
    with pytest.raises(ProviderFailed) as failed:
        asyncio.run(h.complete("m", [{"role": "user", "content": "hi"}]))
    texts = [str(failed.value), h.last_failure or "", asyncio.run(h.check("m")).error or ""]
    for text in texts:
        assert str(status) in texts[0]
        assert not any(key[j:j + MIN_KEY_PIECE] in text
                       for j in range(len(key) - MIN_KEY_PIECE + 1)), text
    # pieces cut anywhere are found; short or unrelated text is left alone
    cut = "x" * 50 + key[:147]
    assert redact_secrets(cut, [key]) == "x" * 50 + "[redacted]"
    assert redact_secrets(f"a {key[100:130]} b", [key]) == "a [redacted] b"
    assert redact_secrets("nothing secret here", [key]) == "nothing secret here"


def test_a_local_model_without_its_extra_is_one_line_up_front(tmp_path, monkeypatch):
    """After `make run` alone (no `local` extra), `--model smollm2` says which extra to add,
    exit 2, before anything is played or written."""
    import importlib.util

    from tests.cli_errors import error_line

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "transformers" else real(name, *a))
    line = error_line(["mecobench", "run", "--agents", "llm", "--model", "smollm2", "--limit",
                       "1", "--out", "runs/x"], tmp_path)
    assert "needs transformers: pip install 'coordbench[local]'" in line
    assert not (tmp_path / "runs").exists()
