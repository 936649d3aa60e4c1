"""The viewer under a burst: latency of 2,000 requests at 50 concurrent on loopback.

Usage:  python benchmarks/viewer_load.py [--requests 2000] [--concurrency 50]
Writes benchmarks/results/viewer_load.json and benchmarks/results/viewer_load.md.

Warm rows: one small STAT run (20 episodes) is served twice in this process, side by side:
by the viewer's server as shipped (listen backlog 256, a thread per request) and by the same
server with the standard library's default backlog of 5. Clients ask for the run listing
and for episode payloads (cached after the first), 50 at a time.

Cold row: a fresh `coordbench view` process serving a 16-episode household run with images
(`mecobench run --suite v1 --limit 16 --images`); the burst starts the moment it prints its
URL, while it still warms up (loading the instance set, importing the replay): the page,
app.js, the run listing, the condition's listing and the 16 episodes, mixed.

Every request's wall time is kept; a request unanswered after 20 s counts as failed.
"""

from __future__ import annotations

import argparse
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results_io import write_results  # noqa: E402
from coordbench.viewer import server as srv  # noqa: E402


def _times(urls: list[str], concurrency: int) -> list[float | None]:
    """Return each request's wall time (None: failed), `concurrency` at a time."""

    def get(url: str) -> float | None:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                r.read()
        except OSError:
            return None
        return time.perf_counter() - start

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(get, urls))


def _row(label: str, requests: int, times: list[float | None]) -> dict:
    ok = sorted(t for t in times if t is not None)
    q = statistics.quantiles(ok, n=100) if len(ok) > 1 else [0.0] * 99
    return {"server": label, "requests": requests, "failed": len(times) - len(ok),
            "p50_ms": round(1000 * q[49], 1), "p99_ms": round(1000 * q[98], 1),
            "max_ms": round(1000 * ok[-1], 1) if ok else None}


def cold_burst(run: Path, requests: int, concurrency: int, src: str | None = None) -> dict:
    """Return the latencies of a burst at a `coordbench view` process just started (from
    the source tree `src` when given: an earlier coordbench, side by side)."""
    import json
    import os

    env = dict(os.environ, **({"PYTHONPATH": src} if src else {}))
    proc = subprocess.Popen([sys.executable, "-m", "coordbench", "view", str(run), "--port",
                             "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if not m:
            raise SystemExit(f"the viewer printed no URL: {line!r}")
        base = m.group(1)
        manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        (cond,) = manifest["conditions"]
        keys = sorted(p.stem for p in (run / "episodes" / cond).glob("*.jsonl"))
        name = run.name
        kinds = [f"{base}/", f"{base}/static/app.js", f"{base}/api/runs",
                 f"{base}/api/episodes?run={name}&cond={cond}"]
        urls = [kinds[k % 4] if k % 2 else
                f"{base}/api/episode?run={name}&cond={cond}&key={keys[k % len(keys)]}"
                for k in range(requests)]
        label = ("cold: a fresh `coordbench view` process" if src is None else
                 f"cold, the baseline source ({src})")
        return _row(label, requests, _times(urls, concurrency))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def burst(run: Path, backlog: int, requests: int, concurrency: int) -> dict:
    old = srv._Server.request_queue_size
    srv._Server.request_queue_size = backlog
    try:
        server, viewer = srv.make_server(run, 0)
    finally:
        srv._Server.request_queue_size = old
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    (name,) = viewer.runs
    (cond,) = viewer.runs[name].conditions
    base = srv.url_of(server)
    urls = [f"{base}/api/runs" if k % 2 else
            f"{base}/api/episode?run={name}&cond={cond}&key=ep{k % 20:05d}"
            for k in range(requests)]

    try:
        times = _times(urls, concurrency)
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
    label = (f"warm, listen backlog {backlog} (shipped)" if backlog == 256 else
             f"warm, listen backlog {backlog} (standard library default)")
    return _row(label, requests, times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--baseline-src", default=None, help="a coordbench source tree (its src/ "
                    "folder) whose viewer also meets the cold burst, side by side")
    a = ap.parse_args()
    from typer.testing import CliRunner

    from coordbench.cli import app

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "r"
        res = CliRunner().invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                       "greedy", "--episodes", "20", "--out", str(run),
                                       "--json"])
        if res.exit_code != 0:
            raise SystemExit(res.output)
        rows = [burst(run, b, a.requests, a.concurrency) for b in (256, 5)]
        household = Path(tmp) / "household"
        res = CliRunner().invoke(app, ["mecobench", "run", "--suite", "v1", "--limit", "16",
                                       "--images", "--out", str(household), "--json"])
        if res.exit_code != 0:
            raise SystemExit(res.output)
        rows.append(cold_burst(household, a.requests, a.concurrency))
        if a.baseline_src:
            rows.append(cold_burst(household, a.requests, a.concurrency, a.baseline_src))
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "concurrency": a.concurrency}, "rows": rows}
    lines = ["# The viewer under a burst", "",
             f"`python benchmarks/viewer_load.py`: {a.requests} requests, {a.concurrency} at a "
             "time, on 127.0.0.1, side by side in one run. Warm rows: run listing and episode "
             "payloads of a 20-episode STAT run, in this process. Cold rows: a fresh "
             "`coordbench view` process on a 16-episode household run with images, the "
             "burst (page, app.js, run and condition listings, episodes) sent the moment it "
             "prints its URL, while it warms up; the baseline row (`--baseline-src`) is the "
             "same burst at an earlier coordbench's viewer.",
             "", "| server | requests | failed | p50 (ms) | p99 (ms) | max (ms) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['server']} | {r['requests']} | {r['failed']} | {r['p50_ms']} | "
                     f"{r['p99_ms']} | {r['max_ms']} |")
    write_results("viewer_load", data, lines)


if __name__ == "__main__":
    main()
