"""The report's plots, recomputed from a run: per-condition bars with their intervals for every
family, household step-completion curves, construct scores per construct, physical phase
funnels and STAT learning curves.

Each function returns a list of `Figure` (a caption and a matplotlib figure); `html.py` turns
them into inline SVG. Intervals are the ones the tables print (`results.json`'s lo/hi), so a
bar and its table cell always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.core.rundir import RunDir
from coordbench.core.stats import estimate

ENTRY = dict[str, Any]  # one condition's results.json entry


@dataclass
class Figure:
    """A plot of the report: its caption and the matplotlib figure that draws it."""

    caption: str
    figure: Any


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label_of(spec: dict[str, Any]) -> str:
    """Return a short condition label from its spec (the fields that tell conditions apart)."""
    skip = {"suite", "seed", "source", "layouts", "episode_limit", "images", "order", "limit"}
    parts = [str(v) for k, v in spec.items()
             if k not in skip and v not in (None, "", False) and not isinstance(v, dict | list)]
    return " ".join(parts) or "condition"


def labels_for(entries: dict[str, ENTRY]) -> dict[str, str]:
    """Return a label per condition that tells it from the others shown beside it: the
    usual fields (`label_of`) plus every spec field whose value differs among them; the
    condition's name where two would still read the same."""
    specs = {c: e.get("spec", {}) for c, e in entries.items()}
    keys = [k for k in dict.fromkeys(k for s in specs.values() for k in s) if k != "suite"]
    differ = [k for k in keys if len({json_key(s.get(k)) for s in specs.values()}) > 1]
    labels = {}
    for c, s in specs.items():
        base = label_of(s)
        extra = [f"{k}={s.get(k)}" for k in differ
                 if str(s.get(k)) not in base.split() and s.get(k) not in (None, "")]
        labels[c] = " ".join([base, *extra])
    seen: dict[str, int] = {}
    for text in labels.values():
        seen[text] = seen.get(text, 0) + 1
    return {c: (t if seen[t] == 1 else c) for c, t in labels.items()}


def json_key(value: Any) -> str:
    """Return a value as comparable text (specs hold lists and dicts too)."""
    import json

    return json.dumps(value, sort_keys=True, default=str)


def _ends(m: dict[str, Any]) -> tuple[float, float, float] | None:
    if m.get("mean") is None:
        return None
    mean = float(m["mean"])
    lo, hi = m.get("lo"), m.get("hi")
    if lo is None or hi is None:
        half = m.get("ci95") or 0.0
        lo, hi = mean - half, mean + half
    return mean, float(lo), float(hi)


def _short(label: str, most: int = 44) -> str:
    """Return `label`, its middle elided where it is longer than `most` characters (a long
    condition name left no room for the panels)."""
    if len(label) <= most:
        return label
    keep = (most - 1) // 2
    return f"{label[:keep]}…{label[-keep:]}"


def metric_bars(entries: dict[str, ENTRY], metrics: tuple[str, ...], title: str,
                labels: dict[str, str] | None = None) -> Figure | None:
    """Return one horizontal bar panel per metric: each condition's mean with its 95%
    interval as an error bar (None if no condition has any of `metrics`)."""
    metrics = tuple(k for k in metrics
                    if any(_ends(e["metrics"].get(k, {})) for e in entries.values()))
    if not metrics:
        return None
    plt = _plt()
    conds = list(entries)
    auto = labels_for(entries)
    names = [_short((labels or {}).get(c) or auto[c]) for c in conds]
    # at most three panels a row, with type of a size that stays readable once the page
    # scales the figure to its column (one row of four or more shrank ticks to ~6 px)
    cols = min(3, len(metrics))
    nrows = -(-len(metrics) // cols)
    height = 0.9 + 0.36 * len(conds)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols + 2.4, height * nrows),
                             squeeze=False, sharey=True)
    y = np.arange(len(conds))
    for ax in axes.flat[len(metrics):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, metrics, strict=False):
        vals = [_ends(entries[c]["metrics"].get(key, {})) for c in conds]
        mean = np.array([v[0] if v else np.nan for v in vals])
        err = np.array([[v[0] - v[1] if v else 0.0 for v in vals],
                        [v[2] - v[0] if v else 0.0 for v in vals]])
        ax.barh(y, np.nan_to_num(mean), xerr=err, color="#4c78a8", ecolor="#333", capsize=3)
        for i, v in enumerate(vals):
            if v is None:
                ax.text(0, i, " n/a", va="center", fontsize=9, color="#888")
        ends = [b for v in vals if v for b in v]
        if ends and min(ends) >= 0:
            # a metric that is zero everywhere drew an axis from -0.04 to 0.04
            ax.set_xlim(0, max(ends) * 1.05 if max(ends) > 0 else 1)
        ax.set_title(key, fontsize=10.5)
        ax.tick_params(labelsize=9)
        ax.grid(axis="x", alpha=0.3)
    for row in axes:
        row[0].set_yticks(y, names)
    axes[0][0].invert_yaxis()
    fig.tight_layout()
    return Figure(title, fig)


def _curve(values: list[np.ndarray], length: int, bounds: tuple[float, float]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return mean, lo, hi per step over episodes; an episode that ended keeps its last
    value (its completion does not change after it stops)."""
    rows = np.array([np.pad(v, (0, length - len(v)), mode="edge") if len(v) else
                     np.zeros(length) for v in values])
    ests = [estimate(rows[:, j], "unit" if bounds == (0.0, 1.0) else "mean")
            for j in range(length)]
    mean = np.array([e.mean for e in ests])
    lo = np.array([e.lo if e.lo is not None else e.mean for e in ests])
    hi = np.array([e.hi if e.hi is not None else e.mean for e in ests])
    return mean, np.clip(lo, *bounds), np.clip(hi, *bounds)


def household_curves(run: RunDir, conds: list[str]) -> Figure | None:
    """Return the step-completion curves (CR after each team step, mean and 95% band clipped
    to [0, 1]) of the household conditions, one panel per task structure."""
    from coordbench.core.trajectory import HouseholdStepEvent

    series: dict[str, list[tuple[str, list[np.ndarray]]]] = {}
    for cond in conds:
        trajs = run.load_episodes(cond)
        if not trajs:
            continue
        spec = run.conditions[cond]
        vals = [np.array([e.completion for e in t.steps(HouseholdStepEvent)]) for t in trajs]
        series.setdefault(str(spec.get("structure", "")), []).append((label_of(spec), vals))
    if not series:
        return None
    plt = _plt()
    # many conditions: a taller figure, so that the legend fits beside the curves
    most = max(len(rows) for rows in series.values())
    fig, axes = plt.subplots(1, len(series), squeeze=False,
                             figsize=(6 * len(series), 3.6 + 0.16 * max(0, most - 12)))
    for ax, (structure, rows) in zip(axes[0], sorted(series.items()), strict=True):
        for name, vals in rows:
            length = max(len(v) for v in vals) or 1
            mean, lo, hi = _curve(vals, length, (0.0, 1.0))
            steps = np.arange(1, length + 1)
            ax.plot(steps, mean, label=name)
            ax.fill_between(steps, lo, hi, alpha=0.15)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("team step")
        # team steps are whole: a short episode had ticks at 1.25, 1.5, ...
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("completion (CR)")
        ax.set_title(f"{structure} tasks" if structure else "household", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7 if most <= 12 else 6)
    fig.tight_layout()
    return Figure("Household step-completion curves: CR after each team step, mean and 95% "
                  "band over cases (clipped to [0, 1]).", fig)


def construct_scores(entries: dict[str, ENTRY]) -> Figure | None:
    """Return grouped bars: each construct planner condition's SR and construct score per
    construct D1-D4, with their intervals."""
    rows = {c: e for c, e in entries.items() if e.get("per_construct")}
    if not rows:
        return None
    plt = _plt()
    constructs = sorted({k for e in rows.values() for k in e["per_construct"]})
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    width = 0.8 / len(rows)
    x = np.arange(len(constructs))
    for ax, key in zip(axes, ("SR", "CS"), strict=True):
        for i, (_, e) in enumerate(rows.items()):
            vals = [_ends(e["per_construct"].get(c, {}).get(key, {})) for c in constructs]
            mean = np.array([v[0] if v else 0.0 for v in vals])
            err = np.array([[v[0] - v[1] if v else 0 for v in vals],
                            [v[2] - v[0] if v else 0 for v in vals]])
            ax.bar(x + (i - (len(rows) - 1) / 2) * width, mean, width, yerr=err, capsize=2,
                   label=label_of(e["spec"]))
        ax.set_xticks(x, constructs)
        ax.set_ylim(0, 1.05)
        ax.set_title({"SR": "success rate", "CS": "construct score"}[key], fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return Figure("Coordination constructs: success rate (Wilson 95%) and construct score "
                  "(95% t, clipped) per construct.", fig)


def physical_funnels(entries: dict[str, ENTRY]) -> Figure | None:
    """Return the phase funnels: per task, the share of rollouts that completed phase 1, 2
    and 3 (success) for each policy, with Wilson intervals."""
    rows = {c: e for c, e in entries.items()
            if e["spec"].get("protocol", "main") == "main" and "p1" in e["metrics"]}
    if not rows:
        return None
    plt = _plt()
    tasks = sorted({e["spec"]["task"] for e in rows.values()})
    cols = min(5, len(tasks))
    nrows = (len(tasks) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.6 * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(tasks):]:
        ax.axis("off")
    for ax, task in zip(axes.flat, tasks, strict=False):
        for e in (e for e in rows.values() if e["spec"]["task"] == task):
            vals = [_ends(e["metrics"][p]) for p in ("p1", "p2", "p3")]
            mean = [v[0] if v else np.nan for v in vals]
            # a checkpoint's policy is a path: its file name says which one
            label = _short(Path(str(e["spec"]["policy"])).stem, 28)
            ax.errorbar([1, 2, 3], mean, capsize=2, marker="o", label=label,
                        yerr=[[v[0] - v[1] if v else 0 for v in vals],
                              [v[2] - v[0] if v else 0 for v in vals]])
        ax.set_title(task, fontsize=9)
        ax.set_xticks([1, 2, 3], ["p1", "p2", "p3"])
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return Figure("Physical phase funnels: share of rollouts that completed each phase "
                  "(p3 = success), Wilson 95% intervals.", fig)


def stat_bars(entries: dict[str, ENTRY]) -> list[Figure]:
    """Return, per STAT configuration, bars of every policy's return, conflict rate and
    success with their intervals (returns differ in scale between configurations)."""
    by_config: dict[str, dict[str, ENTRY]] = {}
    for c, e in entries.items():
        by_config.setdefault(str(e["spec"].get("config")), {})[c] = e
    out = []
    for config, es in by_config.items():
        # within a configuration the policy tells conditions apart, unless layouts or seeds
        # differ too: then those are named as well
        full = labels_for(es)
        labels = {c: full[c].replace(f"{config} ", "", 1) for c in es}
        fig = metric_bars(es, ("return", "conflict_rate", "throughput", "success"),
                          f"STAT {config}: scripted allocators over episodes.", labels)
        if fig:
            out.append(fig)
    return out


def stat_train_curves(data: dict[str, Any]) -> list[Figure]:
    """Return the learning curves of a training section (its results and reference rows),
    one figure per configuration."""
    from .stat_train_report import curve_figures

    if not data.get("results"):
        return []
    return [Figure(f"STAT training, {config}: return, conflict rate and per-agent diversity "
                   "vs environment steps; mean and 95% band over seeds, scripted allocators "
                   "dashed.", fig)
            for config, fig in curve_figures(data["results"], data.get("references"))]


def stat_train_profiles(data: dict[str, Any]) -> Figure | None:
    """Return the performance profiles of a training section: for each method, the share of
    its runs (seeds x configurations) whose normalized final return exceeds tau."""
    from coordbench.core.stats import performance_profile

    from .stat_train_report import GAP_TABLE, aggregates

    built = data.get("built")
    if not built or not aggregates(built):
        return None
    cells = built["tables"][GAP_TABLE.name]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    taus = np.linspace(-0.25, 1.25, 121)
    for m in aggregates(built):
        scores = np.array([cells[(m, c)].samples for c in built["configs"]]) / 100.0
        ax.plot(taus, performance_profile(scores, taus), label=m.upper())
    ax.axvline(0, color="gray", linestyle=":", label="random valid")
    ax.axvline(1, color="gray", linestyle="-.", label="Hungarian")
    ax.set_xlabel("normalized final return tau")
    ax.set_ylabel("share of runs > tau")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Figure("Performance profiles over configurations and seeds (Agarwal et al., "
                  "2021): the share of runs whose final return, normalized from random valid "
                  "play (0) to Hungarian (1), exceeds tau.", fig)


def stat_figures(run: RunDir, conds: list[str], entries: dict[str, ENTRY],
                 data: dict[str, Any] | None) -> list[Figure | None]:
    """Return STAT's figures: per-condition bars."""
    return list(stat_bars(entries))


def mecobench_figures(run: RunDir, conds: list[str], entries: dict[str, ENTRY],
                      data: dict[str, Any] | None) -> list[Figure | None]:
    """Return the household figures: SR/CR/AUC/CAR bars and step-completion curves."""
    return [metric_bars(entries, ("SR", "CR", "AUC", "CAR"),
                        "Household teams: SR (Wilson 95%), CR, AUC and CAR "
                        "(95% t, clipped to [0, 1]) over cases."),
            household_curves(run, [c for c in conds if c in entries])]


def constructs_figures(run: RunDir, conds: list[str], entries: dict[str, ENTRY],
                       data: dict[str, Any] | None) -> list[Figure | None]:
    """Return the construct figures: SR, construct score and legality bars, and the scores
    per construct."""
    return [metric_bars(entries, ("SR", "CS", "legal_rate"),
                        "Coordination constructs: SR, construct score and "
                        "legality over instances."),
            construct_scores(entries)]


def physical_figures(run: RunDir, conds: list[str], entries: dict[str, ENTRY],
                     data: dict[str, Any] | None) -> list[Figure | None]:
    """Return the physical figures: phase funnels."""
    return [physical_funnels(entries)]


def stat_train_figures(run: RunDir, conds: list[str], entries: dict[str, ENTRY],
                       data: dict[str, Any] | None) -> list[Figure | None]:
    """Return a training directory's figures: learning curves and diagnostic profiles."""
    return [*stat_train_curves(data or {}), stat_train_profiles(data or {})]


def for_suite(run: RunDir, suite: str, conds: list[str], results: dict[str, ENTRY],
              data: dict[str, Any] | None = None) -> list[Figure]:
    """Return the figures of one family's conditions in `run` (`data`: what its report
    section kept for them), drawn by the family's `figures` piece."""
    from coordbench.runner.family import family

    f = family(suite)
    draw = f.get("figures") if f is not None else None
    if draw is None:
        return []
    entries = {c: results[c] for c in conds if c in results}
    return [fig for fig in draw(run, conds, entries, data) if fig is not None]
