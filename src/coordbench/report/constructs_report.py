"""Construct tables for a run directory, recomputed from its trajectories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from coordbench.analyses.constructs import failure_shares, score_correlations, termination_shares
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, estimate
from coordbench.core.trajectory import Trajectory
from coordbench.metrics.constructs import (
    FAILURE_KINDS,
    KINDS,
    TERMINATIONS,
    correlation_matrix,
    episode_metrics,
)
from coordbench.suites.constructs.suite import HEADLINE
from coordbench.suites.constructs.task_families import CONSTRUCTS

from .format import estimate_json
from .section import Section


def episodes(run: RunDir, cond: str, limit: int | None = None) -> list[Trajectory]:
    """Return the condition's trajectories in case order (only the first `limit`)."""
    keys = run.episode_keys(cond)[:limit] if limit else run.episode_keys(cond)
    return [run.load_episode(cond, key) for key in keys]


def outcomes(trajs: Sequence[Trajectory]) -> dict[str, dict[str, float | None]]:
    """Return {"termination": {success, normal_stop, budget_exhausted, protocol_failure:
    share of episodes}, "failure_shares": {dependency, occupancy, affordance, illegal_skill:
    share of failed episodes, None when no episode failed}}: the CLI's JSON form of
    `analyses.constructs.termination_shares` and `failure_shares`."""
    return {"termination": {k: v["mean"] for k, v in termination_shares(trajs).items()},
            "failure_shares": {k: v["mean"] for k, v in failure_shares(trajs).items()}}


def summarize(run: RunDir, cond: str, limit: int | None = None
              ) -> tuple[dict[str, Estimate], dict[str, dict[str, Estimate]]]:
    """Return (overall {metric: estimate}, per construct {construct: {metric: estimate}})."""
    return summarize_trajectories(episodes(run, cond, limit))


def summarize_trajectories(trajs: Sequence[Trajectory]
                           ) -> tuple[dict[str, Estimate], dict[str, dict[str, Estimate]]]:
    """Return (overall {metric: estimate}, per construct {construct: {metric: estimate}})
    over the given trajectories."""
    overall: dict[str, list[float]] = {}
    per: dict[str, dict[str, list[float]]] = {c: {} for c in CONSTRUCTS}
    for traj in trajs:
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


def correlations(run: RunDir, conditions: list[str],
                 loaded: dict[str, list[Trajectory]] | None = None
                 ) -> dict[str, dict[str, float | None]]:
    """Return the construct-score correlation matrix over the construct `conditions`
    (one row per condition: its mean score on each construct); `loaded` holds conditions'
    trajectories already read."""
    rows = []
    for cond in conditions:
        trajs = loaded[cond] if loaded and cond in loaded else episodes(run, cond)
        if trajs:
            _, per = summarize_trajectories(trajs)
            rows.append({c: per[c]["CS"].mean if c in per and "CS" in per[c] else None
                         for c in CONSTRUCTS})
    return correlation_matrix(rows)


def _rate_cell(r: dict[str, Any]) -> str:
    """Return a rate dict (analyses.constructs.rate) as 'mean [lo, hi]', or n/a."""
    if r["mean"] is None:
        return "n/a"
    return f"{r['mean']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]"


def _by_construct(trajs: list[Trajectory]) -> dict[str, list[Trajectory]]:
    out: dict[str, list[Trajectory]] = {}
    for t in trajs:
        out.setdefault(t.header.params["construct"]["construct"], []).append(t)
    return dict(sorted(out.items()))


def _who(spec: dict[str, Any]) -> str:
    cap = spec.get("buffer_capacity")
    return (f"{spec['planner']} | {spec['agents']} | {spec['observation']}"
            + (f" (buffer {cap})" if cap is not None else ""))


def markdown(run: RunDir, conditions: list[str],
             loaded: dict[str, list[Trajectory]] | None = None) -> str:
    """Return the construct section of a run report: scores per construct and condition,
    diagnostics, termination shares and failure shares (Wilson intervals), the cross-applied
    construct-score correlations over each condition's trajectories, and the construct-score
    correlation matrix over conditions. `loaded` holds conditions' trajectories already
    read."""
    loaded = dict(loaded or {})
    for cond in conditions:
        if cond not in loaded:
            loaded[cond] = episodes(run, cond)
    lines = ["## Coordination constructs", "",
             "Mean over instances with a 95% interval: [Wilson] for rates, ± t for the rest, "
             "[clipped to 0-1] for scores (definitions: docs/constructs.md).", "",
             "| planner | agents | observation | construct | n | SR | CS | legal rate | "
             "invalid actions | progress on failure | steps on success | planner calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    term = ["", "Termination: share of episodes ending each way [Wilson 95%].", "",
            "| planner | agents | observation | construct | n | success | normal stop | "
            "budget exhausted | protocol failure |", "|---|---|---|---|---|---|---|---|---|"]
    fail = ["", "Failure decomposition: share of failed episodes exhibiting at least one "
            "dependency violation, occupancy conflict, affordance failure or illegal-skill "
            "use [Wilson 95%].", "",
            "| planner | agents | observation | construct | failed | dependency | occupancy | "
            "affordance | illegal skill |", "|---|---|---|---|---|---|---|---|---|"]
    cross = ["", "Cross-applied construct scores: Pearson r over each condition's "
             "trajectories, every score applied to every trajectory, each pair over the "
             "trajectories where both are defined (n in parentheses; n/a with fewer than 3 "
             "pairs or no variance).", "",
             "| planner | agents | observation | pair | r (n) |", "|---|---|---|---|---|"]
    any_rows = False
    for cond in conditions:
        spec = run.conditions[cond]
        trajs = loaded[cond]
        if not trajs:
            continue
        who = _who(spec)
        _, per = summarize_trajectories(trajs)
        for c, d in sorted(per.items()):
            any_rows = True

            def f(k, d=d):
                return d[k].fmt(3) if k in d and d[k].n else "n/a"

            lines.append(f"| {who} | {c} "
                         f"| {d['SR'].n} | {f('SR')} | {f('CS')} | {f('legal_rate')} | "
                         f"{f('invalid_action_ratio')} | {f('progress_on_failure')} | "
                         f"{f('steps_on_success')} | {f('planner_calls')} |")
        groups = {**_by_construct(trajs), "all": trajs}
        for c, ts in groups.items():
            shares = termination_shares(ts)
            term.append(f"| {who} | {c} | {len(ts)} | "
                        + " | ".join(_rate_cell(shares[k]) for k in TERMINATIONS) + " |")
            fs = failure_shares(ts)
            failed = fs["dependency"]["n"]
            fail.append(f"| {who} | {c} | {failed} | "
                        + " | ".join(_rate_cell(fs[k]) for k in FAILURE_KINDS) + " |")
        m = score_correlations(trajs)
        pairs = [(a, b) for k, a in enumerate(CONSTRUCTS) for b in CONSTRUCTS[k + 1:]]
        cells = [f"{a}-{b}: " + ("n/a" if m["r"][a][b] is None else f"{m['r'][a][b]:+.2f}")
                 + f" ({m['n'][a][b]})" for a, b in pairs]
        cross.append(f"| {who} | all pairs | " + "; ".join(cells) + " |")
    if not any_rows:
        return ""
    m = correlations(run, conditions, loaded)
    lines += term + fail + cross
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
                      d["CS"].fmt(3) if "CS" in d else "n/a",
                      d["legal_rate"].fmt(3) if "legal_rate" in d else "n/a",
                      d["steps_on_success"].fmt(1) if "steps_on_success" in d else "n/a")
    return table


def section(run: RunDir, conditions: list[str]) -> Section:
    """Return the construct section of a run report (per condition in its results: the
    metrics, per-construct headline metrics, termination shares and failure shares)."""
    loaded = {cond: episodes(run, cond) for cond in conditions}
    text = markdown(run, conditions, loaded)
    tables, results = [], {}
    for cond in conditions:
        trajs = loaded[cond]
        if not trajs:
            continue
        spec = run.conditions[cond]
        overall, per = summarize_trajectories(trajs)
        tables.append(console_table(f"constructs: {spec['planner']}, {spec['agents']}, "
                                    f"{spec['observation']}", per))
        results[cond] = {"suite": "constructs", "spec": spec,
                         "metrics": {k: estimate_json(e) for k, e in overall.items()},
                         "per_construct": {c: {k: estimate_json(d[k]) for k in HEADLINE
                                               if k in d} for c, d in per.items()},
                         "termination": termination_shares(trajs),
                         "failure_shares": failure_shares(trajs)}
    return Section("coordination constructs", text, tables, results)


def run_summary(run: RunDir, plan: Any, values: dict[str, Any]) -> tuple[dict, list]:
    """Return `constructs run`'s --json object (SR, CS, legal_rate overall and per construct,
    the termination and failure shares, the number of instances) and its console table."""
    from coordbench.suites.constructs.suite import SUITE

    ctx = plan.context
    trajs = episodes(run, SUITE.condition(ctx["cond"]), ctx["cases"])
    overall, per = summarize_trajectories(trajs)
    payload: dict[str, Any] = {k: estimate_json(overall[k]) for k in HEADLINE if k in overall}
    payload["per_construct"] = {c: {k: estimate_json(d[k]) for k in HEADLINE if k in d}
                                for c, d in per.items()}
    payload.update(outcomes(trajs))
    payload["instances"] = ctx["cases"]
    protocol, planner = ctx["protocol"], ctx["planner"]
    how = planner if protocol is None else f"{planner} under {protocol}"
    return payload, [console_table(f"constructs: {how}, {ctx['agents']}, "
                                   f"{values['observation']}", per)]
