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
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from coordbench.core.trajectory import clean_text
from coordbench.errors import ConfigError
from coordbench.runner.episode import ProviderFailed, record_model_call, reserve_model_call

from .cache import ResponseCache, images_as_files, request_key
from .concurrency import AdaptiveCap
from .providers import (
    REJECTED,
    MalformedReply,
    OpenAIProvider,
    PermanentError,
    Provider,
    ReplyError,
    Throttled,
    TransformersProvider,
    TransientError,
    redact_secrets,
)
from .registry import ModelSpec, Registry


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


@dataclass
class HarnessStats:
    """Counters shown in the progress line and written to the run."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    cut: int = 0  # calls cut before they ended (their episode or the run stopped)
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


def _attempts(n: int) -> str:
    """Return "1 attempt" or "N attempts"."""
    return f"{n} attempt{'' if n == 1 else 's'}"


def _words(text: str, limit: int) -> str:
    """Return `text` cut to at most `limit` characters at a word boundary (… where cut)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0]
    return f"{cut}…"


@dataclass
class _Call:
    """One call in progress: its alias, whether it carries the schema, the retries it may
    make, and what its attempts brought (the reply, or the error and whether the provider
    is to blame) with each attempt's record."""

    alias: str
    structured: bool
    retries: int
    request_hash: str = ""
    attempts: int = 0
    reply: tuple[str, int, int, int, str | None] | None = None
    error: str | None = None
    provider_failed: bool = False
    tries: list[dict[str, Any]] = field(default_factory=list)
    cut: bool = False  # cut from outside while an attempt was in flight


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
        calls: list[_Call] = []  # this call's attempts so far, should it be cut
        try:
            done = await self._asked(alias, messages, max_tokens, schema, calls)
        except asyncio.CancelledError:
            # cut from outside (its episode stopped, or the run did): the attempts it made
            # were sent and may be billed, so they are on the record all the same
            if who is not None and any(c.tries for c in calls):
                cut = self._cut(alias, calls)
                record_model_call(cut.record(*who), slot, self._prompt(alias, messages))
            raise
        if who is not None:
            done.event = record_model_call(done.record(*who), slot,
                                           self._prompt(alias, messages))
        if done.provider_failed:
            open_now = self.failures_in_a_row >= self.breaker
            raise ProviderFailed(f"{alias}: {done.error}", stop_run=open_now)
        return done

    def _prompt(self, alias: str, messages: list[dict[str, Any]]) -> str:
        """Return the request's prompt as the JSON text kept beside the run (redacted)."""
        return self.redact(alias, json.dumps(
            {"model": self.spec(alias).model, "messages": images_as_files(messages)},
            ensure_ascii=False))

    def _cut(self, alias: str, calls: list[_Call]) -> Completion:
        """Return the record of a call cut before it ended: every attempt it made (the
        tokens and cost of a reply that came as it was cut are counted: they are billed)."""
        tries = [t for c in calls for t in c.tries]
        self.stats.cut += 1
        p = c = cached = 0
        cost = 0.0
        last = calls[-1]
        if last.reply is not None:
            _, p, c, cached, _ = last.reply
            cost = self.spec(alias).cost(p, c)
            self._account(alias, p, c, cost)
        return Completion(text="", alias=alias, attempts=sum(x.attempts for x in calls),
                          latency_s=sum(t["latency_s"] + t["wait_s"] for t in tries),
                          request_hash=calls[0].request_hash, prompt_tokens=p,
                          completion_tokens=c, cached_tokens=cached, cost=cost,
                          error="cut: the episode stopped before the reply was used",
                          structured=calls[0].structured, tries=tries)

    def _account(self, alias: str, p: int, c: int, cost: float) -> None:
        """Count a reply's tokens and cost, in total and per alias."""
        self.stats.prompt_tokens += p
        self.stats.completion_tokens += c
        self.stats.cost += cost
        row = self.stats.per_alias.setdefault(alias, {"calls": 0, "prompt_tokens": 0,
                                                      "completion_tokens": 0, "cost": 0.0})
        row["calls"] += 1
        row["prompt_tokens"] += p
        row["completion_tokens"] += c
        row["cost"] += cost

    async def _asked(self, alias: str, messages: list[dict[str, Any]],
                     max_tokens: int | None, schema: dict[str, Any] | None,
                     calls: list[_Call]) -> Completion:
        """Return the call's Completion, asked once more without the schema where a server
        refused it (see `complete`); `calls` gathers each attempt's record as it is made."""
        done = await self._complete(alias, messages, max_tokens, schema, calls=calls)
        rejected = done.error is not None and done.error.startswith(
            tuple(f"HTTP {c}" for c in REJECTED))
        if done.structured and (rejected or done.provider_failed) \
                and self.failures_in_a_row < self.breaker:
            # servers refuse a schema they do not take in many ways (400, 422, even a 500):
            # ask once more without it (one attempt: an outage is not retried twice over);
            # if that works, never send this model one again. Not once the breaker is open:
            # that attempt would never be sent
            retry = await self._complete(alias, messages, max_tokens, None, retries=0,
                                         calls=calls)
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
                # the schema attempts first, then the re-ask; each cut at a word, never
                # the counts
                retry.error = (f"{_words(done.error, 280)}; asked again without the schema: "
                               f"{_words(retry.error, 280)}")
            done = retry
        return done

    async def _complete(self, alias: str, messages: list[dict[str, Any]],
                        max_tokens: int | None, schema: dict[str, Any] | None = None,
                        retries: int | None = None, calls: list[_Call] | None = None
                        ) -> Completion:
        """Return one call's Completion: from the cache, or from the provider's attempts
        under the alias's cap and the circuit breaker, accounted and cached (`calls`
        gathers the call in progress, whose attempts a cut call's record keeps)."""
        spec = self.spec(alias)
        generation, structured = self._generation(spec, alias, max_tokens, schema)
        key = request_key(spec.model, spec.base_url, messages, generation)
        self.stats.calls += 1
        hit = self._cached(key, structured)
        if hit is not None:
            return hit
        if self.failures_in_a_row >= self.breaker:
            return self._open_circuit(alias, key)
        call = _Call(alias, structured, spec.max_retries if retries is None else retries, key)
        if calls is not None:
            calls.append(call)
        start = time.perf_counter()
        if not await self._attempts(spec, messages, generation, call):
            return self._open_circuit(alias, key)
        return self._finish(spec, key, call, time.perf_counter() - start)

    def _generation(self, spec: ModelSpec, alias: str, max_tokens: int | None,
                    schema: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """Return the call's generation settings and whether they carry the schema."""
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
        return generation, structured

    def _cached(self, key: str, structured: bool) -> Completion | None:
        """Return the cached reply to request `key` (None: not cached, or no cache)."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            return None
        self.stats.cache_hits += 1
        return Completion(**{**hit, "cache_hit": True, "latency_s": 0.0, "attempts": 0,
                             "request_hash": key, "structured": structured})

    async def _attempts(self, spec: ModelSpec, messages: list[dict[str, Any]],
                        generation: dict[str, Any], call: _Call) -> bool:
        """Make the call's attempts until one replies or the call fails for good; return
        False where the circuit was open before its first attempt. Each attempt holds a
        place under the alias's cap; a retry waits for its backoff outside it and takes a
        place again, so calls in flight follow the cap as it adapts."""
        provider = self.provider(call.alias)
        cap = self._cap(call.alias)
        while True:
            async with cap:
                if self.failures_in_a_row >= self.breaker:  # it opened while this call waited
                    if call.attempts == 0:
                        return False
                    # opened between two attempts: this call keeps its own history
                    call.error = (f"{_words(call.error or '', 240)} (after "
                                  f"{_attempts(call.attempts)}; then the circuit opened)")
                    call.provider_failed = True
                    return True
                delay = await self._attempt(spec, provider, messages, generation, cap, call)
            if delay is None:
                return True
            await asyncio.sleep(delay)

    async def _attempt(self, spec: ModelSpec, provider: Provider,
                       messages: list[dict[str, Any]], generation: dict[str, Any],
                       cap: Any, call: _Call) -> float | None:
        """Make one attempt and record it; return the backoff before the next one (None:
        the call is over, with a reply or an error). An attempt cut from outside (its episode
        or the run stopped) still ends, by its deadline, and is recorded with how it ended:
        the provider saw it, so the record says so; then the call stops (CancelledError)."""
        if call.attempts:
            self.stats.retries += 1
        call.attempts += 1
        self.stats.in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
        began, outcome, why, delay = time.perf_counter(), "cancelled", None, None
        cut = False
        try:
            sent, cut = await self._send(spec, provider, messages, generation)
            if sent is None:
                raise TimeoutError
            call.reply = sent.result()
            outcome = "ok"
            cap.success()
        except ReplyError as e:
            call.error, outcome, why = str(e), "refused", str(e)
        except PermanentError as e:
            call.error, call.provider_failed = str(e), True
            outcome, why = "permanent", call.error
        except (TransientError, TimeoutError) as e:
            outcome, why, delay = self._transient(spec, e, cap, call)
        finally:
            self.stats.in_flight -= 1
            call.tries.append(self._try(call.alias, call.structured, began, outcome, why,
                                        0.0 if cut else delay or 0.0))
        if cut:
            call.cut = True
            raise asyncio.CancelledError
        return delay

    async def _send(self, spec: ModelSpec, provider: Provider,
                    messages: list[dict[str, Any]], generation: dict[str, Any]
                    ) -> tuple[asyncio.Task | None, bool]:
        """Return (the request's finished task, None when it met the call's deadline;
        whether the call was cut while it was in flight). The deadline is for the whole
        request, not an idle read: a request past it is cancelled, which closes its
        connection."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + spec.timeout_s
        task = asyncio.ensure_future(provider.call(messages, generation))
        cut = False
        while not task.done() and loop.time() < deadline:
            try:
                await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
            except asyncio.CancelledError:
                cut = True  # let the request in flight end: the provider has it already
        if task.done():
            return task, cut
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return None, cut

    def _transient(self, spec: ModelSpec, e: Exception, cap: Any, call: _Call
                   ) -> tuple[str, str, float | None]:
        """Return (outcome, why, backoff; None: no attempt left) of an attempt that may be
        tried again."""
        error = (str(e) if isinstance(e, TransientError)
                 else f"no reply within the {spec.timeout_s:g} s deadline")
        outcome = ("throttled" if isinstance(e, Throttled) else "malformed"
                   if isinstance(e, MalformedReply) else "timeout"
                   if isinstance(e, TimeoutError) else "transient")
        call.error = error
        if isinstance(e, Throttled):  # fewer calls at once, the last try's too
            cap.throttled(e.retry_after)
        if call.attempts > call.retries:
            call.error = f"{_words(error, 240)} (after {_attempts(call.attempts)})"
            call.provider_failed = True
            return outcome, error, None
        delay = min(self.backoff_cap, self.backoff_base * 2 ** (call.attempts - 1))
        delay *= 0.5 + self._rng.random()
        if isinstance(e, Throttled):  # and at least the provider's pause
            delay = max(delay, min(e.retry_after or 0.0, 60.0))
        return outcome, error, delay

    def _finish(self, spec: ModelSpec, key: str, call: _Call, latency: float) -> Completion:
        """Return the call's Completion: its failure, or its reply accounted (tokens, cost
        per alias) and cached; the breaker counts provider failures in a row."""
        alias = call.alias
        if call.provider_failed:
            self.failures_in_a_row += 1
            self.last_failure = self.redact(alias, call.error or "")[:200]
        else:
            self.failures_in_a_row = 0
        if call.reply is None:
            self.stats.failures += 1
            return Completion(text="", alias=alias, latency_s=latency, attempts=call.attempts,
                              request_hash=key, error=self.redact(alias, call.error
                                                                  or "no reply"),
                              provider_failed=call.provider_failed,
                              structured=call.structured, tries=call.tries)
        text, p, c, cached, reason = call.reply
        text = self.redact(alias, text)
        reason = self.redact(alias, reason)[:40] if reason is not None else None
        cost = spec.cost(p, c)
        self._account(alias, p, c, cost)
        if self.cache is not None:
            self.cache.put(key, {"text": text, "alias": alias, "prompt_tokens": p,
                                 "completion_tokens": c, "cached_tokens": cached,
                                 "finish_reason": reason, "cost": cost})
        return Completion(text=text, alias=alias, prompt_tokens=p, completion_tokens=c,
                          cached_tokens=cached, finish_reason=reason, latency_s=latency,
                          attempts=call.attempts, request_hash=key, cost=cost,
                          structured=call.structured, tries=call.tries)

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
