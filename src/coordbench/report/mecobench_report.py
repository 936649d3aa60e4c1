"""MECoBench tables for a run directory, recomputed from its trajectories."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from coordbench.agents.team.protocols import get_protocol
from coordbench.analyses.household import tag_table
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, summarize
from coordbench.metrics.behaviour import TAG_RULES_VERSION
from coordbench.metrics.household import (
    KINDS,
    duplicate_grabs,
    hallucinated_completion,
    wrong_class_grabs,
)
from coordbench.suites.mecobench.suite import HEADLINE
from coordbench.suites.mecobench.suite import condition_values_of as condition_values

from .format import estimate_json, fmt, signed
from .section import Section

COLUMNS = ("SR", "CR", "AUC", "DOL", "CAR", "HFR", "spatial_error", "duplicate_grabs")


def collect(run: RunDir, conditions: list[str]) -> list[tuple[str, dict, dict[str, Estimate]]]:
    """Return (condition, spec, summary) for the household `conditions` with episodes."""
    return [(cond, run.conditions[cond], summarize(condition_values(run, cond), KINDS))
            for cond in conditions if run.episode_keys(cond)]


def model_usage(run: RunDir, conditions: list[str]) -> str:
    """Return markdown: model calls, tokens, cost and cache hits per condition, role and model."""
    from coordbench.core.trajectory import ModelCallEvent

    lines = []
    for cond in conditions:
        spec = run.conditions[cond]
        if spec.get("agents") != "llm":
            continue
        rows: dict[tuple[str, str], list[float]] = {}
        episodes = run.load_episodes(cond)
        for t in episodes:
            for c in t.steps(ModelCallEvent):
                r = rows.setdefault((c.role, c.model), [0, 0, 0, 0.0, 0, 0])
                r[0] += 1
                r[1] += c.prompt_tokens
                r[2] += c.completion_tokens
                r[3] += c.cost
                r[4] += c.cache_hit
                r[5] += c.parse_status == "failed"
        for (role, model), (calls, p, c, cost, hits, failed) in sorted(rows.items()):
            lines.append(f"| {spec['structure']} | {spec['team']} | {spec['protocol']} | {role} "
                         f"| {model} | {calls} | {p / len(episodes):,.0f} | "
                         f"{c / len(episodes):,.0f} | {cost:.4f} | {hits} | {failed} |")
    if not lines:
        return ""
    return "\n".join(["", "### Model usage (tokens per episode)", "",
                      "| structure | team | protocol | role | model | calls | prompt | "
                      "completion | cost ($) | cache hits | parse failures |",
                      "|---|---|---|---|---|---|---|---|---|---|---|", *lines]) + "\n"


def tags_and_failures(run: RunDir, conditions: list[str]) -> str:
    """Return markdown: behaviour tags with SR/CR with vs without (paper Table 2) and failure
    modes with their lift (rate in failed episodes / rate in successful ones, Table 22)."""
    lines: list[str] = []
    for cond in conditions:
        spec = run.conditions[cond]
        if not get_protocol(spec.get("protocol", "none")).talks:
            continue
        trajs = run.load_episodes(cond)
        if not trajs:
            continue
        rows = tag_table(trajs)
        if not any(r["episodes_with"] for r in rows):
            continue
        lines += ["", f"### Behaviour tags: {spec['structure']}, team {spec['team']}, "
                  f"{spec['protocol']}, {spec['agents']} (rules v{TAG_RULES_VERSION})", "",
                  "| tag | episodes with | messages/episode | SR with | SR without | delta SR | "
                  "delta CR |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            sr_w = "n/a" if r["SR_with"] is None else f"{r['SR_with']:.3f}"
            sr_o = "n/a" if r["SR_without"] is None else f"{r['SR_without']:.3f}"
            lines.append(f"| {r['tag']} | {r['share']:.2f} | {r['per_episode']:.2f} | {sr_w} | "
                         f"{sr_o} | {signed(r['delta_SR'])} | {signed(r['delta_CR'])} |")
    fail_lines = []
    for cond in conditions:
        spec = run.conditions[cond]
        trajs = run.load_episodes(cond)
        ok = [t for t in trajs if t.end and t.end.success]
        bad = [t for t in trajs if not (t.end and t.end.success)]
        cells = []
        for fn in (duplicate_grabs, hallucinated_completion, wrong_class_grabs):
            rate_bad = sum(bool(fn(t)) for t in bad) / len(bad) if bad else None
            rate_ok = sum(bool(fn(t)) for t in ok) / len(ok) if ok else None
            lift = (rate_bad / rate_ok) if rate_bad is not None and rate_ok else None
            cells.append(f"{'n/a' if rate_bad is None else f'{rate_bad:.2f}'} / "
                         f"{'n/a' if rate_ok is None else f'{rate_ok:.2f}'} / "
                         f"{'n/a' if lift is None else f'{lift:.1f}'}")
        fail_lines.append(f"| {spec['structure']} | {spec['team']} | {spec['protocol']} | "
                          f"{spec['agents']} | " + " | ".join(cells) + " |")
    if fail_lines:
        lines += ["", "### Failure modes (episodes: rate in failed / rate in successful / lift)",
                  "", "| structure | team | protocol | agents | duplicate grab | "
                  "hallucinated completion | object misidentification |",
                  "|---|---|---|---|---|---|---|", *fail_lines]
    return "\n".join(lines) + "\n" if lines else ""


def console_table(results: list[tuple[str, dict, dict[str, Estimate]]]) -> Table:
    """Return a rich table: one row per condition, mean ± 95% CI over cases."""
    table = Table(title="MECoBench household teams", title_justify="left")
    for col in ("structure", "team", "protocol", "agents", "cases", *COLUMNS):
        table.add_column(col, no_wrap=col in ("structure", "protocol"))
    for _, spec, s in results:
        table.add_row(spec["structure"], str(spec["team"]), spec["protocol"], spec["agents"],
                      str(s["SR"].n), *(fmt(s[k]) for k in COLUMNS))
    return table


def markdown(results: list[tuple[str, dict, dict[str, Estimate]]]) -> str:
    """Return the household section of a run report."""
    lines = ["## MECoBench household teams", "",
             "Mean over cases with a 95% interval: [Wilson] for SR, a t-interval clipped to "
             "[0, 1] for shares, ± t for counts; n/a where a metric does not apply "
             "(definitions: docs/household.md).", "",
             "| structure | team | protocol | agents | prior | source | cases | "
             + " | ".join(HEADLINE) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(HEADLINE)]
    for _, spec, s in results:
        lines.append(f"| {spec['structure']} | {spec['team']} | {spec['protocol']} | "
                     f"{spec['agents']} | {spec['prior']} | {spec['source']} | {s['SR'].n} | "
                     + " | ".join(fmt(s[k]) for k in HEADLINE) + " |")
    return "\n".join(lines) + "\n"


def section(run: RunDir, conditions: list[str]) -> Section:
    """Return the household section of a run report."""
    results = collect(run, conditions)
    if not results:
        return Section("MECoBench household teams")
    text = (markdown(results) + tags_and_failures(run, conditions)
            + model_usage(run, conditions))
    return Section("MECoBench household teams", text, [console_table(results)],
                   {cond: {"suite": "mecobench", "spec": spec,
                           "metrics": {k: estimate_json(e) for k, e in s.items()}}
                    for cond, spec, s in results})


def run_summary(run: RunDir, plan: Any, values: dict[str, Any]) -> tuple[dict, list]:
    """Return `mecobench run`'s --json object ({"cases", metric: estimate}) and its console
    table (a line instead when every episode errored)."""
    from coordbench.metrics.household import KINDS
    from coordbench.suites.mecobench.suite import SUITE


    ctx = plan.context
    # the cases played (a --limit sample), not whatever else the folder holds of the condition
    summary = summarize(condition_values(run, SUITE.condition(ctx["cond"]), ctx["cases"],
                                         ctx.get("keys")), KINDS)
    payload = {"cases": ctx["cases"], **{k: estimate_json(e) for k, e in summary.items()}}
    if not summary:  # every episode errored (provider failures, said as the command ends)
        return payload, ["no finished episode to summarize"]
    who = ctx["agents"] if ctx["seats"] is None else "mixed"
    table = Table(title=f"MECoBench {values['structure']}, team {values['team']}, "
                        f"{values['protocol']}, {who}, {values['prior']}")
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    table.add_column("n", justify="right")
    for k in (*HEADLINE, "tokens_per_step", "protocol_failures", "duplicate_grabs",
              "wrong_class_grabs", "hallucinated_completion", "steps"):
        table.add_row(k, fmt(summary[k]), str(summary[k].n))
    return payload, [table]
