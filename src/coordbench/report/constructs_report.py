"""Construct tables for a run directory, recomputed from its trajectories."""

from __future__ import annotations

from rich.table import Table

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, estimate
from coordbench.metrics.constructs import KINDS, correlation_matrix, episode_metrics
from coordbench.suites.constructs.families import CONSTRUCTS
from coordbench.suites.constructs.suite import HEADLINE

from .format import estimate_json
from .section import Section


def summarize(run: RunDir, cond: str, limit: int | None = None
              ) -> tuple[dict[str, Estimate], dict[str, dict[str, Estimate]]]:
    """Return (overall {metric: estimate}, per construct {construct: {metric: estimate}})."""
    keys = run.episode_keys(cond)[:limit] if limit else run.episode_keys(cond)
    overall: dict[str, list[float]] = {}
    per: dict[str, dict[str, list[float]]] = {c: {} for c in CONSTRUCTS}
    for key in keys:
        traj = run.load_episode(cond, key)
        construct = traj.header.params["construct"]["construct"]
        for name, v in episode_metrics(traj).items():
            if v is None:
                continue
            overall.setdefault(name, []).append(v)
            per[construct].setdefault(name, []).append(v)
    est = {k: estimate(v, KINDS.get(k, "mean")) for k, v in overall.items()}
    per_est = {c: {k: estimate(v, KINDS.get(k, "mean")) for k, v in d.items()}
               for c, d in per.items() if d}
    return est, per_est


def correlations(run: RunDir, conditions: list[str]) -> dict[str, dict[str, float | None]]:
    """Return the construct-score correlation matrix over the construct `conditions`
    (one row per condition: its mean score on each construct)."""
    rows = []
    for cond in conditions:
        if run.episode_keys(cond):
            _, per = summarize(run, cond)
            rows.append({c: per[c]["CS"].mean if c in per and "CS" in per[c] else None
                         for c in CONSTRUCTS})
    return correlation_matrix(rows)


def markdown(run: RunDir, conditions: list[str]) -> str:
    """Return the construct section of a run report: scores per construct and condition,
    diagnostics, and the construct-score correlation matrix over conditions."""
    lines = ["## Coordination constructs", "",
             "Mean over instances with a 95% interval: [Wilson] for rates, ± t for the rest, "
             "[clipped to 0-1] for scores (definitions: docs/constructs.md).", "",
             "| planner | agents | observation | construct | n | SR | CS | legal rate | "
             "invalid actions | progress on failure | steps on success | planner calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    any_rows = False
    for cond in conditions:
        spec = run.conditions[cond]
        if not run.episode_keys(cond):
            continue
        _, per = summarize(run, cond)
        for c, d in sorted(per.items()):
            any_rows = True

            def f(k, d=d):
                return d[k].fmt(3) if k in d and d[k].n else "n/a"

            lines.append(f"| {spec['planner']} | {spec['agents']} | {spec['observation']} | {c} "
                         f"| {d['SR'].n} | {f('SR')} | {f('CS')} | {f('legal_rate')} | "
                         f"{f('invalid_action_ratio')} | {f('progress_on_failure')} | "
                         f"{f('steps_on_success')} | {f('planner_calls')} |")
    if not any_rows:
        return ""
    m = correlations(run, conditions)
    lines += ["", "Construct-score correlations over conditions (Pearson; n/a with fewer than "
              "3 conditions or no variance):", "", "| | " + " | ".join(m) + " |",
              "|---|" + "---|" * len(m)]
    for a, row in m.items():
        lines.append(f"| {a} | " + " | ".join("n/a" if v is None else f"{v:+.2f}"
                                              for v in row.values()) + " |")
    return "\n".join(lines) + "\n"


def console_table(title: str, per: dict[str, dict[str, Estimate]]) -> Table:
    """Return a rich table: one row per construct of one condition."""
    table = Table(title=title, title_justify="left")
    for col in ("construct", "n", "SR", "CS", "legal rate", "steps on success"):
        table.add_column(col)
    for c, d in sorted(per.items()):
        table.add_row(c, str(d["SR"].n), d["SR"].fmt(3),
                      d["CS"].fmt(3) if "CS" in d else "n/a", d["legal_rate"].fmt(3),
                      d["steps_on_success"].fmt(1) if "steps_on_success" in d else "n/a")
    return table


def section(run: RunDir, conditions: list[str]) -> Section:
    """Return the construct section of a run report."""
    text = markdown(run, conditions)
    tables, results = [], {}
    for cond in conditions:
        if not run.episode_keys(cond):
            continue
        spec = run.conditions[cond]
        overall, per = summarize(run, cond)
        tables.append(console_table(f"constructs: {spec['planner']}, {spec['agents']}, "
                                    f"{spec['observation']}", per))
        results[cond] = {"suite": "constructs", "spec": spec,
                         "metrics": {k: estimate_json(e) for k, e in overall.items()},
                         "per_construct": {c: {k: estimate_json(d[k]) for k in HEADLINE
                                               if k in d} for c, d in per.items()}}
    return Section("coordination constructs", text, tables, results)
