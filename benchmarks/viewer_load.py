"""The viewer under a burst: latency of 2,000 requests at 50 concurrent on loopback.

Usage:  python benchmarks/viewer_load.py [--requests 2000] [--concurrency 50]
Writes benchmarks/results/viewer_load.json and benchmarks/results/viewer_load.md.

One small STAT run (20 episodes) is served twice in this process, side by side: by the
viewer's server as shipped (listen backlog 256, a thread per request) and by the same server
with the standard library's default backlog of 5. Clients ask for the run listing and for
episode payloads (cached after the first), 50 at a time; every request's wall time is kept;
a request unanswered after 20 s counts as failed.
"""

from __future__ import annotations

import argparse
import platform
import statistics
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

    def get(url: str) -> float | None:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                r.read()
        except OSError:
            return None
        return time.perf_counter() - start

    try:
        with ThreadPoolExecutor(concurrency) as pool:
            times = list(pool.map(get, urls))
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
    ok = sorted(t for t in times if t is not None)
    q = statistics.quantiles(ok, n=100) if len(ok) > 1 else [0.0] * 99
    return {"backlog": backlog, "requests": requests, "failed": len(times) - len(ok),
            "p50_ms": round(1000 * q[49], 1), "p99_ms": round(1000 * q[98], 1),
            "max_ms": round(1000 * ok[-1], 1) if ok else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
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
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "concurrency": a.concurrency}, "rows": rows}
    lines = ["# The viewer under a burst", "",
             f"`python benchmarks/viewer_load.py`: {a.requests} requests, {a.concurrency} at a "
             "time, on 127.0.0.1 (run listing and episode payloads), side by side in one run.",
             "", "| listen backlog | requests | failed | p50 (ms) | p99 (ms) | max (ms) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        label = f"{r['backlog']} (shipped)" if r["backlog"] == 256 else \
            f"{r['backlog']} (standard library default)"
        lines.append(f"| {label} | {r['requests']} | {r['failed']} | {r['p50_ms']} | "
                     f"{r['p99_ms']} | {r['max_ms']} |")
    write_results("viewer_load", data, lines)


if __name__ == "__main__":
    main()
