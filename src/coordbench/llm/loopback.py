"""A small OpenAI-compatible chat server on 127.0.0.1: scripted, faulty on demand.

For tests and benchmarks of the model harness without any model service.

`ScriptedServer(reply, faults)` serves POST /v1/chat/completions. `reply(request_json)` returns
the assistant text; `faults` is a list consumed one per request: None (answer), an HTTP status
(e.g. 429, 500), "garbage" (a non-JSON body with status 200), or "slow:<seconds>".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedServer:
    def __init__(self, reply: Callable[[dict[str, Any]], str],
                 faults: list[Any] | None = None) -> None:
        self.reply = reply
        self.faults = list(faults or [])
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append(body)
                    fault = outer.faults.pop(0) if outer.faults else None
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    if isinstance(fault, str) and fault.startswith("slow:"):
                        time.sleep(float(fault[5:]))
                        fault = None
                    if isinstance(fault, int):
                        self._send(fault, {"error": {"message": "injected", "type": "x"}})
                    elif fault == "garbage":
                        data = b"<html>not json"
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    else:
                        text = outer.reply(body)
                        prompt = sum(len(str(m.get("content", ""))) for m in body["messages"])
                        self._send(200, {
                            "id": "x", "object": "chat.completion", "created": 0,
                            "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                "role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": prompt // 4,
                                      "completion_tokens": max(1, len(text) // 4),
                                      "total_tokens": prompt // 4 + max(1, len(text) // 4)}})
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # many concurrent clients: the default backlog is 5

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
