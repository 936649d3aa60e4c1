"""Model-harness overhead, concurrency and cache speed against a zero-latency loopback server.

Usage:  python benchmarks/llm_harness.py [--calls 2000] [--in-flight 64]
Writes benchmarks/results/llm_harness.json and benchmarks/results/llm_harness.md.

Measured side by side in one process against coordbench's loopback OpenAI-compatible server
(which answers at once):
- direct: the bare AsyncOpenAI client, `--in-flight` concurrent calls;
- harness: the same calls through ModelHarness (cap, retry loop, accounting, no cache);
- overhead per call = (harness wall time - direct wall time) / calls (the client and the
  server share this process and its GIL, so both runs are server-bound and this difference
  is noise-level), and, isolated, the harness's own cost per call over a provider that
  answers instantly without any network;
- max in flight: the most calls the server saw at once when every reply takes 50 ms;
- cached rerun: the same calls again with the response cache warm, as a share of a first run
  that fills the cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import tempfile
import time
from pathlib import Path

from coordbench.llm.cache import ResponseCache
from coordbench.llm.client import ModelHarness
from coordbench.llm.loopback import ScriptedServer
from coordbench.llm.providers import Provider
from coordbench.llm.registry import ModelSpec, Registry


def messages(i: int) -> list[dict]:
    return [{"role": "system", "content": "You are a household robot."},
            {"role": "user", "content": f"Observation {i}: you see a cupcake. Act."}]


async def direct(base_url: str, calls: int, in_flight: int) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with gate:
            await client.chat.completions.create(model="m", messages=messages(i),
                                                 temperature=0.0, max_tokens=64)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return time.perf_counter() - start


async def through(harness: ModelHarness, calls: int) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(harness.complete("m", messages(i)) for i in range(calls)))
    return time.perf_counter() - start


class InstantProvider(Provider):
    """Answers at once, without network: what is left is the harness's own work."""

    async def call(self, messages, generation):
        return '{"action": "wait"}', 10, 3, 0, "stop"


def harness_only(calls: int) -> float:
    h = ModelHarness(Registry({"m": ModelSpec(alias="m", model="m", max_connections=64)}))
    h._providers["m"] = InstantProvider()
    return asyncio.run(through(h, calls)) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    reply = json.dumps({"action": "wait", "memory": "x"})
    with ScriptedServer(lambda body: reply) as server:
        spec = ModelSpec(alias="m", base_url=server.base_url, model="m",
                         max_connections=args.in_flight)
        reg = Registry({"m": spec})
        t_direct = asyncio.run(direct(server.base_url, args.calls, args.in_flight))
        server.max_in_flight = 0
        t_harness = asyncio.run(through(ModelHarness(reg), args.calls))
        with tempfile.TemporaryDirectory() as tmp:
            cache = ResponseCache(Path(tmp) / "c.sqlite")
            t_fill = asyncio.run(through(ModelHarness(reg, cache), args.calls))
            before = len(server.requests)
            t_cached = asyncio.run(through(ModelHarness(reg, cache), args.calls))
            assert len(server.requests) == before, "a cached rerun must make no call"
    with ScriptedServer(lambda body: reply, ["slow:0.05"] * 4 * args.in_flight) as server:
        spec = ModelSpec(alias="m", base_url=server.base_url, model="m",
                         max_connections=args.in_flight)
        h = ModelHarness(Registry({"m": spec}))
        asyncio.run(through(h, 4 * args.in_flight))
        peak = server.max_in_flight
        peak_harness = h.stats.max_in_flight
    own = harness_only(args.calls * 5)
    row = {"calls": args.calls, "in_flight": args.in_flight, "direct_s": t_direct,
           "harness_s": t_harness,
           "overhead_ms_per_call": 1000 * (t_harness - t_direct) / args.calls,
           "harness_calls_per_s": args.calls / t_harness, "max_in_flight_seen": peak,
           "max_in_flight_harness": peak_harness, "harness_own_ms_per_call": 1000 * own,
           "first_run_with_cache_s": t_fill, "cached_rerun_s": t_cached,
           "cached_share": t_cached / t_fill}
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))
    meta = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_harness.json").write_text(json.dumps({"meta": meta, "row": row},
                                                          indent=2) + "\n")
    (args.out / "llm_harness.md").write_text("\n".join([
        "# Model harness against a zero-latency loopback server", "",
        f"python {meta['python']}, {meta['date']}; {args.calls} calls, {args.in_flight} in "
        "flight; figures from one run, side by side.", "",
        "| direct AsyncOpenAI (s) | through harness (s) | difference per call (ms) | harness "
        "own cost per call (ms) | max in flight (server / harness) | first run, filling cache "
        "(s) | cached rerun (s) | cached / first |",
        "|---|---|---|---|---|---|---|---|",
        f"| {t_direct:.2f} | {t_harness:.2f} | {row['overhead_ms_per_call']:.3f} | "
        f"{1000 * own:.3f} | {peak} / {peak_harness} | {t_fill:.2f} | {t_cached:.3f} | "
        f"{row['cached_share']:.1%} |", ""]))
    print(f"wrote {args.out / 'llm_harness.md'}")


if __name__ == "__main__":
    main()
