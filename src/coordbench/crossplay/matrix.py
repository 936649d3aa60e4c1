"""Cross-play: every ordered pair of partners over a team's seats, and what it shows.

Cell (i, j) of an N-partner matrix is the team with partner i in the first seat (agent_0)
and partner j in every other seat; its diagonal is each partner's self-play. Every cell is
an ordinary condition of the run directory, played on the same instances and seeds, so a
crossplay run resumes, runs on every executor, and its report and viewer are a run's.
`crossplay.json` in the run names the partners and each cell's condition; every number
here is recomputed from the saved trajectories.

Per partner: its self-play score (cell (i, i)), its cross-play score (the episodes of every
cell that pairs it with another partner, in either place: row i and column i off the
diagonal) and the gap self - cross, with a Welch interval (t on the Welch-Satterthwaite
degrees of freedom; n counts the episodes on both sides).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

from coordbench.core.atomic import write_atomic
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, estimate
from coordbench.errors import RunDirError
from coordbench.runner.family import family, suite_object

FILE = "crossplay.json"


@dataclass(frozen=True)
class Crossplay:
    """A crossplay run's design: partners (name, seat spec), the family, the metric the
    matrix reports, the seats of a team, cells[i][j] (condition names) and the episodes
    (case keys) every cell plays: the matrix reads those only, so a run directory that
    holds more episodes of a cell (an earlier, longer crossplay) still compares every cell
    on the same instances and seeds."""

    family: str
    partners: list[tuple[str, str]]
    metric: str
    seats: int
    cells: list[list[str]]
    episodes: int
    keys: list[str] | None = None  # None: a design written before keys were recorded

    def names(self) -> list[str]:
        """Return the partners' names in matrix order."""
        return [n for n, _ in self.partners]

    def as_dict(self) -> dict[str, Any]:
        """Return the design as crossplay.json holds it."""
        return {"family": self.family, "partners": [{"name": n, "spec": s}
                                                    for n, s in self.partners],
                "metric": self.metric, "seats": self.seats, "cells": self.cells,
                "episodes": self.episodes, "keys": self.keys}


def save(run: RunDir, design: Crossplay) -> None:
    """Write the design into the run (a rerun with other partners replaces it)."""
    write_atomic(run.path / FILE, json.dumps(design.as_dict(), indent=1) + "\n")


def load(path: Path) -> Crossplay | None:
    """Return the design of the crossplay run at `path` (None: not a crossplay run);
    RunDirError names a damaged file."""
    f = Path(path) / FILE
    if not f.is_file():
        return None
    try:
        d = json.loads(f.read_text())
        return Crossplay(d["family"], [(p["name"], p["spec"]) for p in d["partners"]],
                         d["metric"], int(d["seats"]), [list(r) for r in d["cells"]],
                         int(d["episodes"]), d.get("keys"))
    except (ValueError, KeyError, TypeError) as e:
        raise RunDirError(f"{f}: not a crossplay design ({type(e).__name__}: {e})") from None


def kind_of(name: str, metric: str) -> str:
    """Return the estimate kind of a family's metric (binary, unit, nonneg, mean), as its
    family record says."""
    f = family(name)
    kinds = (f.get("kinds") if f is not None else None) or {}
    return kinds.get(metric, "mean")


def cell_episodes(run: RunDir, design: Crossplay, condition: str) -> list[str]:
    """Return the keys of a cell's finished episodes among those the design plays."""
    keys = run.episode_keys(condition)
    if design.keys is None:
        return keys
    wanted = set(design.keys)
    return [k for k in keys if k in wanted]


def cell_values(run: RunDir, design: Crossplay, condition: str,
                metric: str | None = None) -> list[float]:
    """Return the per-episode values of `metric` (default: the design's) in one cell, over
    the design's finished episodes (errored ones are not results)."""
    from coordbench.runner.conditions import errored

    suite = suite_object(design.family)
    out = []
    for key in cell_episodes(run, design, condition):
        traj = run.load_episode(condition, key)
        if errored(traj) is None:
            v = suite.metrics(traj).get(metric or design.metric)
            if v is not None and not math.isnan(float(v)):
                out.append(float(v))
    return out


def welch_gap(a: list[float], b: list[float]) -> Estimate:
    """Return mean(a) - mean(b) with its Welch 95% half-width (None with fewer than two
    values on a side; 0 when neither side varies)."""
    if not a or not b:
        return Estimate(float("nan"), None, len(a) + len(b))
    diff = float(np.mean(a) - np.mean(b))
    if len(a) < 2 or len(b) < 2:
        return Estimate(diff, None, len(a) + len(b))
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if va + vb == 0:
        return Estimate(diff, 0.0, len(a) + len(b), diff, diff)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(st.t.ppf(0.975, df) * math.sqrt(va + vb))
    return Estimate(diff, half, len(a) + len(b), diff - half, diff + half)


@dataclass(frozen=True)
class Matrix:
    """A crossplay run's numbers: cells[i][j], and per partner self, cross and gap."""

    design: Crossplay
    metric: str
    cells: list[list[Estimate]]
    self_play: dict[str, Estimate]
    cross_play: dict[str, Estimate]
    gap: dict[str, Estimate]


def matrix(run: RunDir, design: Crossplay, metric: str | None = None) -> Matrix:
    """Return the matrix of `metric` (default: the design's), recomputed from the run."""
    metric = metric or design.metric
    kind = kind_of(design.family, metric)
    names = design.names()
    values = [[cell_values(run, design, c, metric) for c in row] for row in design.cells]
    cells = [[estimate(v, kind) for v in row] for row in values]
    self_play, cross_play, gap = {}, {}, {}
    for i, name in enumerate(names):
        own = values[i][i]
        other = [x for j in range(len(names)) if j != i
                 for x in (*values[i][j], *values[j][i])]
        self_play[name] = cells[i][i]
        cross_play[name] = estimate(other, kind)
        gap[name] = welch_gap(own, other)
    return Matrix(design, metric, cells, self_play, cross_play, gap)

