"""Analyses of STAT training results (after the paper's Section 5.4, Table 14, Figs. 4, 10).

The input is per-seed final metrics: `samples[(method, config)]` is one metrics dict per
training seed (the final greedy evaluation of that seed's run, or a scripted allocator
evaluated on that seed's layouts). Everything returned is plain JSON-serialisable dicts.

A controlled scaling comparison changes one axis between two configurations (the paper's
matched pairs, `SCALING_PAIRS`); per method and metric its effect is the change of the
seed mean from the first configuration to the second, mean(second) - mean(first), with
Welch's 95% interval and two-sided p (`common.mean_diff`), and the paper's cell form:
an arrow for the direction and "*" (p < 0.05) or "ns".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .common import Json, mean_diff

Samples = Mapping[tuple[str, str], Sequence[Mapping[str, float]]]


@dataclass(frozen=True)
class ScalingPair:
    """One matched pair of configurations that changes a single axis."""

    id: str
    label: str  # the paper's row name in Table 14
    axis: str  # "environment size" | "number of tasks" | "number of agents"
    first: str
    second: str


SCALING_PAIRS = (
    ScalingPair("env_baseline", "Env Size Baseline", "environment size", "3A-6T-5x3",
                "3A-6T-10x6"),
    ScalingPair("env_extreme", "Env Size Extreme", "environment size", "5A-25T-25x15",
                "5A-25T-50x30"),
    ScalingPair("tasks_baseline", "Tasks Baseline", "number of tasks", "3A-6T-10x6",
                "3A-12T-10x6"),
    ScalingPair("tasks_extreme_1", "Tasks Extreme 1", "number of tasks", "5A-25T-50x30",
                "5A-50T-50x30"),
    ScalingPair("tasks_extreme_2", "Tasks Extreme 2", "number of tasks", "5A-50T-50x30",
                "5A-100T-50x30"),
    ScalingPair("agents_baseline", "Agents Baseline", "number of agents", "3A-12T-10x6",
                "5A-12T-10x6"),
    ScalingPair("agents_extreme", "Agents Extreme", "number of agents", "5A-25T-50x30",
                "9A-25T-50x30"),
)
AXES = ("environment size", "number of tasks", "number of agents")

# Table 14's metrics (abbreviation -> metric key) and Figure 10's mechanism diagnostics
TABLE14_METRICS = {"R": "return", "Th": "throughput", "CR": "conflict_rate",
                   "TC": "conflicts", "CPT": "conflicts_per_task",
                   "PAD": "diversity_per_decision_agent"}
FIGURE4_METRICS = {"return": "return", "throughput": "throughput",
                   "conflict rate": "conflict_rate", "conflicts per task": "conflicts_per_task",
                   "per-agent assignment diversity": "diversity_per_decision_agent"}
FIGURE10_METRICS = {"decision-active agent fraction": "decision_active_frac",
                    "forced idle rate": "forced_idle_rate",
                    "conflicts per decision opportunity": "conflicts_per_decision",
                    "assignment diversity per decision-active agent":
                        "diversity_per_decision_agent_post"}
ALPHA = 0.05


def pair(pair_id: str) -> ScalingPair:
    """Return the scaling pair named `pair_id` (KeyError naming the known ones)."""
    for p in SCALING_PAIRS:
        if p.id == pair_id:
            return p
    raise KeyError(f"unknown scaling pair {pair_id!r}; known: "
                   f"{', '.join(p.id for p in SCALING_PAIRS)}")


def change(samples: Samples, method: str, p: ScalingPair, metric: str) -> Json | None:
    """Return the change of `metric` from p.first to p.second for `method`: the Welch
    difference dict (`common.mean_diff`: delta, lo, hi, p, n = seeds on the second, n_ref =
    seeds on the first) plus "cell" (the paper's form), or None when either configuration
    has no seeds of the method."""
    a, b = samples.get((method, p.first)), samples.get((method, p.second))
    if not a or not b:
        return None
    xs = [float(s[metric]) for s in b if metric in s]
    ys = [float(s[metric]) for s in a if metric in s]
    if not xs or not ys:
        return None
    d = mean_diff(xs, ys)
    d["cell"] = cell(d)
    return d


def cell(d: Json | None) -> str:
    """Return a change in Table 14's form: "↑*" / "↓ns" ("=" when no change, "?" in place of
    the mark when a group has fewer than 2 seeds, "–" when there is no comparison)."""
    if not d or d.get("delta") is None:
        return "–"
    arrow = "↑" if d["delta"] > 0 else "↓" if d["delta"] < 0 else "="
    if d.get("p") is None:
        return arrow + "?"
    return arrow + ("*" if d["p"] < ALPHA else "ns")


def scaling(samples: Samples, methods: Sequence[str],
            metrics: Mapping[str, str] = TABLE14_METRICS) -> dict[str, Any]:
    """Return every controlled scaling comparison for `methods`:
    {"rows": {pair id: {method: {metric name: change or None}}}, "missing": {pair id: [the
    configurations no method has, so the runs to add]}, "pairs": [pair ids in order]}."""
    present = {c for (_, c), v in samples.items() if v}
    rows: dict[str, dict[str, dict[str, Json | None]]] = {}
    missing: dict[str, list[str]] = {}
    for p in SCALING_PAIRS:
        lack = [c for c in (p.first, p.second) if c not in present]
        if lack:
            missing[p.id] = lack
        rows[p.id] = {m: {name: change(samples, m, p, key) for name, key in metrics.items()}
                      for m in methods}
    return {"rows": rows, "missing": missing, "pairs": [p.id for p in SCALING_PAIRS]}


def claim(changes: Sequence[Json | None], sign: int, quantifier: str = "all") -> bool | None:
    """Return whether a claimed direction (`sign` +1 up, -1 down) holds over methods'
    changes: "all" holds when every available change is significant (p < ALPHA) that way and
    fails when any change's estimate points the other way or is 0; "any" holds when at least
    one change is significant that way and fails when no estimate points that way. Otherwise
    (or with no change available) None: the runs cannot tell."""
    ds = [d for d in changes if d and d.get("delta") is not None]
    if not ds:
        return None
    agree = [sign * d["delta"] > 0 for d in ds]
    sig = [a and d.get("p") is not None and d["p"] < ALPHA for a, d in zip(agree, ds,
                                                                          strict=True)]
    if quantifier == "all":
        if not all(agree):
            return False
        return True if all(sig) else None
    if not any(agree):
        return False
    return True if any(sig) else None

