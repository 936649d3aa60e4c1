"""Training sweeps over seeds: one result file (and one policy checkpoint) per
(method, config, seed), resumable, run in local worker processes or on Ray, summarized with
95% CIs over seeds.

Workers return their result and checkpoint to the driver, which writes them atomically as
each run finishes; so a Ray cluster's workers need no shared file system, and an interrupted
sweep loses only the runs in flight.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic, write_atomic_bytes
from coordbench.core.stats import Estimate, mean_ci
from coordbench.errors import ConfigError, RunDirError

from .core import TrainConfig, method_label
from .registry import checkpoint_bytes, make, train

EXECUTORS = ("local", "ray")


def parse_seeds(text: str) -> list[int]:
    """Return the seeds a range ("0-4") or a list ("0,2,5") names; ConfigError otherwise."""
    try:
        if "-" in text:
            a, b = text.split("-")
            return list(range(int(a), int(b) + 1))
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--seeds must look like 0-4 or 0,2,5; got {text!r}") from None


def result_path(out: Path, tc: TrainConfig) -> Path:
    """Return the result file of one (algo, config, seed) run."""
    return Path(out) / f"{method_label(tc.algo, tc.extra)}_{tc.config}_seed{tc.seed}.json"


def checkpoint_path(out: Path, tc: TrainConfig) -> Path:
    """Return the final-policy checkpoint file of one run."""
    return result_path(out, tc).with_suffix(".pt")


def train_one(fields: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Train one seed (in a worker); return (result, checkpoint bytes)."""
    tc = TrainConfig(**fields)
    method = make(tc)
    res = train(tc, method)
    return res, checkpoint_bytes(tc, method)


def _local(todo: list[dict[str, Any]], workers: int) -> Iterator[tuple[dict[str, Any], bytes]]:
    if workers > 1 and len(todo) > 1:
        with mp.get_context("spawn").Pool(min(workers, len(todo))) as pool:
            yield from pool.imap_unordered(train_one, todo)
    else:
        for fields in todo:
            yield train_one(fields)


def _ray(todo: list[dict[str, Any]], workers: int) -> Iterator[tuple[dict[str, Any], bytes]]:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'coordbench[ray]'") from None
    address = os.environ.get("RAY_ADDRESS")
    started = not ray.is_initialized()
    if started:
        # a cluster brings its own CPUs; a local instance gets one per worker
        ray.init(address=address, num_cpus=None if address else workers,
                 include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1)(train_one)
        pending = [remote.remote(f) for f in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()


def sweep(configs: list[TrainConfig], out: Path, workers: int = 2,
          executor: str = "local") -> list[dict[str, Any]]:
    """Train every config not yet on disk; return all results (in `configs` order)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; choose from {', '.join(EXECUTORS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = [asdict(tc) for tc in configs if not result_path(out, tc).is_file()]
    if todo:
        runs = _ray(todo, workers) if executor == "ray" else _local(todo, workers)
        for res, ckpt in runs:
            tc = TrainConfig(**res["config"])
            # checkpoint first: the result file marks the run finished
            write_atomic_bytes(checkpoint_path(out, tc), ckpt)
            write_atomic(result_path(out, tc), json.dumps(res, indent=1) + "\n")
    return [read_result(result_path(out, tc)) for tc in configs]


def read_result(path: Path) -> dict[str, Any]:
    """Return one run's result, or raise RunDirError if the file is damaged."""
    try:
        res = json.loads(Path(path).read_text())
        if not isinstance(res, dict) or "final_return" not in res:
            raise ValueError
        return res
    except (OSError, ValueError):
        raise RunDirError(f"training result {path} is corrupt; delete it to retrain that "
                          f"seed") from None


def summarize(results: list[dict[str, Any]]) -> dict[str, Estimate]:
    """Return {final_return, max_return, and every final diagnostic: mean with 95% CI over
    seeds}."""
    out = {"final_return": mean_ci([r["final_return"] for r in results]),
           "max_return": mean_ci([r["max_return"] for r in results]),
           "max_return_step": mean_ci([r["max_return_step"] for r in results]),
           "steps_per_s": mean_ci([r["steps_per_s"] for r in results])}
    for key in results[0]["final"]:
        if key not in ("step", "return"):
            out[key] = mean_ci([r["final"][key] for r in results])
    return out
