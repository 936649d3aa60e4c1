"""Training sweeps over seeds: one result file (and one policy checkpoint) per
(method, config, seed), resumable, run on the runner's executors (here, worker processes, or
Ray), summarized with 95% CIs over seeds.

Workers return their result and checkpoint to the driver, which writes them atomically as
each run finishes; so a Ray cluster's workers need no shared file system, and an interrupted
sweep loses only the runs in flight.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic, write_atomic_bytes
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.errors import ConfigError, RunDirError
from coordbench.runner.executors import check_executor, make_executor

from .core import TrainConfig, method_label
from .registry import checkpoint_bytes, make, train

MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1
MAX_NUM_ENVS = 4096  # environments stepped together by one learner
MAX_TRAIN_STEPS = 10**9


def parse_seeds(text: str) -> list[int]:
    """Return the seeds a range ("0-4") or a list ("0,2,5") names; ConfigError unless they
    are 1 to MAX_SEEDS distinct seeds in 0..MAX_SEED, a range ascending."""
    form = f"--seeds must look like 0-4 or 0,2,5 (seeds 0..{MAX_SEED}); got {text!r}"
    try:
        bounds = [int(x) for x in text.split("-")] if "-" in text else None
        listed = None if bounds else [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(form) from None
    if bounds is not None:
        if len(bounds) != 2:
            raise ConfigError(form)
        a, b = bounds
        if b < a:
            raise ConfigError(f"--seeds range {text!r} is empty: write it low-high")
        if b - a + 1 > MAX_SEEDS:
            raise ConfigError(f"--seeds names {b - a + 1} seeds; at most {MAX_SEEDS}")
        seeds = list(range(a, b + 1))
    else:
        seeds = listed or []
    if not seeds or any(not 0 <= s <= MAX_SEED for s in seeds):
        raise ConfigError(form)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds lists a seed twice: {text!r}")
    if len(seeds) > MAX_SEEDS:
        raise ConfigError(f"--seeds names {len(seeds)} seeds; at most {MAX_SEEDS}")
    return seeds


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


def train_condition(algo_label: str, config: str) -> str:
    """Return the manifest name of a training sweep's (method, configuration) pair."""
    return f"train_{algo_label}_{config}"


def register_training(run: RunDir, algo_label: str, config: str) -> None:
    """Record a training sweep's (method, configuration) in the run's manifest."""
    run.register(train_condition(algo_label, config),
                 {"suite": "stat_train", "algo": algo_label, "config": config})


def sweep(configs: list[TrainConfig], out: Path, workers: int = 2,
          executor: str = "process", command: str = "") -> list[dict[str, Any]]:
    """Train every config not yet on disk (one seed per worker); return all results (in
    `configs` order). `out` is a run directory: its manifest records each (method,
    configuration) as a condition of suite stat_train, beside the result files."""
    check_executor(executor, workers)
    out = Path(out)
    run = RunDir.create_or_open(out, command=command, adopt=True)
    for tc in configs:
        register_training(run, method_label(tc.algo, tc.extra), tc.config)
    todo = [asdict(tc) for tc in configs if not result_path(out, tc).is_file()]
    if todo:
        with make_executor(executor, min(workers, len(todo))) as ex:
            for res, ckpt in ex.map(train_one, todo):
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
