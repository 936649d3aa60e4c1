"""The cross-play part of a run's report: the matrix (report.md table, a heatmap in
report.html, console tables) and each partner's self-play, cross-play and gap."""

from __future__ import annotations

import math
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, few

from .figures import Figure, _plt
from .section import Section


def _cell(e: Estimate) -> str:
    return "n/a" if e.n == 0 or math.isnan(e.mean) else f"{e.fmt(3)} (n={e.n})"


def _signed(e: Estimate) -> str:
    if e.n == 0 or math.isnan(e.mean):
        return "n/a"
    half = "" if e.ci95 is None else f" ± {e.ci95:.3f}"
    return f"{e.mean:+.3f}{half}{few(e.n)}"


def matrix_json(m: Any) -> dict[str, Any]:
    """Return the matrix as plain JSON: family, partners, metric, cells (conditions),
    matrix, self_play, cross_play and gap (every estimate with its interval's ends)."""
    from .format import estimate_json

    names = m.design.names()
    return {"family": m.design.family, "partners": names, "metric": m.metric,
            "cells": m.design.cells,
            "matrix": [[estimate_json(e) for e in row] for row in m.cells],
            **{k: {n: estimate_json(e) for n, e in getattr(m, k).items()}
               for k in ("self_play", "cross_play", "gap")}}


def markdown(m: Any) -> str:
    """Return the cross-play section's markdown (matrix, then per partner)."""
    names = m.design.names()
    lines = [f"## Cross-play: {m.design.family}, {m.metric}", "",
             f"Rows: the partner in the first seat (agent_0); columns: the partner in the "
             f"other {m.design.seats - 1} seat(s). The diagonal is each partner's self-play. "
             "Mean with its 95% interval over the cell's episodes.", "",
             "| first seat \\ others | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for name, row in zip(names, m.cells, strict=True):
        lines.append(f"| {name} | " + " | ".join(_cell(e) for e in row) + " |")
    lines += ["", "| partner | spec | self-play | cross-play | gap (self - cross) |",
              "|---|---|---|---|---|"]
    for name, spec in m.design.partners:
        lines.append(f"| {name} | `{spec}` | {_cell(m.self_play[name])} | "
                     f"{_cell(m.cross_play[name])} | {_signed(m.gap[name])} |")
    lines += ["", "Cross-play pools every cell that pairs the partner with another, in "
              "either place; the gap's interval is Welch's.", ""]
    return "\n".join(lines)


def profile_rows(run: RunDir, m: Any) -> list[str]:
    """Return the markdown of each cell's coordination profile (means over its finished
    episodes; measures no cell has are left out)."""
    from coordbench.crossplay.matrix import cell_episodes
    from coordbench.metrics.profile import KEYS, episode_profile
    from coordbench.runner.conditions import errored

    names = m.design.names()
    rows: list[tuple[str, str, dict[str, float]]] = []
    for i, row in enumerate(m.design.cells):
        for j, cond in enumerate(row):
            values: dict[str, list[float]] = {}
            for key in cell_episodes(run, m.design, cond):
                traj = run.load_episode(cond, key)
                if errored(traj) is not None:
                    continue
                for k, v in episode_profile(traj).items():
                    if v is not None and not math.isnan(v):
                        values.setdefault(k, []).append(v)
            rows.append((names[i], names[j], {k: sum(v) / len(v) for k, v in values.items()}))
    keys = [k for k in KEYS if any(k in r[2] for r in rows)]
    if not keys:
        return []
    out = ["Per cell, the coordination profile (means over episodes; docs/cross-family.md):",
           "", "| agent_0 | others | " + " | ".join(keys) + " |",
           "|---|---|" + "---|" * len(keys)]
    out += [f"| {a} | {b} | " + " | ".join(f"{r[k]:.3f}" if k in r else "n/a" for k in keys)
            + " |" for a, b, r in rows]
    return [*out, ""]


def heatmap(m: Any) -> Figure:
    """Return the matrix as a heatmap, each cell labelled with its mean."""
    plt = _plt()
    names = m.design.names()
    k = len(names)
    values = [[e.mean if e.n else float("nan") for e in row] for row in m.cells]
    fig, ax = plt.subplots(figsize=(1.2 * k + 2.5, 1.0 * k + 1.6))
    im = ax.imshow(values, cmap="viridis")
    ax.set_xticks(range(k), names, rotation=30, ha="right")
    ax.set_yticks(range(k), names)
    ax.set_xlabel("partner in the other seats")
    ax.set_ylabel("partner in seat agent_0")
    finite = [v for row in values for v in row if not math.isnan(v)]
    mid = (max(finite) + min(finite)) / 2 if finite else 0.0
    for i in range(k):
        for j in range(k):
            v = values[i][j]
            ax.text(j, i, "n/a" if math.isnan(v) else f"{v:.3g}", ha="center", va="center",
                    fontsize=8, color="black" if not math.isnan(v) and v > mid else "white")
    fig.colorbar(im, ax=ax, label=m.metric)
    ax.set_title(f"cross-play {m.design.family}: {m.metric}")
    fig.tight_layout()
    return Figure(f"Cross-play matrix ({m.metric}); the diagonal is self-play.", fig)


def section(run: RunDir) -> Section | None:
    """Return the run's cross-play section (None: not a crossplay run)."""
    from coordbench.crossplay.matrix import load, matrix

    design = load(run.path)
    if design is None:
        return None
    known = set(run.conditions)
    if not all(c in known for row in design.cells for c in row):
        return None  # the cells are not (yet) in this run
    m = matrix(run, design)
    return Section("Cross-play", markdown(m) + "\n".join(profile_rows(run, m)),
                   data={"matrix": m})


def console_tables(m: Any) -> list[Any]:
    """Return the matrix and the per-partner table as rich tables."""
    from rich.table import Table

    names = m.design.names()
    grid = Table(title=f"cross-play {m.design.family}: {m.metric} (rows: agent_0; columns: "
                       "the other seats)")
    grid.add_column("first seat")
    for n in names:
        grid.add_column(n, justify="right")
    for n, row in zip(names, m.cells, strict=True):
        grid.add_row(n, *(_cell(e) for e in row))
    per = Table(title="per partner")
    for col in ("partner", "self-play", "cross-play", "gap"):
        per.add_column(col, justify="left" if col == "partner" else "right")
    for n in names:
        per.add_row(n, _cell(m.self_play[n]), _cell(m.cross_play[n]), _signed(m.gap[n]))
    return [grid, per]
