"""Calls per second against a rate-limited provider: adaptive concurrency against fixed caps.

Usage:  python benchmarks/adaptive_concurrency.py [--calls 960] [--limit 16] [--latency 0.5]
Writes benchmarks/results/adaptive_concurrency.json and .md.

coordbench's loopback server answers each call after `--latency` seconds and refuses with 429
(Retry-After 0.1 s) any call beyond `--limit` at once, so its best rate is limit / latency
calls per second. The same calls go through the model harness, side by side in one run:
adaptive (ceiling 64), a fixed cap that is too high (64, adaptation off), one that is too
low (2; a quarter of the calls, or it takes minutes) and one at the server's limit, as if it
were known in advance (what any client can reach against this server: the best rate less
the server's and client's own time per call).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results_io import write_results  # noqa: E402
from coordbench.llm import concurrency  # noqa: E402
from coordbench.llm.client import ModelHarness  # noqa: E402
from coordbench.llm.loopback import ScriptedServer  # noqa: E402
from coordbench.llm.registry import ModelSpec, Registry  # noqa: E402


def one_run(label: str, ceiling: int, adaptive: bool, calls: int, limit: int,
            latency: float) -> dict:
    throttled, success = concurrency.AdaptiveCap.throttled, concurrency.AdaptiveCap.success
    if not adaptive:  # a fixed cap: the 429s are retried, the cap never moves
        concurrency.AdaptiveCap.throttled = lambda self, retry_after=None: None
        concurrency.AdaptiveCap.success = lambda self: None
    try:
        with ScriptedServer(lambda body: "ok", limit=limit, latency=latency,
                            retry_after=0.1) as server:
            spec = ModelSpec(alias="m", base_url=server.base_url, model="m",
                             max_connections=ceiling, max_retries=50, timeout_s=30)
            harness = ModelHarness(Registry({"m": spec}))
            harness.backoff_base, harness.backoff_cap = 0.05, 1.0
            msgs = [{"role": "user", "content": "hi"}]

            async def run():
                return await asyncio.gather(*(harness.complete("m", msgs)
                                              for _ in range(calls)))

            start = time.perf_counter()
            done = asyncio.run(run())
            wall = time.perf_counter() - start
            refused = server.throttled
    finally:
        concurrency.AdaptiveCap.throttled, concurrency.AdaptiveCap.success = throttled, success
    rate = calls / wall
    cap = harness.stats.as_dict()["caps"]["m"]
    return {"label": label, "ceiling": ceiling, "adaptive": adaptive, "calls": calls,
            "failed": sum(c.error is not None for c in done), "wall_s": round(wall, 2),
            "calls_per_s": round(rate, 1), "share_of_limit": round(rate / (limit / latency), 3),
            "429s": refused, "cap_range": [cap["low"], cap["high"]]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=960)
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.5)
    a = ap.parse_args()
    rows = [one_run("adaptive, ceiling 64", 64, True, a.calls, a.limit, a.latency),
            one_run("fixed 64 (too high)", 64, False, a.calls, a.limit, a.latency),
            # a quarter of the calls: at 2 at once the whole set would take minutes
            one_run("fixed 2 (too low)", 2, False, a.calls // 4, a.limit, a.latency),
            one_run(f"fixed {a.limit} (the server's limit, known in advance)", a.limit, False,
                    a.calls, a.limit, a.latency)]
    best = a.limit / a.latency
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "limit": a.limit, "latency_s": a.latency, "best_calls_per_s": best},
            "rows": rows}
    lines = ["# Adaptive concurrency against a rate-limited provider", "",
             f"`python benchmarks/adaptive_concurrency.py`: {a.calls} calls; the loopback "
             f"server answers in {a.latency:g} s and refuses (429, Retry-After 0.1 s) more "
             f"than {a.limit} at once: at best {best:g} calls/s. Side by side in one run.", "",
             "| harness | calls/s | share of the best | 429s | cap moved in | failed |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['calls_per_s']} | {r['share_of_limit']:.0%} | "
                     f"{r['429s']} | {r['cap_range'][0]}-{r['cap_range'][1]} | {r['failed']} |")
    write_results("adaptive_concurrency", data, lines)


if __name__ == "__main__":
    main()
