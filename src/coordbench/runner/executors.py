"""Where work units run: in this process, in a local process pool, or on Ray.

Every executor maps a picklable function over work items and yields the results as they
finish, keeping at most a few items per worker in flight; the items are pulled lazily, so the
driver can stop dispatching (a cost limit) by ending its generator. Workers return results to
the driver, which alone writes the run directory: a Ray cluster's workers need no shared file
system, and an interrupted run loses only the units in flight.

Ray: with `RAY_ADDRESS` set, the executor joins that cluster (it brings its own CPUs, and
coordbench must be installed on its nodes); otherwise it starts a local instance bound to
127.0.0.1 with no dashboard, sized to `workers`, and shuts it down afterwards.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from coordbench.errors import ConfigError, CoordbenchError

EXECUTORS = ("local", "process", "ray")
LOOPBACK = "127.0.0.1"


def check_executor(name: str, workers: int) -> None:
    """Raise ConfigError unless `name` is an executor and `workers` is positive."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}; choose from {', '.join(EXECUTORS)}")
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")


class Executor:
    """Runs `fn(item)` for every item; `local` runs them here, one after another."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Yield fn(item) for each item, as each finishes."""
        for item in items:
            yield fn(item)


class ProcessExecutor(Executor):
    """A pool of `workers` spawned processes on this machine."""

    name = "process"

    def __enter__(self) -> ProcessExecutor:
        # spawn, not fork: numba, torch and MuJoCo hold threads a fork would copy half-made
        self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"))
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Yield fn(item) for each item as it finishes, at most 2 per worker in flight."""
        source = iter(items)
        pending: set[Future] = set()

        def top_up() -> None:
            while len(pending) < 2 * self.workers:
                item = next(source, _END)
                if item is _END:
                    return
                pending.add(self._pool.submit(fn, item))

        top_up()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                pending.discard(fut)
                yield fut.result()
            top_up()


class RayExecutor(Executor):
    """Ray tasks of one CPU each: an existing cluster (RAY_ADDRESS) or a local instance."""

    name = "ray"

    def __enter__(self) -> RayExecutor:
        self._ray = _import_ray()
        self._started = not self._ray.is_initialized()
        if self._started:
            init_ray(self._ray, self.workers)
        self._remote: dict[Callable, Any] = {}
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._ray.shutdown()

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Yield fn(item) for each item as its Ray task finishes.

        A task lost with its node or worker process is run again on a live node, up to
        LOST_RETRIES times (Ray's own retry of system failures: a worker that dies of the
        unit itself, a crash or an out-of-memory kill, is retried too; an exception the
        function raises is not). Its results come back only when it ends, so a unit that is
        run twice is counted once. A unit lost for good (or failed in Ray itself), or a
        cluster left without a CPU for NO_CPU_WAIT_S, stops the map with one WorkersLost
        line once the units under way have come back; no new unit starts after it.
        """
        ray = self._ray
        remote = self._remote.setdefault(
            fn, ray.remote(num_cpus=1, max_retries=LOST_RETRIES)(fn))
        source = iter(items)
        pending: list = []
        slots = 2 * max(self.workers, int(ray.cluster_resources().get("CPU", 1)))
        lost: list[str] = []
        no_cpu_since: float | None = None

        def top_up() -> None:
            while len(pending) < slots and not lost:
                item = next(source, _END)
                if item is _END:
                    return
                pending.append(remote.remote(item))

        top_up()
        while pending:
            done, rest = ray.wait(pending, num_returns=1, timeout=WAIT_S)
            if not done:  # nothing finished: is there still a node to run on?
                if ray.cluster_resources().get("CPU", 0) >= 1:  # live nodes only
                    no_cpu_since = None
                elif no_cpu_since is None:
                    no_cpu_since = time.monotonic()
                elif time.monotonic() - no_cpu_since > NO_CPU_WAIT_S:
                    for ref in pending:
                        ray.cancel(ref, force=True)
                    raise WorkersLost(f"the Ray cluster has had no CPU for {NO_CPU_WAIT_S:g} "
                                      f"s with {len(pending)} units under way; what came "
                                      f"back is saved: rerun the same command to play the "
                                      f"rest")
                continue
            pending[:] = rest
            try:
                result = ray.get(done[0])
            except ray.exceptions.RayTaskError:
                raise  # the function's own exception: a bug or bad input, not a lost node
            except ray.exceptions.RayError as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                lost.append(f"{type(e).__name__}: {first[:160]}")
                continue
            yield result
            top_up()
        if lost:
            raise WorkersLost(f"{len(lost)} work unit(s) were lost with their Ray node or "
                              f"worker, or failed in Ray, after {LOST_RETRIES} retries "
                              f"(last: {lost[-1]}); what came back is saved: rerun the same "
                              f"command to play the rest")


_END = object()
LOST_RETRIES = 3  # runs of a task lost with its node or worker, beyond the first
WAIT_S = 5.0  # how often the driver looks whether the cluster still has a CPU
NO_CPU_WAIT_S = 60.0  # a cluster without a CPU this long will not run the rest


class WorkersLost(CoordbenchError):
    """Work units lost with the Ray nodes or workers that ran them (after Ray's retries)."""


def _import_ray():
    if not os.environ.get("RAY_ADDRESS"):
        # Ray replaces a loopback node address by a remotely reachable one, and then listens
        # on every interface, unless "clusters" are off (its setting for single machines)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'coordbench[ray]'") from None
    return ray


def init_ray(ray: Any, workers: int) -> None:
    """Join the cluster at RAY_ADDRESS, or start a local instance on 127.0.0.1 only.

    Passing address="local" when RAY_ADDRESS is unset keeps Ray from joining (and then
    refusing `num_cpus` for) a cluster that happens to be registered on this machine.
    """
    address = os.environ.get("RAY_ADDRESS")
    quiet = {"log_to_driver": False, "configure_logging": False, "include_dashboard": False}
    if address and address != "local":
        _probe(address)
        try:
            ray.init(address=address, **quiet)
        except Exception as e:  # Ray raises ConnectionError, RuntimeError or its own types
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ConfigError(f"cannot reach the Ray cluster at RAY_ADDRESS={address}: "
                              f"{first[:200]}") from None
        return
    from ray._private import ray_constants

    # the same setting, for a process that imported Ray before the environment was set
    ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(address="local", num_cpus=workers, _node_ip_address=LOOPBACK,
             dashboard_host=LOOPBACK, **quiet)
    node_ip = ray.util.get_node_ip_address()
    if node_ip != LOOPBACK:
        ray.shutdown()
        raise ConfigError(f"the local Ray instance would listen on {node_ip}, not only on "
                          f"{LOOPBACK}; refusing to run it")


def _probe(address: str) -> None:
    """Raise ConfigError at once if a host:port cluster address accepts no connection (Ray
    itself waits about 40 s before it gives up)."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or address == "auto":
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ConfigError(f"cannot reach the Ray cluster at RAY_ADDRESS={address}: "
                          f"{e.strerror or e}") from None


def make_executor(name: str, workers: int) -> Executor:
    """Return the executor called `name` with `workers` workers (use it as a context)."""
    check_executor(name, workers)
    kind = {"local": Executor, "process": ProcessExecutor, "ray": RayExecutor}[name]
    return kind(workers)
