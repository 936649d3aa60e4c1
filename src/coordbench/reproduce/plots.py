"""The reproduction figures: lines with 95% bands (and fitted trends), grouped interval bars,
heatmaps. Each returns a `report.figures.Figure` (caption + matplotlib figure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from coordbench.report.figures import Figure

Series = Mapping[str, tuple[Sequence[float], Sequence[float | None], Sequence[float | None],
                            Sequence[float | None]]]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _arr(xs: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if x is None else x for x in xs], dtype=np.float64)


def lines(caption: str, panels: Mapping[str, Series], xlabel: str, ylabel: str,
          trends: Mapping[str, Mapping[str, tuple[float, float] | None]] | None = None,
          ylim: tuple[float, float] | None = (0.0, 1.02), integer_x: bool = False) -> Figure:
    """Return one panel per entry of `panels`, each a line per series (x, mean, lo, hi) with
    its band; `trends[panel][series]` = (slope, intercept) draws a dashed fitted line."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 3.6), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels.items(), strict=True):
        for k, (label, (xs, mean, lo, hi)) in enumerate(series.items()):
            x = np.asarray(xs, dtype=np.float64)
            color = f"C{k % 10}"
            ax.plot(x, _arr(mean), marker="o" if len(x) < 12 else None, ms=3.5, color=color,
                    label=label)
            ax.fill_between(x, _arr(lo), _arr(hi), alpha=0.15, color=color)
            fit = (trends or {}).get(title, {}).get(label)
            if fit is not None and len(x):
                b, a = fit
                ax.plot(x, a + b * x, ls="--", lw=1, color=color)
        if ylim:
            ax.set_ylim(*ylim)
        if integer_x:
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return Figure(caption, fig)


def interval_bars(caption: str, panels: Mapping[str, Mapping[str, tuple[Any, Any, Any]]],
                  xlabel: str = "", zero: bool = False) -> Figure:
    """Return one panel per entry of `panels`: a horizontal bar per label at its mean with
    the [lo, hi] interval as an error bar (`zero`: a line at 0, for differences)."""
    plt = _plt()
    height = max(2.4, 0.32 * max((len(v) for v in panels.values()), default=1) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), height),
                             squeeze=False)
    for ax, (title, bars) in zip(axes[0], panels.items(), strict=True):
        names = list(bars)
        mean = _arr([bars[n][0] for n in names])
        lo = _arr([bars[n][1] if bars[n][1] is not None else bars[n][0] for n in names])
        hi = _arr([bars[n][2] if bars[n][2] is not None else bars[n][0] for n in names])
        y = np.arange(len(names))
        ax.barh(y, np.nan_to_num(mean), color="C0", alpha=0.75)
        # an interval's end can sit a rounding error inside its estimate (a correlation's
        # Fisher-z interval on few points): matplotlib refuses a negative error
        ax.errorbar(np.nan_to_num(mean), y, xerr=[np.maximum(0, np.nan_to_num(mean - lo)),
                                                   np.maximum(0, np.nan_to_num(hi - mean))],
                    fmt="none", ecolor="black", capsize=2, lw=1)
        ax.set_yticks(y, names, fontsize=8)
        ax.invert_yaxis()
        if zero:
            ax.axvline(0, color="black", lw=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return Figure(caption, fig)


def heatmap(caption: str, labels: Sequence[str], values: Sequence[Sequence[float | None]],
            counts: Sequence[Sequence[int]] | None = None) -> Figure:
    """Return a correlation heatmap in [-1, 1], each cell printed (n/a where undefined)."""
    plt = _plt()
    m = np.array([[np.nan if v is None else v for v in row] for row in values])
    fig, ax = plt.subplots(figsize=(4.6, 3.9))
    im = ax.imshow(m, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            text = "n/a" if np.isnan(m[i, j]) else f"{m[i, j]:.2f}"
            if counts is not None:
                text += f"\nn={counts[i][j]}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return Figure(caption, fig)


def value_grid(caption: str, rows: Sequence[str], cols: Sequence[str],
               values: Sequence[Sequence[float | None]]) -> Figure:
    """Return a heatmap of values (rows x cols), each column coloured on its own scale (the
    columns' units differ) and every cell printed (n/a where undefined)."""
    plt = _plt()
    m = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    lo, hi = np.nanmin(m, axis=0, initial=np.inf), np.nanmax(m, axis=0, initial=-np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(hi > lo, (m - lo) / (hi - lo), 0.5)
    fig, ax = plt.subplots(figsize=(1.0 * len(cols) + 2.2, 0.42 * len(rows) + 1.6))
    ax.imshow(scaled, cmap="viridis", aspect="auto", vmin=0, vmax=1)
    ax.set_xticks(range(len(cols)), cols, rotation=35, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(cols)):
            v = m[i, j]
            text = "n/a" if np.isnan(v) else f"{v:.3g}"
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                    color="white" if not np.isnan(v) and scaled[i, j] < 0.5 else "black")
    ax.set_title(caption, fontsize=9)
    fig.tight_layout()
    return Figure(caption, fig)


def scatter(caption: str, panels: Mapping[str, Mapping[str, tuple[float, float]]],
            xlabel: str, ylabel: str, columns: int = 3, quartiles: bool = False) -> Figure:
    """Return one panel per entry of `panels`, a labelled point (x, y) per series
    (`quartiles`: dashed lines at the quartiles of the panel's x and of its y values)."""
    plt = _plt()
    n = max(1, len(panels))
    cols = min(columns, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (title, points) in zip(axes.flat, panels.items(), strict=False):
        for k, (label, (x, y)) in enumerate(points.items()):
            ax.scatter([x], [y], color=f"C{k % 10}", s=24)
            ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        if quartiles and points:
            xs = [p[0] for p in points.values()]
            ys = [p[1] for p in points.values()]
            for q in np.percentile(xs, [25, 50, 75]):
                ax.axvline(float(q), ls="--", lw=0.8, color="grey")
            for q in np.percentile(ys, [25, 50, 75]):
                ax.axhline(float(q), ls="--", lw=0.8, color="grey")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure(caption, fig)
