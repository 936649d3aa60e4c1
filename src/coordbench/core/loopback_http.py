"""What coordbench's local web servers (the viewer, the play page) share: a threaded server
bound to 127.0.0.1 only (`bind`: a port in use is one line), and a request handler that
answers JSON and plain bodies without caching and without a log line per request, and that
refuses any request not addressed to 127.0.0.1 or localhost on its own port (a page
elsewhere that rebinds its name to this machine gets nothing)."""

from __future__ import annotations

import errno
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from coordbench.errors import ConfigError

HOST = "127.0.0.1"  # never another interface: these servers serve this machine only


class LoopbackHandler(BaseHTTPRequestHandler):
    """A request handler for a server bound to 127.0.0.1 (subclasses set `server_version`,
    `refusal` and, for strict JSON, `dump`)."""

    timeout = 30  # seconds a client may stall a connection (its thread) before it closes
    refusal = "this server answers requests for 127.0.0.1 only"
    dump: Callable[[Any], str] = staticmethod(json.dumps)

    def log_message(self, *args: Any) -> None:
        """Write nothing: a line per request would bury what the command prints."""

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, type(self).dump(value).encode(), "application/json")

    def _local(self) -> bool:
        """Return whether the request is addressed to this server on loopback (else answer
        403 with the refusal and return False)."""
        port = self.server.server_address[1]
        if self.headers.get("Host", "") in (f"127.0.0.1:{port}", f"localhost:{port}"):
            return True
        self._json(403, {"error": self.refusal})
        return False


class LoopbackServer(ThreadingHTTPServer):
    """A thread per request (daemon threads: a stalled client never holds the command)."""

    request_queue_size = 64
    daemon_threads = True


def bind(server: type[ThreadingHTTPServer], handler: type[BaseHTTPRequestHandler],
         port: int = 0) -> ThreadingHTTPServer:
    """Return `server` bound to 127.0.0.1:`port` (0: any free port) with `handler`, not yet
    serving; ConfigError (one line) if the port is in use or not allowed."""
    try:
        return server((HOST, port), handler)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {HOST} is in use; choose another with "
                              "--port (0 picks a free one)") from None
        if e.errno == errno.EACCES:
            raise ConfigError(f"port {port} on {HOST} is not allowed for this user; "
                              "choose one above 1023") from None
        raise
