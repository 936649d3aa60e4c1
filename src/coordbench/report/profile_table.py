"""`coordbench profile DIR...`: the coordination profile (`metrics.profile`) of every
condition of several runs, of any family, in one table.

Each row is a condition: the mean of each measure over the episodes where it applies, with
its 95% interval (`core.stats.estimate`, by the measure's kind) and n; a measure that applies
to no episode of the condition is null (n/a). Rows are recomputed from the trajectories.
"""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass, field
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.stats import estimate, few
from coordbench.errors import RunDirError
from coordbench.metrics.profile import KEYS, KINDS, MEASURES, episode_profile
from coordbench.runner.family import names as family_names

from .across_runs import run_names
from .figures import labels_for
from .format import CONTRACT

FORMATS = ("md", "csv", "html")


@dataclass
class ProfileTable:
    """Rows (one per condition with episodes) and the episode files that could not be read."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def condition_profile(trajectories: list[Any]) -> dict[str, dict[str, Any] | None]:
    """Return {measure: {"mean", "ci95", "n", "lo", "hi", "interval"} or None (applies to no
    episode)} over the episodes of one condition."""
    values: dict[str, list[float]] = {k: [] for k in KEYS}
    for traj in trajectories:
        for k, v in episode_profile(traj).items():
            if v is not None:
                values[k].append(v)
    out: dict[str, dict[str, Any] | None] = {}
    for k, vs in values.items():
        out[k] = estimate(vs, KINDS[k]).as_dict() if vs else None
    return out


def collect(runs: list[RunDir]) -> ProfileTable:
    """Return the profile of every condition (of a family with a profile) of `runs`, in run
    then manifest order; an unreadable episode file is left out and named in `problems`."""
    table = ProfileTable()
    names = run_names(runs)
    for run, name in zip(runs, names, strict=True):
        for cond, spec in run.conditions.items():
            suite = str(spec.get("suite", ""))
            if suite not in family_names("profile"):
                continue
            trajectories = []
            for key in run.episode_keys(cond):
                try:
                    trajectories.append(run.load_episode(cond, key))
                except RunDirError as e:
                    table.problems.append(str(e))
            if not trajectories:
                continue
            table.rows.append({"run": name, "suite": suite, "condition": cond, "label": cond,
                               "episodes": len(trajectories), "spec": spec,
                               **condition_profile(trajectories)})
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for row in table.rows:
        by_suite.setdefault(row["suite"], []).append(row)
    for rows in by_suite.values():  # labels that tell apart the rows of a suite, across runs
        labels = labels_for({str(i): {"spec": r["spec"]} for i, r in enumerate(rows)})
        for i, r in enumerate(rows):
            if labels[str(i)] != str(i):
                r["label"] = labels[str(i)]
    for row in table.rows:
        del row["spec"]
    return table


def json_rows(table: ProfileTable) -> list[dict[str, Any]]:
    """Return the rows in the command's JSON form: run, suite, condition, label, episodes and
    each measure as {"mean", "ci95", "n", "lo", "hi"} or null."""
    out = []
    for r in table.rows:
        row = {k: r[k] for k in ("run", "suite", "condition", "label", "episodes")}
        for k in KEYS:
            m = r[k]
            row[k] = None if m is None else {x: m.get(x) for x in CONTRACT}
        out.append(row)
    return out


def _num(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def cell(m: dict[str, Any] | None) -> str:
    """Return one measure's cell: mean ± half-width, or mean [lo, hi] where the interval was
    clipped to the measure's range; "n/a" where it does not apply."""
    if m is None:
        return "n/a"
    if m.get("ci95") is None or m.get("lo") is None:
        text = _num(m["mean"])
    elif m.get("interval") == "t-clipped":
        text = f"{_num(m['mean'])} [{_num(m['lo'])}, {_num(m['hi'])}]"
    else:
        text = f"{_num(m['mean'])} ± {_num(m['ci95'])}"
    return text + few(m.get("n"))


_HEAD = ["run", "suite", "condition", "n", *KEYS]


def _cells(r: dict[str, Any]) -> list[str]:
    return [r["run"], r["suite"], r["label"], str(r["episodes"]), *(cell(r[k]) for k in KEYS)]


def markdown(table: ProfileTable) -> str:
    """Return the profile as one markdown table across families and runs."""
    out = ["# Coordination profile", "",
           "Each measure has one definition per family (docs/cross-family.md); n/a: it does "
           "not apply to that family or to any episode of the condition. Cells: mean ± the "
           "half-width of its 95% t-interval, or mean [lo, hi] where the interval was clipped "
           "to the measure's range; n counts the condition's episodes (the CSV and JSON give "
           "each measure's own n, the episodes it applies to).", "",
           "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    out += ["| " + " | ".join(_cells(r)) + " |" for r in table.rows]
    return "\n".join(out) + "\n"


def csv_text(table: ProfileTable) -> str:
    """Return one long CSV: run, suite, condition, label, episodes, measure, mean, lo, hi,
    ci95, n, interval (a measure that does not apply has no row)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "suite", "condition", "label", "episodes", "measure", "mean", "lo", "hi",
                "ci95", "n", "interval"])
    for r in table.rows:
        for k in KEYS:
            m = r[k]
            if m is None:
                continue
            w.writerow([r["run"], r["suite"], r["condition"], r["label"], r["episodes"], k,
                        *("" if m.get(f) is None else m.get(f)
                          for f in ("mean", "lo", "hi", "ci95", "n", "interval"))])
    return buf.getvalue()


def html_text(table: ProfileTable) -> str:
    """Return the profile as one self-contained HTML page."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEAD)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>"
                   for r in table.rows)
    style = ("body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:collapse}"
             "th,td{border:1px solid #dde2ea;padding:3px 8px;text-align:left}"
             "th{background:#eef1f6}")
    note = ("Each measure has one definition per family (docs/cross-family.md); n/a: it does "
            "not apply to that family or to any episode of the condition.")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>coordbench profile</title><style>{style}</style></head><body>"
            f"<h1>Coordination profile</h1><p>{html.escape(note)}</p>"
            f"<table data-measures=\"{' '.join(MEASURES)}\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></body></html>\n")
