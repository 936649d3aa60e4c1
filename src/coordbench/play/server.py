"""The play page's HTTP server: the standard library's ThreadingHTTPServer on 127.0.0.1.

It answers only requests whose Host is 127.0.0.1 or localhost on its port (a page elsewhere
that rebinds its name to this machine gets nothing) and that carry the session's token (a
random one per `coordbench play`, printed once in the URL). `GET /` is the page; the page
polls `GET /api/state`, answers with `POST /api/answer` and says it closes with
`POST /api/leave`; each request names its browser session (`client`), and the first session
to ask plays the seat while any other only watches. `/api/state?after=ID` waits (a few
seconds at most) until the open question is another than ID, so a new question reaches the
page as soon as it is asked. A refused request is a 4xx with a one-line reason, never a
traceback.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from urllib.parse import parse_qs, urlparse

from coordbench.core.loopback_http import LoopbackHandler, LoopbackServer, bind

from .session import IllegalAnswer, SeatSession

MAX_BODY = 64_000
BODY_TIMEOUT_S = 5.0  # seconds a request body may take to arrive once its headers have


def page_text() -> str:
    """Return the play page (one self-contained HTML file)."""
    return files("coordbench.play").joinpath("page.html").read_text(encoding="utf-8")


def _handler(session: SeatSession) -> type[BaseHTTPRequestHandler]:
    class Handler(LoopbackHandler):
        server_version = "coordbench-play"
        refusal = "the play server answers requests for 127.0.0.1 only"

        def _checked(self) -> dict[str, str] | None:
            """Return the query if the request may be answered (else answer 4xx, None)."""
            if not self._local():
                return None
            q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
            if q.get("token") != session.token:
                self._json(403, {"error": "missing or wrong token: open the URL "
                                          "`coordbench play` printed"})
                return None
            return q

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            q = self._checked()
            if q is None:
                return
            path = urlparse(self.path).path
            try:
                if path == "/":
                    self._send(200, page_text().encode(), "text/html; charset=utf-8")
                elif path == "/api/state":
                    after = q.get("after", "")
                    wait = int(after) if after.isascii() and after.isdigit() and len(
                        after) < 12 else None
                    self._json(200, session.state(q.get("client", "")[:100], wait))
                else:
                    self._json(404, {"error": f"no such page {path}"})
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            q = self._checked()
            if q is None:
                return
            path = urlparse(self.path).path
            client = q.get("client", "")[:100]
            try:
                length = self.headers.get("Content-Length") or "0"
                if not (length.isascii() and length.isdigit()):
                    self._json(400, {"error": "Content-Length is not a byte count"})
                    return
                size = int(length)
                if size > MAX_BODY:
                    self._json(413, {"error": f"a request body is at most {MAX_BODY} bytes"})
                    return
                try:  # a body that stalls is the client's mistake: 408, one line
                    self.connection.settimeout(BODY_TIMEOUT_S)
                    raw = self.rfile.read(size) if size else b""
                except TimeoutError:
                    self.close_connection = True
                    self._json(408, {"error": f"the request body did not arrive within "
                                              f"{BODY_TIMEOUT_S:g} s"})
                    return
                finally:
                    self.connection.settimeout(self.timeout)
                if len(raw) < size:
                    self.close_connection = True
                    self._json(400, {"error": f"the request body ended after {len(raw)} of "
                                              f"{size} bytes"})
                    return
                if path == "/api/leave":
                    session.leave(client)
                    self._json(200, {"ok": True})
                    return
                if path != "/api/answer":
                    self._json(404, {"error": f"no such action {path}"})
                    return
                try:
                    body = json.loads(raw or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError("not an object")
                except RecursionError:
                    self._json(400, {"error": "the answer is not a JSON object (nested too "
                                              "deep)"})
                    return
                except ValueError as e:
                    self._json(400, {"error": f"the answer is not a JSON object ({e})"[:300]})
                    return
                session.answer(client, body.get("question"), body.get("choice"),
                               body.get("text"))
                self._json(200, {"ok": True})
            except IllegalAnswer as e:
                self._json(409, {"error": str(e)})
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as e:  # noqa: BLE001 - the page shows it; the server lives on
                self._json(500, {"error": f"{type(e).__name__}: {e}"})

    return Handler


def make_server(session: SeatSession, port: int = 0) -> ThreadingHTTPServer:
    """Return a server bound to 127.0.0.1:`port` (0: any free port) for `session`, not yet
    serving; ConfigError (one line) if the port is in use or not allowed."""
    return bind(LoopbackServer, _handler(session), port)


def url_of(server: ThreadingHTTPServer, session: SeatSession) -> str:
    """Return the page's URL, with the session's token."""
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/?token={session.token}"
