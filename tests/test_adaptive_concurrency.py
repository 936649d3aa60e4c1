"""Adaptive concurrency: a model's max_connections is a ceiling; 429s and 503s cut the calls
in flight, answered calls grow them back (slow start, then AIMD that holds under the limit
at which the provider last refused)."""

from __future__ import annotations

import asyncio

from coordbench.llm.client import ModelHarness
from coordbench.llm.concurrency import AdaptiveCap
from coordbench.llm.loopback import ScriptedServer
from coordbench.llm.registry import ModelSpec, Registry


def test_slow_start_then_one_call_a_window_holding_under_where_the_provider_refused():
    from coordbench.llm.concurrency import HOLD_WINDOWS

    async def window(cap):  # as many answered calls as the limit
        for _ in range(cap.limit):
            async with cap:
                cap.success()

    async def run():
        assert AdaptiveCap(32).limit == 32  # the ceiling: what the provider is said to take
        cap = AdaptiveCap(32, start=8)
        await window(cap)
        assert cap.limit == 16  # slow start: doubles each window
        cap.throttled()
        assert cap.limit == 12  # the first throttle: cut to three quarters
        cap.throttled()
        assert cap.limit == 12  # the same burst of 429s: no second cut
        for want in (13, 14, 15):
            await window(cap)
            assert cap.limit == want  # +1 a window
        for _ in range(HOLD_WINDOWS):
            await window(cap)
            assert cap.limit == 15  # just under the refused 16: held
        await window(cap)
        assert cap.limit == 16  # then one probe above
        cap.throttled()
        assert cap.limit == 15  # a refused probe after calm windows: back by one
        for _ in range(15):  # the next window is refused too: the limit is falling
            async with cap:
                pass
        cap.throttled()
        assert cap.limit == 11 and cap.low == 8 and cap.high == 16 and cap.throttles == 4
        for _ in range(12):
            for _ in range(cap.limit):  # a window of calls, then a throttle
                async with cap:
                    pass
            cap.throttled()
        assert cap.limit == 1  # never below one call
        full = AdaptiveCap(3)
        for _ in range(20):
            full.success()
        assert full.limit == 3  # never above the ceiling

    asyncio.run(run())


def test_no_more_calls_run_at_once_than_the_limit():
    async def run():
        cap = AdaptiveCap(4)
        cap.limit = 2
        peak = running = 0

        async def one():
            nonlocal peak, running
            async with cap:
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0.01)
                running -= 1

        await asyncio.gather(*(one() for _ in range(12)))
        return peak

    assert asyncio.run(run()) == 2


def _harness(url: str, ceiling: int) -> ModelHarness:
    spec = ModelSpec(alias="m", base_url=url, model="m", max_connections=ceiling,
                     max_retries=12, timeout_s=10)
    harness = ModelHarness(Registry({"m": spec}))
    harness.backoff_base, harness.backoff_cap = 0.01, 0.05
    return harness


def _calls(harness: ModelHarness, n: int) -> list:
    async def run():
        msgs = [{"role": "user", "content": "hi"}]
        return await asyncio.gather(*(harness.complete("m", msgs) for _ in range(n)))
    return asyncio.run(run())


def test_a_rate_limited_provider_brings_the_calls_in_flight_down_to_its_limit():
    with ScriptedServer(lambda body: "ok", limit=4, latency=0.02, retry_after=0.02) as server:
        harness = _harness(server.base_url, 32)
        done = _calls(harness, 120)
        throttled = server.throttled
    assert all(c.error is None for c in done)  # every call answered in the end
    cap = harness.stats.as_dict()["caps"]["m"]
    assert cap["throttles"] > 0 and cap["low"] <= 4 < cap["ceiling"] == 32
    # adapting keeps the 429s a small share of the requests, where a fixed cap of 32
    # against a limit of 4 is refused about 7 times in 8
    assert throttled < 120


def test_an_unlimited_provider_keeps_the_ceiling():
    with ScriptedServer(lambda body: "ok", latency=0.01) as server:
        harness = _harness(server.base_url, 8)
        done = _calls(harness, 40)
        peak = harness.stats.max_in_flight  # the server's count lags its replies a moment
    assert all(c.error is None for c in done)
    cap = harness.stats.as_dict()["caps"]["m"]
    assert cap == {"limit": 8, "low": 8, "high": 8, "ceiling": 8, "throttles": 0}
    assert peak == 8


def test_a_cancelled_call_never_keeps_a_place():
    async def run():
        cap = AdaptiveCap(1)
        cap._pause_until = __import__("time").monotonic() + 0.5
        waiting = asyncio.ensure_future(cap.__aenter__())
        await asyncio.sleep(0.05)
        waiting.cancel()  # cancelled during the pause
        await asyncio.gather(waiting, return_exceptions=True)
        cap._pause_until = 0.0
        async with cap:  # the one place is free
            queued = asyncio.ensure_future(cap.__aenter__())
            await asyncio.sleep(0.01)
            queued.cancel()  # cancelled while waiting for the place
            await asyncio.gather(queued, return_exceptions=True)
        assert cap.active == 0
        async with asyncio.timeout(1):
            async with cap:
                pass

    asyncio.run(run())


def test_after_a_storm_the_cap_holds_only_just_under_the_refused_limit():
    from coordbench.llm.concurrency import HOLD_WINDOWS

    cap = AdaptiveCap(64, start=11)
    cap.throttled()  # refused at 11: cut to 8
    assert cap.limit == 8
    windows = 0
    while cap.limit < 64 and windows < 1000:
        for _ in range(cap.limit):
            cap.success()
        windows += 1
    # +1 a window from 8 to 64, with one hold of HOLD_WINDOWS at 10 (just under 11)
    assert cap.limit == 64 and windows == (64 - 8) + HOLD_WINDOWS
