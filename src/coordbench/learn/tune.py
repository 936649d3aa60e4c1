"""The paper's hyperparameter protocol (its Appendix D): a grid over learning rate and
epsilon-decay fraction, each point trained over seeds, selected by mean evaluation return over
the final 20% of evaluation checkpoints (averaged over seeds); near-ties broken by the mean
return over the whole training curve.

The paper says "when multiple configurations produce similar final return"; coordbench reads
"similar" as Welch's test over seeds not telling a point's final-20% returns from the best
point's (p >= 0.05), and says so in the record it writes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import mean_ci, welch_test
from coordbench.errors import ConfigError

from .core import TrainConfig
from .sweep import sweep

PAPER_LRS = (3e-4, 1e-3)
PAPER_EPS_FRACS = (0.2, 0.4)
FINAL_SHARE = 0.2
RULE = ("mean evaluation return over the final 20% of evaluation checkpoints, averaged over "
        "seeds (paper Appendix D); points whose final-20% returns Welch's test over seeds "
        "cannot tell from the best (p >= 0.05) are ties, broken by the mean return over the "
        "whole curve")
# methods that explore by sampling their own policy: no epsilon to tune
NO_EPSILON = ("mappo", "ippo")


def final_share_return(result: dict[str, Any], share: float = FINAL_SHARE) -> float:
    """Return the mean evaluation return over the last `share` of a run's checkpoints (at
    least one checkpoint)."""
    curve = [c["return"] for c in result["curve"]]
    k = max(1, math.ceil(share * len(curve)))
    return float(np.mean(curve[-k:]))


def curve_return(result: dict[str, Any]) -> float:
    """Return the mean evaluation return over every checkpoint of a run."""
    return float(np.mean([c["return"] for c in result["curve"]]))


def point_dir(out: Path, lr: float, eps_frac: float) -> Path:
    """Return the directory one grid point trains into."""
    return Path(out) / f"lr{lr:g}_eps{eps_frac:g}"


def select(points: Sequence[dict[str, Any]]) -> int:
    """Return the index of the chosen point; each point has "final" and "curve" (per-seed
    lists): the highest mean final-20% return, near-ties (Welch p >= 0.05 against it) broken
    by the highest mean curve return."""
    best = max(range(len(points)), key=lambda i: np.mean(points[i]["final"]))
    ties = [best]
    for i, p in enumerate(points):
        if i == best:
            continue
        a, b = p["final"], points[best]["final"]
        if len(a) >= 2 and len(b) >= 2 and welch_test(a, b).p >= 0.05:
            ties.append(i)
    return max(ties, key=lambda i: (np.mean(points[i]["curve"]), -i))


def tune(base: list[TrainConfig], out: Path, lrs: Sequence[float] = PAPER_LRS,
         eps_fracs: Sequence[float] = PAPER_EPS_FRACS, workers: int = 2,
         executor: str = "process", say: Callable[[str], None] | None = None
         ) -> dict[str, Any]:
    """Train every grid point (lr x eps_frac) over the seeds of `base` (one TrainConfig per
    seed, all of one config and method), each into its own resumable directory under `out`;
    select by `RULE`; write OUT/tune.json and return its record: {"config", "algo",
    "rule", "grid": [{"lr", "eps_frac", "dir", "final_20pct", "curve_mean", "seeds"}],
    "chosen": {"lr", "eps_frac"}}."""
    if not base:
        raise ConfigError("nothing to tune: no seeds")
    if any(not x > 0 for x in lrs) or any(not 0 < x <= 1 for x in eps_fracs):
        raise ConfigError("--lrs must be positive and --eps-fracs in (0, 1]")
    algo, config = base[0].algo, base[0].config
    if algo in NO_EPSILON:
        eps_fracs = (base[0].eps_frac,)
    points = []
    for lr in lrs:
        for frac in eps_fracs:
            tcs = [replace(tc, lr=float(lr), eps_frac=float(frac)) for tc in base]
            where = point_dir(out, lr, frac)
            if say:
                say(f"grid point lr {lr:g}, epsilon-decay fraction {frac:g} -> {where}")
            results = sweep(tcs, where, workers, executor, command="coordbench stat tune",
                            say=say)
            points.append({"lr": float(lr), "eps_frac": float(frac), "dir": str(where),
                           "seeds": [r["config"]["seed"] for r in results],
                           "final": [final_share_return(r) for r in results],
                           "curve": [curve_return(r) for r in results]})
    chosen = select(points)
    record = {"config": config, "algo": algo, "rule": RULE,
              "grid": [{"lr": p["lr"], "eps_frac": p["eps_frac"], "dir": p["dir"],
                        "seeds": p["seeds"], "final_20pct": _est(p["final"]),
                        "curve_mean": _est(p["curve"]), "chosen": i == chosen}
                       for i, p in enumerate(points)],
              "chosen": {"lr": points[chosen]["lr"], "eps_frac": points[chosen]["eps_frac"]}}
    write_atomic(Path(out) / "tune.json", json.dumps(record, indent=1) + "\n")
    return record


def _est(values: list[float]) -> dict[str, Any]:
    e = mean_ci(values)
    return {"mean": e.mean, "ci95": e.ci95, "n": e.n, "lo": e.lo, "hi": e.hi}
