"""Per-episode metrics for the listing, from each family's `Suite.metrics`, computed off the
request path (a condition of a thousand episodes needs every file parsed)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.errors import CoordbenchError
from coordbench.metrics.profile import episode_profile as profile_of
from coordbench.runner.family import family, suite_object


def episode_metrics(traj: Trajectory) -> tuple[dict[str, float | None], str | None]:
    """Return (the episode's metrics by the family's Suite.metrics, None) or ({}, why not)."""
    suite = suite_object(traj.header.suite)
    if suite is None:
        return {}, f"no metrics for suite {traj.header.suite!r}"
    try:
        return dict(suite.metrics(traj)), None
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        return {}, f"{type(e).__name__}: {e}"


def episode_profile(traj: Trajectory) -> tuple[dict[str, float | None], str | None]:
    """Return (the episode's coordination profile, `metrics.profile`, None) or ({}, why not)."""
    f = family(traj.header.suite)
    if f is None or f.profile is None:
        return {}, f"no coordination profile for suite {traj.header.suite!r}"
    try:
        return profile_of(traj), None
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        return {}, f"{type(e).__name__}: {e}"


def headline(name: str) -> list[str]:
    """Return the metrics a family's listing leads with (its Suite.headline)."""
    f = family(name)
    return list(f.headline_metrics()) if f is not None else []


class MetricsCache:
    """Metrics of whole conditions, computed once each in one background thread; `get`
    returns what is done so far and never waits."""

    def __init__(self) -> None:
        # set while no page request is being answered: the computation (which holds the
        # GIL while it parses) waits for it before each file, so it never delays a click
        self.quiet = threading.Event()
        self.quiet.set()
        self._busy = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="viewer-metrics")
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        self._done: set[tuple[str, str]] = set()
        self._started: set[tuple[str, str]] = set()

    def get(self, run_name: str, run: RunDir, condition: str, keys: list[str]
            ) -> dict[str, Any]:
        """Return {"done", "metrics": {key: {...}}, "errors": {key: why}} for `condition`,
        starting its computation if it has not started."""
        ident = (run_name, condition)
        with self._lock:
            if ident not in self._started:
                self._started.add(ident)
                self._rows[ident] = {"metrics": {}, "errors": {}, "unreadable": {}}
                self._pool.submit(self._compute, ident, run, condition, keys)
            rows = self._rows[ident]
            return {"done": ident in self._done, "metrics": dict(rows["metrics"]),
                    "errors": dict(rows["errors"])}

    def _compute(self, ident: tuple[str, str], run: RunDir, condition: str,
                 keys: list[str]) -> None:
        rows = self._rows[ident]
        for key in keys:
            self.quiet.wait(timeout=5.0)
            try:
                m, why = episode_metrics(run.load_episode(condition, key))
            except CoordbenchError as e:
                m, why = {}, str(e)
                with self._lock:  # the file itself is bad: the listing says so too
                    rows["unreadable"][key] = why
            except Exception as e:  # noqa: BLE001 - one bad episode must not stop the rest
                m, why = {}, f"{type(e).__name__}: {e}"
            with self._lock:
                if why:
                    rows["errors"][key] = why
                else:
                    rows["metrics"][key] = m
        with self._lock:
            self._done.add(ident)

    def unreadable(self, run_name: str, condition: str) -> dict[str, str]:
        """Return {key: why} of the condition's episode files found unreadable so far."""
        with self._lock:
            rows = self._rows.get((run_name, condition))
            return dict(rows["unreadable"]) if rows is not None else {}

    def foreground(self) -> _Foreground:
        """Return a context manager marking a page request in progress (see `quiet`)."""
        return _Foreground(self)

    def _enter(self) -> None:
        with self._lock:
            self._busy += 1
            self.quiet.clear()

    def _exit(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                self.quiet.set()

    def close(self) -> None:
        """Stop the background thread (pending conditions are dropped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Foreground:
    def __init__(self, cache: MetricsCache) -> None:
        self.cache = cache

    def __enter__(self) -> None:
        self.cache._enter()

    def __exit__(self, *exc: object) -> None:
        self.cache._exit()
