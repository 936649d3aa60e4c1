"""The model harness with hundreds of calls in flight against a slow provider.

Usage:  python benchmarks/harness_scale.py [--in-flight 64,256,1024] [--rounds 3]
Writes benchmarks/results/harness_scale.json and benchmarks/results/harness_scale.md.

A loopback OpenAI-compatible server runs in its own process (so this process measures only
the client) and answers each call after a latency drawn uniformly from 0.5-3 s (seeded). For
each level, `rounds` x level calls go through one ModelHarness whose ceiling is the level
(the response cache off), all submitted at once. Per level:
- wall: from the first call to the last reply;
- ideal: the wall a harness with no cost at all would take, the calls' server latencies
  packed onto `level` connections in submission order;
- harness share of wall: (wall - ideal) / wall;
- client CPU: this process's CPU seconds over the wall (the harness, the event loop, the
  HTTP client and JSON; one core = 100%).
The harness's provider (the SDK imported, its clients made) is set up before the clock
starts: a one-off cost of a process, not of its calls.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import multiprocessing as mp
import platform
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results_io import write_results  # noqa: E402


def _serve(queue, seed: int) -> None:
    from coordbench.llm.loopback import ScriptedServer

    rng = random.Random(seed)
    lock = __import__("threading").Lock()

    def reply(body):
        with lock:
            delay = rng.uniform(0.5, 3.0)
        time.sleep(delay)
        return f"ok {delay:.3f}"

    with ScriptedServer(reply) as server:
        queue.put(server.base_url)
        time.sleep(3600)  # ended by the parent


def _ideal(latencies: list[float], level: int) -> float:
    free = [0.0] * level
    for d in latencies:
        start = heapq.heappop(free)
        heapq.heappush(free, start + d)
    return max(free)


def level_run(base_url: str, level: int, calls: int) -> dict:
    from coordbench.llm.client import ModelHarness
    from coordbench.llm.registry import ModelSpec, Registry

    spec = ModelSpec(alias="m", base_url=base_url, model="m", max_connections=level,
                     max_retries=0, timeout_s=60)
    harness = ModelHarness(Registry({"m": spec}))
    harness.provider("m")  # the SDK's import and its client are made before the clock

    async def run():
        msgs = [{"role": "user", "content": "hi"}]
        return await asyncio.gather(*(harness.complete("m", msgs) for _ in range(calls)))

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    done = asyncio.run(run())
    wall = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    latencies = [float(c.text.split()[1]) for c in done if c.error is None]
    ideal = _ideal(latencies, level)
    return {"in_flight": level, "calls": calls, "failed": sum(c.error is not None for c in done),
            "max_in_flight": harness.stats.max_in_flight, "wall_s": round(wall, 2),
            "ideal_s": round(ideal, 2), "harness_share": round((wall - ideal) / wall, 4),
            "calls_per_s": round(calls / wall, 1), "client_cpu_share": round(cpu / wall, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--in-flight", default="64,256,1024")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    levels = [int(x) for x in a.in_flight.split(",")]
    queue: mp.Queue = mp.Queue()
    server = mp.Process(target=_serve, args=(queue, 7), daemon=True)
    server.start()
    try:
        base_url = queue.get(timeout=60)
        rows = [level_run(base_url, n, a.rounds * n) for n in levels]
    finally:
        server.terminate()
        server.join(timeout=10)
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "latency_s": [0.5, 3.0], "rounds": a.rounds}, "rows": rows}
    lines = ["# The harness with hundreds of calls in flight", "",
             "`python benchmarks/harness_scale.py`: a loopback server in its own process "
             "answers each call in 0.5-3 s; rounds x level calls submitted at once through one "
             "harness whose ceiling is the level. Ideal: the same latencies packed onto the "
             "level's connections. Harness share: (wall - ideal) / wall. Client CPU: this "
             "process's CPU over the wall.", "",
             "| in flight | calls | failed | most in flight | wall (s) | ideal (s) | "
             "harness share | calls/s | client CPU |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['in_flight']} | {r['calls']} | {r['failed']} | "
                     f"{r['max_in_flight']} | {r['wall_s']} | {r['ideal_s']} | "
                     f"{r['harness_share']:.1%} | {r['calls_per_s']} | "
                     f"{r['client_cpu_share']:.0%} |")
    write_results("harness_scale", data, lines)


if __name__ == "__main__":
    main()
