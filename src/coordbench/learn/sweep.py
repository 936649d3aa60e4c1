"""Training sweeps over seeds: parallel worker processes, one result file per
(method, config, seed), resumable, summarized with 95% CIs over seeds."""

from __future__ import annotations

import json
import multiprocessing as mp
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import Estimate, mean_ci

from .core import TrainConfig, train
from .registry import make


def result_path(out: Path, tc: TrainConfig) -> Path:
    """Return the result file of one (algo, config, seed) run."""
    return Path(out) / f"{tc.algo}_{tc.config}_seed{tc.seed}.json"


def run_one(args: tuple[dict[str, Any], str]) -> str:
    """Train one seed (in a worker process) and write its result atomically; return the path."""
    fields, out = args
    tc = TrainConfig(**fields)
    res = train(tc, make(tc))
    path = result_path(Path(out), tc)
    write_atomic(path, json.dumps(res, indent=1) + "\n")
    return str(path)


def sweep(configs: list[TrainConfig], out: Path, workers: int = 2) -> list[dict[str, Any]]:
    """Train every config not yet on disk (in `workers` processes); return all results."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = [(asdict(tc), str(out)) for tc in configs if not result_path(out, tc).is_file()]
    if todo:
        if workers > 1 and len(todo) > 1:
            with mp.get_context("spawn").Pool(min(workers, len(todo))) as pool:
                pool.map(run_one, todo)
        else:
            for item in todo:
                run_one(item)
    return [json.loads(result_path(out, tc).read_text()) for tc in configs]


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
