"""A small OpenAI-compatible chat server on 127.0.0.1: scripted, faulty on demand.

For tests and benchmarks of the model harness without any model service.

`ScriptedServer(reply, faults, mix=..., seed=...)` serves POST /v1/chat/completions.
`reply(request_json)` returns the assistant text. Each request takes the next fault of
`faults` (a list consumed one per request) or, when the list is empty, one drawn from `mix`
({fault: probability}, seeded); None answers normally. Faults:

- an HTTP status (429, 500, 401, ...), with an error body; "echo_key" is a 401 whose body
  repeats the request's Authorization header (a provider that leaks the key back)
- "garbage" (status 200, not JSON), "empty" (status 200, no body), "truncated" (the body is
  cut short of its Content-Length), "reset" (the connection closes mid-body)
- "slow:<s>" (answer after s seconds), "drip:<s>" (send the body one byte every s seconds),
  "hang:<s>" (say nothing for s seconds, then close)
- reply shapes: "null_choices" (`choices: [null]`), "no_choices", "content_dict",
  "content_list", "content_int", "usage_str" (`prompt_tokens: "many"`), "usage_negative",
  "finish_int"

Every wait is bounded by its own seconds, so a test with faults ends by itself.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHAPES = {
    "null_choices": lambda body: {**body, "choices": [None]},
    "no_choices": lambda body: {**body, "choices": []},
    "content_dict": lambda body: _with_message(body, {"role": "assistant",
                                                      "content": {"action": "wait"}}),
    "content_list": lambda body: _with_message(body, {"role": "assistant",
                                                      "content": [1, 2, 3]}),
    "content_int": lambda body: _with_message(body, {"role": "assistant", "content": 7}),
    "usage_str": lambda body: {**body, "usage": {"prompt_tokens": "many",
                                                 "completion_tokens": 1}},
    "usage_negative": lambda body: {**body, "usage": {"prompt_tokens": -5,
                                                      "completion_tokens": 1}},
    "finish_int": lambda body: {**body, "choices": [{**body["choices"][0],
                                                     "finish_reason": 3}]},
}


def _with_message(body: dict[str, Any], message: Any) -> dict[str, Any]:
    return {**body, "choices": [{**body["choices"][0], "message": message}]}


class ScriptedServer:
    """The server (see the module docstring); a context manager that starts and stops it."""

    def __init__(self, reply: Callable[[dict[str, Any]], str],
                 faults: list[Any] | None = None, *, mix: dict[Any, float] | None = None,
                 seed: int = 0, limit: int | None = None, latency: float = 0.0,
                 retry_after: float | None = None) -> None:
        self.reply = reply
        # a rate-limited provider: more than `limit` requests at once are answered 429 (with
        # `Retry-After: retry_after` where given); every answer takes `latency` seconds
        self.limit, self.latency, self.retry_after = limit, latency, retry_after
        self.throttled = 0
        self.faults = list(faults or [])
        self.mix = dict(mix or {})
        self.rng = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.served: list[Any] = []  # the fault (or None) each request got
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                try:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                except (ValueError, TypeError):  # not a chat request: refused, never a crash
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with outer.lock:
                    outer.requests.append(body)
                    fault = outer._next_fault()
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    if outer.limit is not None and outer.in_flight > outer.limit:
                        fault = "throttle"
                        outer.throttled += 1
                    outer.served.append(fault)
                try:
                    if fault == "throttle":
                        self._throttle()
                        return
                    if outer.latency:
                        time.sleep(outer.latency)
                    self._serve(body, fault)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its deadline): nothing to answer
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

            def _serve(self, body, fault):
                kind, _, arg = str(fault).partition(":") if isinstance(fault, str) else ("", "",
                                                                                          "")
                if kind == "slow":
                    time.sleep(float(arg))
                    fault = None
                if kind == "hang":
                    time.sleep(float(arg))
                    self.close_connection = True
                    return
                if isinstance(fault, int):
                    self._send(fault, {"error": {"message": "injected", "type": "x"}})
                elif fault == "echo_key":
                    self._send(401, {"error": {"message": "invalid key: "
                                               + str(self.headers.get("Authorization"))}})
                elif fault in ("garbage", "empty", "truncated", "reset"):
                    data = {"garbage": b"<html>not json", "empty": b""}.get(
                        fault, json.dumps(outer._answer(body)).encode())
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if fault in ("truncated", "reset"):
                        self.wfile.write(data[:len(data) // 2])
                        self.wfile.flush()
                        if fault == "reset":  # an abortive close: the client sees a reset
                            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                       b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        self.close_connection = True
                        self.connection.close()
                        return
                    self.wfile.write(data)
                elif kind == "drip":
                    data = json.dumps(outer._answer(body)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(float(arg))
                elif fault in SHAPES:
                    self._send(200, SHAPES[fault](outer._answer(body)))
                else:
                    self._send(200, outer._answer(body))

            def _throttle(self):
                self._send(429, {"error": {"message": "rate limit", "type": "x"}},
                           {} if outer.retry_after is None
                           else {"Retry-After": f"{outer.retry_after:g}"})

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # many concurrent clients: the default backlog is 5

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _next_fault(self) -> Any:
        if self.faults:
            return self.faults.pop(0)
        if self.mix:
            r, acc = self.rng.random(), 0.0
            for fault, p in self.mix.items():
                acc += p
                if r < acc:
                    return fault
        return None

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.reply(body)
        prompt = sum(len(str(m.get("content", ""))) for m in body["messages"])
        # a real server stops at max_tokens and says so (4 characters a token here)
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        finish = "stop"
        if isinstance(cap, int) and cap > 0 and len(text) > 4 * cap:
            text, finish = text[:4 * cap], "length"
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": prompt // 4,
                          "completion_tokens": max(1, len(text) // 4),
                          "total_tokens": prompt // 4 + max(1, len(text) // 4)}}

    @property
    def base_url(self) -> str:
        """Return the server's OpenAI-compatible base URL (on 127.0.0.1)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
