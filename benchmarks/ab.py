"""Side-by-side comparison of training variants in one process: the variants alternate, so
that load drift on a shared machine hits all of them alike, and medians are reported."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from coordbench.learn.core import one_thread
from coordbench.learn.methods import paper_config, train


def train_rate(algo: str, config: str, steps: int, utd: float = 8.0,
               extra: dict[str, Any] | None = None) -> tuple[float, float]:
    """Return (environment steps per second, final return) of one seed-0 training run."""
    tc = paper_config(config, algo, seed=0, total_steps=steps, utd=utd, extra=dict(extra or {}))
    t0 = time.perf_counter()
    result = train(tc)
    return steps / (time.perf_counter() - t0), result["final_return"]


def side_by_side(run: Callable[[str], tuple[float, float]], variants: Sequence[str],
                 reps: int) -> dict[str, Any]:
    """Return {"steps_per_s_<v>": median rate, "final_return_<v>": last return} per variant
    `v`, from `reps` rounds that each call `run(v)` once for every variant in turn."""
    rates: dict[str, list[float]] = {v: [] for v in variants}
    returns: dict[str, float] = {}
    for _ in range(reps):
        for v in variants:
            rate, returns[v] = run(v)
            rates[v].append(rate)
    return {**{f"steps_per_s_{v}": statistics.median(rates[v]) for v in variants},
            **{f"final_return_{v}": returns[v] for v in variants}}


def ab_args() -> argparse.Namespace:
    """Return the parsed --steps/--reps options, after setting one math thread as the
    trainers do."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000, help="environment steps per run")
    ap.add_argument("--reps", type=int, default=3, help="runs per variant, alternating")
    args = ap.parse_args()
    one_thread()
    return args


def compare(pairs: Sequence[tuple[str, str]], run: Callable[[str, str, str, int],
                                                             tuple[float, float]],
            variants: Sequence[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Return one row per (algo, config): its side_by_side figures for `variants`, where
    `run(algo, config, variant, steps)` trains once. A short warm-up run of every variant
    comes first, so that first-call costs do not land on one of them."""
    for v in variants:
        run("qmix", "3A-6T-5x3", v, 2_000)
    rows = []
    for algo, config in pairs:
        rows.append({"algo": algo, "config": config, **side_by_side(
            lambda v, a=algo, c=config: run(a, c, v, args.steps), variants, args.reps)})
        print(rows[-1], flush=True)
    return rows
