"""`coordbench table DIR...`: conditions of several runs side by side, for every family.

Each run's report is recomputed from its trajectories (`compose`), so the table holds the
numbers of each run's results.json (rates as percentages with their Wilson interval). One
table per suite: a row per
(run, condition) with the fields that tell its conditions apart and each headline metric
with its 95% interval.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.stats import few
from coordbench.runner.family import family

from .figures import labels_for
from .format import pct

FORMATS = ("md", "csv", "html")


@dataclass
class SuiteTable:
    """One suite's rows across runs: (run name, condition, label, results entry)."""

    suite: str
    metrics: tuple[str, ...]
    rows: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)


def _metrics(suite: str) -> tuple[str, ...]:
    f = family(suite)
    return f.headline_metrics() if f is not None else ()


def collect(runs: list[RunDir]) -> list[SuiteTable]:
    """Return one table per suite over the conditions of `runs`, in first-seen order."""
    from .compose import compose

    tables: dict[str, SuiteTable] = {}
    names = run_names(runs)
    for run, name in zip(runs, names, strict=True):
        results = compose(run).results
        for cond, entry in results.items():
            suite = str(entry.get("suite"))
            table = tables.setdefault(suite, SuiteTable(suite, _metrics(suite)))
            table.rows.append((name, cond, "", entry))
    for t in tables.values():  # labels that tell apart every row of a suite, across runs
        keyed = {f"{i}": e for i, (_, _, _, e) in enumerate(t.rows)}
        labels = labels_for(keyed)
        t.rows = [(run, cond, labels[f"{i}"] if labels[f"{i}"] != f"{i}" else cond, e)
                  for i, (run, cond, _, e) in enumerate(t.rows)]
    return list(tables.values())


def run_names(runs: list[RunDir]) -> list[str]:
    """Return a short, distinct name per run (its folder, with parents where folders share a
    name)."""
    names = [r.path.name for r in runs]
    if len(set(names)) == len(names):
        return names
    return [str(r.path) for r in runs]


def _cell(m: dict[str, Any] | None) -> str:
    if not m or m.get("mean") is None:
        return "n/a"
    if m.get("interval") == "wilson":
        return pct(m)
    lo, hi, mean = m.get("lo"), m.get("hi"), m["mean"]
    digits = 3 if abs(mean) < 10 else 1
    if m.get("ci95") is None or lo is None:
        text = f"{mean:.{digits}f}"
    elif m.get("interval") == "t-clipped":
        text = f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
    else:
        text = f"{mean:.{digits}f} ± {m['ci95']:.{digits}f}"
    return text + few(m.get("n"))


def markdown(tables: list[SuiteTable]) -> str:
    """Return the tables as markdown, one section per suite."""
    out = []
    for t in tables:
        head = ["run", "condition", "n", *t.metrics]
        out += [f"## {t.suite}", "", "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head)]
        for run, _, label, entry in t.rows:
            n = max((m.get("n", 0) for m in entry["metrics"].values()), default=0)
            out.append("| " + " | ".join([run, label, str(n)] + [
                _cell(entry["metrics"].get(k)) for k in t.metrics]) + " |")
        out.append("")
    return "\n".join(out)


def csv_text(tables: list[SuiteTable]) -> str:
    """Return one long CSV: run, suite, condition, label, metric, mean, lo, hi, ci95, n,
    interval (every metric of every condition, not only the headline ones)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "suite", "condition", "label", "metric", "mean", "lo", "hi", "ci95",
                "n", "interval"])
    for t in tables:
        for run, cond, label, entry in t.rows:
            for metric, m in entry["metrics"].items():
                w.writerow([run, t.suite, cond, label, metric,
                            *("" if m.get(k) is None else m.get(k)
                              for k in ("mean", "lo", "hi", "ci95", "n", "interval"))])
    return buf.getvalue()


def html_text(tables: list[SuiteTable]) -> str:
    """Return the tables as one self-contained HTML page."""
    parts = []
    for t in tables:
        head = "".join(f"<th>{html.escape(h)}</th>"
                       for h in ["run", "condition", "n", *t.metrics])
        body = []
        for run, _, label, entry in t.rows:
            n = max((m.get("n", 0) for m in entry["metrics"].values()), default=0)
            cells = [run, label, str(n), *(_cell(entry["metrics"].get(k)) for k in t.metrics)]
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        parts.append(f'<h2>{html.escape(t.suite)}</h2><table data-suite="{html.escape(t.suite)}">'
                     f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    style = ("body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:collapse}"
             "th,td{border:1px solid #dde2ea;padding:3px 8px;text-align:left}"
             "th{background:#eef1f6}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>coordbench table</title><style>{style}</style></head><body>"
            f"<h1>coordbench: conditions across runs</h1>{''.join(parts)}</body></html>\n")
