"""MECoBench tables for a run directory, recomputed from its trajectories."""

from __future__ import annotations

from rich.table import Table

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate
from coordbench.suites.mecobench.eval import HEADLINE, condition_values, summarize

COLUMNS = ("SR", "CR", "AUC", "DOL", "CAR", "HFR", "spatial_error", "duplicate_grabs")


def collect(run: RunDir) -> list[tuple[dict, dict[str, Estimate]]]:
    """Return (spec, summary) for every MECoBench condition of `run`."""
    out = []
    for cond, spec in run.conditions.items():
        if cond.startswith("mecobench_") and run.episode_keys(cond):
            out.append((spec, summarize(condition_values(run, cond))))
    return out


def _fmt(e: Estimate) -> str:
    return "n/a" if e.n == 0 else e.fmt(3)


def console_table(results: list[tuple[dict, dict[str, Estimate]]]) -> Table:
    """Return a rich table: one row per condition, mean ± 95% CI over cases."""
    table = Table(title="MECoBench household teams", title_justify="left")
    for col in ("structure", "team", "protocol", "agents", "cases", *COLUMNS):
        table.add_column(col, no_wrap=col in ("structure", "protocol"))
    for spec, s in results:
        table.add_row(spec["structure"], str(spec["team"]), spec["protocol"], spec["agents"],
                      str(s["SR"].n), *(_fmt(s[k]) for k in COLUMNS))
    return table


def markdown(results: list[tuple[dict, dict[str, Estimate]]]) -> str:
    """Return the household section of a run report."""
    lines = ["## MECoBench household teams", "",
             "Mean ± 95% t-interval over cases; n/a where a metric does not apply "
             "(definitions: docs/household.md).", "",
             "| structure | team | protocol | agents | prior | source | cases | "
             + " | ".join(HEADLINE) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(HEADLINE)]
    for spec, s in results:
        lines.append(f"| {spec['structure']} | {spec['team']} | {spec['protocol']} | "
                     f"{spec['agents']} | {spec['prior']} | {spec['source']} | {s['SR'].n} | "
                     + " | ".join(_fmt(s[k]) for k in HEADLINE) + " |")
    return "\n".join(lines) + "\n"
