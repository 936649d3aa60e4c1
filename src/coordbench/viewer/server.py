"""The viewer's HTTP server: the standard library's ThreadingHTTPServer on 127.0.0.1, one
static page (plain JS, CSS and SVG shipped in viewer/static, nothing fetched from elsewhere)
and a small JSON API:

    GET /api/runs                          runs and their conditions (manifests only)
    GET /api/episodes?run=R&cond=C         the condition's listing (file names, first and
                                           last lines) with the family's headline metrics
    GET /api/metrics?run=R&cond=C          per-episode metrics, computed in the background
    GET /api/episode?run=R&cond=C&key=K    one episode: header, timeline, picture, metrics,
                                           its attribution (RUN/attribution/, or null)
    GET /api/image?run=R&sha=H             one stored agent view (RUN/images/H.png)

The standard library is enough for a local, read-only viewer; a web framework would add a
dependency and a second server stack for four GET routes.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from coordbench.core.loopback_http import LoopbackHandler, LoopbackServer, bind
from coordbench.core.rundir import RunDir
from coordbench.core.strict_json import dumps_strict
from coordbench.errors import ConfigError, CoordbenchError, RunDirError

from . import index
from .episode import attribution_path, payload
from .metrics import MetricsCache, headline

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
           "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/static/style.css": ("style.css", "text/css; charset=utf-8")}
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CACHE = 32  # episode payloads kept in memory (a click back to one is instant)


def static_text(name: str) -> str:
    """Return the text of one of the page's static files."""
    return resources.files("coordbench.viewer").joinpath("static", name).read_text("utf-8")


def _static_bytes() -> dict[str, tuple[bytes, str]]:
    """Return {URL path: (body, content type)} of the page's static files, read once."""
    return {url: (static_text(name).encode(), ctype) for url, (name, ctype) in _STATIC.items()}


class SingleFlight:
    """Compute each key's value once, whatever the number of threads asking at once: the
    first computes it, the others wait for it (a burst of requests for one episode right
    after the viewer starts does one replay, not fifty that slow each other down)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Any, threading.Event] = {}

    def run(self, key: Any, cached: Any, compute: Any) -> Any:
        """Return `cached()` if not None, else `compute()` once for `key` at a time."""
        while True:
            hit = cached()
            if hit is not None:
                return hit
            with self._lock:
                done = self._running.get(key)
                if done is None:
                    done = self._running[key] = threading.Event()
                    mine = True
                else:
                    mine = False
            if not mine:
                done.wait()
                continue  # the value is cached now (or its computation failed: try)
            try:
                return compute()
            finally:
                with self._lock:
                    self._running.pop(key, None)
                done.set()


def _mtime(folder: Path) -> tuple[int, int]:
    """Return (mtime, entries) of a folder ((-1, 0) if absent): a file system with coarse
    timestamps may give two changes one mtime, but not one entry count too often."""
    try:
        return folder.stat().st_mtime_ns, len(os.listdir(folder))
    except OSError:
        return -1, 0


def _episode_stamp(rd: RunDir, cond: str, key: str) -> tuple:
    """Return (mtime, size, inode) of an episode file (() if it cannot be read)."""
    try:
        st = rd.episode_path(cond, key).stat()
    except (OSError, RunDirError):
        return ()
    return st.st_mtime_ns, st.st_size, st.st_ino


def _attribution_stamp(rd: RunDir, cond: str, key: str) -> tuple[int, int]:
    """Return (mtime, size) of the episode's stored attribution ((-1, 0) if none)."""
    path = attribution_path(rd, cond, key)
    return (-1, 0) if path is None else _file_stamp(path)


def _file_stamp(path: Path) -> tuple[int, int]:
    """Return (mtime, size) of a file ((-1, 0) if absent)."""
    try:
        st = path.stat()
    except OSError:
        return -1, 0
    return st.st_mtime_ns, st.st_size


def dumps(value: Any) -> str:
    """Return `value` as compact strict JSON text (NaN and infinities as null)."""
    return dumps_strict(value, separators=(",", ":"))


class Viewer:
    """What the server serves: the runs under one path, an episode cache, the metrics."""

    def __init__(self, path: Path) -> None:
        self.runs = index.open_runs(path)
        self.metrics = MetricsCache()
        self._episodes: OrderedDict[tuple, bytes] = OrderedDict()  # (run, cond, key, stat)
        self._listings: dict[tuple[str, str], tuple[tuple, list[dict[str, Any]]]] = {}
        self._lock = threading.Lock()
        self._flight = SingleFlight()
        self.static = _static_bytes()
        self._runs: tuple[tuple, bytes] | None = None
        # (run, condition, key) -> (the file's stamp, why it cannot be read)
        self._unreadable: dict[tuple[str, str, str], tuple[tuple, str]] = {}
        # loading the household task sets and the suites' modules takes seconds once per
        # process; do it now, off the request path, so the first episode opens quickly
        # (a request that needs it meanwhile waits for this one load: `find_task` holds it)
        threading.Thread(target=self._warm, name="viewer-warm", daemon=True).start()

    def _warm(self) -> None:
        from coordbench.runner.family import family

        suites = set()
        for rd in self.runs.values():
            for cond, spec in rd.conditions.items():
                name = index.suite_name(cond, spec)
                suites.add(name)
                f = family(name)
                if f is not None and f.warm is not None:
                    f.get("warm")(spec)
        for name in sorted(suites):
            headline(name)

    def run(self, name: str) -> RunDir:
        """Return the run called `name`; ConfigError if there is none."""
        if name not in self.runs:
            raise ConfigError(f"no run {name!r}")
        return self.runs[name]

    def runs_bytes(self) -> bytes:
        """Return `runs_payload` as JSON bytes, read again only when a run's manifest or
        crossplay design changed."""
        stamp = tuple(_mtime(rd.path) + _file_stamp(rd.path / "manifest.json")
                      + _file_stamp(rd.path / "crossplay.json") for rd in self.runs.values())
        with self._lock:
            if self._runs is not None and self._runs[0] == stamp:
                return self._runs[1]

        def cached() -> bytes | None:
            with self._lock:
                return self._runs[1] if self._runs is not None and self._runs[0] == stamp \
                    else None

        def compute() -> bytes:
            body = dumps(self.runs_payload()).encode()
            with self._lock:
                self._runs = (stamp, body)
            return body

        return self._flight.run(("runs", stamp), cached, compute)

    def runs_payload(self) -> dict[str, Any]:
        """Return every run with its conditions."""
        from coordbench.crossplay.matrix import load

        out = []
        for name, rd in self.runs.items():
            entry = {"name": name, "path": str(rd.path), "command": rd.manifest.get("command"),
                     "created": rd.manifest.get("created"), "conditions": index.conditions(rd)}
            try:
                design = load(rd.path)
            except CoordbenchError:
                design = None  # a damaged design: the run's conditions are still listed
            if design is not None:
                entry["crossplay"] = {"partners": design.names(), "metric": design.metric}
            out.append(entry)
        return {"runs": out}

    def crossplay_payload(self, run: str) -> dict[str, Any]:
        """Return a crossplay run's matrix (recomputed from its trajectories)."""
        from coordbench.crossplay.matrix import load, matrix
        from coordbench.report.crossplay_report import matrix_json

        rd = self.run(run)
        design = load(rd.path)
        if design is None:
            raise ConfigError(f"run {run!r} is not a crossplay run")
        return matrix_json(matrix(rd, design))

    def episodes_payload(self, run: str, cond: str) -> dict[str, Any]:
        """Return the listing of one condition."""
        rd = self.run(run)
        if cond not in rd.conditions:
            raise ConfigError(f"no condition {cond!r} in run {run!r}")
        suite = index.suite_name(cond, rd.conditions[cond])
        rows = self._rows(rd, run, cond)
        # files whose first and last lines look fine but that cannot be read whole (found
        # when one was opened, or by the metrics in the background): bad, as opening says
        with self._lock:
            bad = {k: why for (r, c, k), (stamp, why) in self._unreadable.items()
                   if (r, c) == (run, cond) and stamp == _episode_stamp(rd, cond, k)}
        bad.update(self.metrics.unreadable(run, cond))
        if bad:
            rows = [dict(row, status="bad", problem=bad[row["key"]])
                    if row.get("status") == "ok" and row.get("key") in bad else row
                    for row in rows]
        return {"run": run, "condition": cond, "suite": suite, "rows": rows,
                "headline": headline(suite)}

    def _rows(self, rd: RunDir, run: str, cond: str) -> list[dict[str, Any]]:
        """Return the condition's listing rows, read again only when one of its folders
        changed (writing, replacing or moving an episode file changes its folder's mtime)."""
        stamp = tuple(_mtime(rd.path / part / cond) for part in ("episodes", "errors",
                                                                 "damaged"))
        with self._lock:
            hit = self._listings.get((run, cond))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        rows = [r.as_dict() for r in index.condition_rows(rd, cond)]
        with self._lock:
            self._listings[(run, cond)] = (stamp, rows)
        return rows

    def metrics_payload(self, run: str, cond: str) -> dict[str, Any]:
        """Return what is computed so far of one condition's per-episode metrics."""
        rd = self.run(run)
        if cond not in rd.conditions:
            raise ConfigError(f"no condition {cond!r} in run {run!r}")
        return self.metrics.get(run, rd, cond, rd.episode_keys(cond))

    def image_bytes(self, run: str, sha: str) -> bytes:
        """Return one stored view (RUN/images/<sha256>.png, as `--images` saved it);
        ConfigError for a name that is not a sha256 or an image the run lacks."""
        rd = self.run(run)
        if not _SHA256.fullmatch(sha):
            raise ConfigError(f"{sha!r} is not an image id")
        path = rd.path / "images" / f"{sha}.png"
        if not path.is_file():
            raise ConfigError(f"run {run!r} has no image {sha[:12]}")
        return path.read_bytes()

    def episode_bytes(self, run: str, cond: str, key: str) -> bytes:
        """Return one episode's payload as JSON bytes (cached); an episode file that cannot
        be read is an answer too, `{"unavailable": why}`: the page lists bad episodes."""
        rd = self.run(run)
        if cond not in rd.conditions:
            raise ConfigError(f"no condition {cond!r} in run {run!r}")
        stamp = _episode_stamp(rd, cond, key)  # a cached payload stands while it is unchanged
        # ... and while its attribution is: `coordbench attribute` may run while the page is open
        ident = (run, cond, key, stamp, _attribution_stamp(rd, cond, key) if stamp else ())

        def cached() -> bytes | None:
            with self._lock:
                if ident in self._episodes:
                    self._episodes.move_to_end(ident)
                    return self._episodes[ident]
            return None

        def compute() -> bytes:
            try:
                body = dumps(payload(rd, cond, key)).encode()
            except RunDirError as e:
                with self._lock:
                    self._unreadable[(run, cond, key)] = (stamp, str(e))
                return dumps({"unavailable": str(e), "condition": cond, "key": key}).encode()
            with self._lock:
                self._episodes[ident] = body
                while len(self._episodes) > _CACHE:
                    self._episodes.popitem(last=False)
            return body

        return self._flight.run(ident, cached, compute)


def _handler(viewer: Viewer) -> type[BaseHTTPRequestHandler]:
    class Handler(LoopbackHandler):
        server_version = "coordbench-view"
        # a page elsewhere that rebinds its own name to 127.0.0.1 must not read runs
        refusal = "the viewer answers requests for 127.0.0.1 only"
        dump = staticmethod(dumps)

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if not self._local():
                return
            url = urlparse(self.path)
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            try:
                if url.path in viewer.static:
                    self._send(200, *viewer.static[url.path])
                elif url.path == "/api/runs":
                    self._send(200, viewer.runs_bytes(), "application/json")
                elif url.path == "/api/episodes":
                    with viewer.metrics.foreground():
                        body = dumps(viewer.episodes_payload(q.get("run", ""),
                                                             q.get("cond", ""))).encode()
                    self._send(200, body, "application/json")
                elif url.path == "/api/crossplay":
                    self._json(200, viewer.crossplay_payload(q.get("run", "")))
                elif url.path == "/api/metrics":
                    self._json(200, viewer.metrics_payload(q.get("run", ""), q.get("cond", "")))
                elif url.path == "/api/episode":
                    with viewer.metrics.foreground():
                        body = viewer.episode_bytes(q.get("run", ""), q.get("cond", ""),
                                                    q.get("key", ""))
                    self._send(200, body, "application/json")
                elif url.path == "/api/image":
                    self._send(200, viewer.image_bytes(q.get("run", ""), q.get("sha", "")),
                               "image/png")
                elif url.path == "/favicon.ico":
                    self._send(204, b"", "image/x-icon")
                else:
                    self._json(404, {"error": f"no such page {url.path}"})
            except CoordbenchError as e:
                self._json(404, {"error": str(e)})
            except (BrokenPipeError, ConnectionResetError):
                pass  # the page went away mid-answer
            except Exception as e:  # noqa: BLE001 - the page shows it; the server lives on
                self._json(500, {"error": f"{type(e).__name__}: {e}"})

    return Handler


class _Server(LoopbackServer):
    """A listen backlog for bursts (the default 5 drops connections when 50 clients arrive
    at once)."""

    request_queue_size = 256


def make_server(path: Path, port: int = 0) -> tuple[ThreadingHTTPServer, Viewer]:
    """Return a server bound to 127.0.0.1:`port` (0: any free port) serving the run(s) at
    `path`, not yet serving; ConfigError (one line) if the port is in use or not allowed."""
    viewer = Viewer(path)
    try:
        return bind(_Server, _handler(viewer), port), viewer
    except (ConfigError, OSError):
        viewer.metrics.close()
        raise


def url_of(server: ThreadingHTTPServer) -> str:
    """Return the URL the server answers on."""
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"
