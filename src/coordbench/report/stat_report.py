"""STAT tables: a rich console table and a markdown report, both from saved trajectories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, bootstrap_diff_ci, summarize, welch_test
from coordbench.metrics.stat import KINDS
from coordbench.report.stat_reference import BEST_LEARNED_FINAL, RELEASED_ENV_RETURNS
from coordbench.suites.stat.suite import condition_metrics

from .format import estimate_json
from .section import Section

TABLE_METRICS = ("return", "length", "conflict_rate", "conflicts_per_task", "throughput",
                 "forced_idle_rate", "decision_active_frac", "diversity_per_decision_agent")


@dataclass
class ConditionResult:
    """One condition's per-episode values and their summaries."""

    condition: str
    spec: dict
    values: dict[str, list[float]]
    summary: dict[str, Estimate]


def collect(run: RunDir, conditions: list[str], episodes: int | None = None
            ) -> list[ConditionResult]:
    """Return the results of the STAT `conditions` of `run`, recomputed from trajectories."""
    out = []
    for cond in conditions:
        spec = run.conditions[cond]
        values = condition_metrics(run, cond, episodes)
        if values:
            out.append(ConditionResult(cond, spec, values, summarize(values, KINDS)))
    return out


def policy_label(spec: dict) -> str:
    """Return how a condition's policy is shown: a team of minds names its protocol, a
    model-driven one its model too."""
    if spec.get("model"):
        return f"llm {spec['model']} ({spec.get('protocol', 'none')})"
    if "protocol" in spec:
        return f"{spec['policy']} ({spec['protocol']})"
    return spec["policy"]


def _ref(cfg: str, policy: str) -> str:
    ref = RELEASED_ENV_RETURNS.get(cfg, {}).get(policy)
    return f"{ref[0]:.1f} ± {ref[1]:.1f}" if ref else "-"


def console_table(results: list[ConditionResult], title: str = "STAT scripted allocators") -> Table:
    """Return a rich table: one row per condition, mean ± 95% CI per metric."""
    table = Table(title=title, title_justify="left")
    for col in ("config", "policy", "n", "return", "released env", "H", "conflict rate",
                "throughput", "DA frac", "D/DA"):
        name_col = col in ("config", "policy")
        table.add_column(col, justify="left" if name_col else "right", no_wrap=name_col)
    for r in results:
        s = r.summary
        table.add_row(r.spec["config"], policy_label(r.spec), str(s["return"].n),
                      s["return"].fmt(1), _ref(r.spec["config"], r.spec["policy"]),
                      s["length"].fmt(1), s["conflict_rate"].fmt(4), s["throughput"].fmt(4),
                      s["decision_active_frac"].fmt(3),
                      s["diversity_per_decision_agent"].fmt(3))
    table.caption = ("H: episode length (steps); DA frac: the share of agents free to choose "
                     "a task, per step; D/DA: distinct tasks held after each step over the "
                     "agents free to choose before it, summed over the episode (STAT Table 9's "
                     "diversity); mean ± 95% t half-width over n episodes")
    table.caption_justify = "left"
    return table


def markdown(results: list[ConditionResult]) -> str:
    """Return the STAT section: tables with 95% CIs and Welch tests against random play."""
    lines = [
        "## STAT: returns",
        "",
        "± is the half-width of a 95% t-interval over episodes; success has a 95% Wilson "
        "interval [lo, hi]; n = episodes.",
        "",
        "| config | policy | n | return | released env | best learned (paper) | H | success |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cfg, pol, s = r.spec["config"], r.spec["policy"], r.summary
        best = BEST_LEARNED_FINAL.get(cfg)
        paper = f"{best[0]:.1f} ({best[1]})" if best else "-"
        lines.append(f"| {cfg} | {policy_label(r.spec)} | {s['return'].n} | "
                     f"{s['return'].fmt(1)} | {_ref(cfg, pol)} | {paper} | "
                     f"{s['length'].fmt(1)} | {s['success'].fmt(2)} |")
    lines += ["", "### STAT coordination diagnostics", "",
              "| config | policy | " + " | ".join(TABLE_METRICS[2:]) + " | D/DA (post) |",
              "|---|---|" + "---|" * (len(TABLE_METRICS) - 1)]
    for r in results:
        s = r.summary
        cells = [s[k].fmt(4) for k in TABLE_METRICS[2:]]
        cells.append(s["diversity_per_decision_agent_post"].fmt(4))
        lines.append(f"| {r.spec['config']} | {policy_label(r.spec)} | " + " | ".join(cells)
                     + " |")
    teams = [r for r in results if "protocol_failures" in r.summary]
    if teams:
        lines += ["", "### STAT: model-driven teams", "",
                  "| config | team | protocol failures / episode | model tokens / step |",
                  "|---|---|---|---|"]
        for r in teams:
            lines.append(f"| {r.spec['config']} | {policy_label(r.spec)} | "
                         f"{r.summary['protocol_failures'].fmt(2)} | "
                         f"{r.summary['tokens_per_step'].fmt(1)} |")
    lines += ["", "### STAT: each policy against random valid play (return)", "",
              "| config | policy | difference | bootstrap 95% CI | Welch t | df | p |",
              "|---|---|---|---|---|---|---|"]
    for r in results:
        base = next((b for b in results if b.spec["policy"] == "random"
                     and b.spec["config"] == r.spec["config"]
                     and b.spec["layouts"] == r.spec["layouts"]), None)
        if base is None or base is r:
            continue
        a, b = r.values["return"], base.values["return"]
        if len(a) < 2 or len(b) < 2:
            continue
        w = welch_test(a, b)
        d, lo, hi = bootstrap_diff_ci(a, b)
        lines.append(f"| {r.spec['config']} | {policy_label(r.spec)} | {d:+.2f} | "
                     f"[{lo:+.2f}, {hi:+.2f}] | {w.t:.2f} | {w.df:.1f} | {w.p:.2g} |")
    lines += ["", "Definitions of every diagnostic: docs/stat.md (section Diagnostics).", ""]
    return "\n".join(lines)


def section(run: RunDir, conditions: list[str], episodes: int | None = None) -> Section:
    """Return the STAT section of a run report."""
    results = collect(run, conditions, episodes)
    return Section("STAT", markdown(results) if results else "",
                   [console_table(results)] if results else [],
                   {r.condition: {"suite": "stat", "spec": r.spec,
                                  "metrics": {k: estimate_json(e) for k, e in r.summary.items()}}
                    for r in results})


def run_summary(run: RunDir, plan: Any, values: dict[str, Any]) -> tuple[dict, list]:
    """Return `stat eval`'s --json object ({metric: estimate}) and its console table."""
    spec, episodes = plan.context["spec"], values["episodes"]
    summary = summarize(condition_metrics(run, spec.condition, episodes), KINDS)
    payload = {k: estimate_json(e) for k, e in summary.items()}
    table = console_table(collect(run, [spec.condition], episodes),
                          title=f"STAT {values['config']} {plan.context['policy']}")
    return payload, [table]
