"""Adaptive concurrency per model endpoint: slow start, then additive increase and
multiplicative decrease that remembers where the provider refused.

A model's `max_connections` is a ceiling, not a target: a rate-limited provider answers a
burst at the ceiling with 429s (or 503s), each a retry that costs time. `AdaptiveCap` lets at
most `limit` calls run at once and moves `limit` between 1 and the ceiling, one window (as
many answered calls in a row as the limit) at a time, as TCP congestion control does:
- it starts at the ceiling (what the user says the provider takes); started lower, it
  doubles each window until the first throttle (slow start);
- then +1 each window, except just under the limit at which the provider last refused:
  there it holds HOLD_WINDOWS windows before it probes one call higher;
- a throttle cuts the limit at most once per window: by one call when a probe after calm
  windows is refused (the provider's limit has been found again), to three quarters
  otherwise (a new or falling limit).
A throttled call waits at least its Retry-After before it tries again (the harness); once the
limit is down to one call, no call starts before that pause has passed.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

HOLD_WINDOWS = 8  # calm windows just under the last refused limit before a probe above it


class AdaptiveCap:
    """At most `limit` calls at once (see the module docstring); an async context manager.
    A call cancelled while it waits, or while it holds its place, never keeps a place."""

    def __init__(self, ceiling: int, start: int | None = None) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = max(1, min(self.ceiling, start if start is not None else self.ceiling))
        self.low = self.high = self.limit  # the range it moved in
        self.active = 0
        self.throttles = 0
        self._refused_at: int | None = None  # the limit at which the last cut happened
        self._held = 0  # calm windows held just under it
        self._calm = False  # a whole window answered since the last cut
        self._streak = 0
        self._since_cut = 0  # calls that started after the last decrease
        self._cuts = 0
        self._pause_until = 0.0
        self._waiters: deque[asyncio.Future] = deque()

    async def __aenter__(self) -> AdaptiveCap:
        while True:
            wait = self._pause_until - time.monotonic()
            if wait > 0:  # the provider asked for a pause: no place is held through it
                await asyncio.sleep(wait)
                continue
            if self.active < self.limit:
                self.active += 1
                self._since_cut += 1
                return self
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: the wake goes to the next one
                raise

    async def __aexit__(self, *exc: object) -> None:
        self.active -= 1  # first, and without awaiting: a cancel here cannot lose the place
        self._wake()

    def _wake(self) -> None:
        """Wake as many waiting calls as there are free places."""
        free = self.limit - self.active
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def success(self) -> None:
        """Count a call answered without a throttle; after a full window, grow the limit
        (see the module docstring)."""
        self._streak += 1
        if self._streak < self.limit:
            return
        self._streak, self._calm = 0, True
        if self.limit >= self.ceiling:
            return
        if self._refused_at is None:  # slow start
            self.limit = min(self.ceiling, self.limit * 2)
        elif self.limit + 1 != self._refused_at or self._held >= HOLD_WINDOWS:
            self.limit += 1
            self._held = 0
        else:  # just under where the provider refused: hold before probing above it
            self._held += 1
            return
        self.high = max(self.high, self.limit)
        self._wake()

    def throttled(self, retry_after: float | None = None) -> None:
        """Count a throttle (429/503): cut the limit, at most once per window of calls (by
        one when a probe after calm windows is refused, else to three quarters); at a limit
        of one, pause new calls for `retry_after` seconds where the provider gave one."""
        self.throttles += 1
        self._streak = 0
        if retry_after is not None and retry_after > 0 and self.limit == 1:
            # at one call the limit cannot fall further: the provider's pause is kept
            self._pause_until = max(self._pause_until, time.monotonic() + min(retry_after, 60))
        if self._cuts == 0 or self._since_cut >= self.limit:
            # a probe: calm windows at or above the limit last refused
            probe = (self._calm and self._refused_at is not None
                     and self.limit >= self._refused_at)
            self._refused_at = self.limit
            self.limit = max(1, self.limit - 1 if probe else self.limit * 3 // 4)
            self.low = min(self.low, self.limit)
            self._since_cut, self._held, self._calm = 0, 0, False
            self._cuts += 1
