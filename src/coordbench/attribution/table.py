"""Who and when, per condition: how often each seat is responsible for a failed episode and
at which step, from the stored attributions (pure functions of their JSON)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from coordbench.core.stats import wilson_ci


def by_condition(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return {condition: {"episodes": n attributed, "unexplained": n with no responsible
    seat, "seats": {seat: {"responsible": {"mean", "ci95", "n", "lo", "hi"}, "blame": mean
    share, "step_median": median decisive step, "step_share_median": median step over the
    episode's steps}}}} over the stored attributions (refusals left out)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        if "refused" not in r:
            groups[str(r.get("condition"))].append(r)
    out: dict[str, dict[str, Any]] = {}
    for cond, rows in sorted(groups.items()):
        seats = sorted({x["seat"] for r in rows for x in r["responsible"]},
                       key=lambda s: int(s.removeprefix("agent_")))
        table: dict[str, Any] = {}
        for seat in seats:
            hits = [next((x for x in r["responsible"] if x["seat"] == seat), None)
                    for r in rows]
            found = [(h, r) for h, r in zip(hits, rows, strict=True) if h is not None]
            est = wilson_ci(len(found), len(rows)).as_dict()
            est.pop("interval", None)
            table[seat] = {
                "responsible": est,
                "blame": sum(h.get("blame", 0.0) for h, _ in found) / len(rows),
                "step_median": statistics.median(h["step"] for h, _ in found),
                "step_share_median": statistics.median(
                    h["step"] / max(int(r.get("steps") or 1), 1) for h, r in found)}
        out[cond] = {"episodes": len(rows),
                     "unexplained": sum(not r["responsible"] for r in rows),
                     "seats": table}
    return out


def markdown(results: list[dict[str, Any]]) -> str:
    """Return the "who and when" section: one table per condition (empty text when the run
    has no attribution)."""
    if not results:
        return ""
    lines = ["## Who and when (counterfactual attribution)", "",
             "Each failed episode was replayed with one seat taken over by a reference from "
             "a step on (docs/attribution.md). *Responsible*: the seat's takeover from the "
             "first step rescues the episode; *step*: the last step from which it still does.",
             ""]
    refused = [r for r in results if "refused" in r]
    for cond, row in by_condition(results).items():
        lines += [f"### {cond}", "",
                  f"{row['episodes']} failed episodes attributed; {row['unexplained']} "
                  "rescued by no single seat.", ""]
        if row["seats"]:
            lines += ["| seat | responsible | mean blame | median step | median step / steps |",
                      "|---|---|---|---|---|"]
            for seat, s in row["seats"].items():
                e = s["responsible"]
                lines.append(f"| {seat} | {e['mean']:.0%} [{e['lo']:.0%}, {e['hi']:.0%}] "
                             f"(n={e['n']}) | {s['blame']:.2f} | {s['step_median']:g} | "
                             f"{s['step_share_median']:.2f} |")
            lines.append("")
    if refused:
        lines += [f"{len(refused)} episode(s) could not be attributed: their replay differs "
                  f"from the recording (first: {refused[0]['refused']})", ""]
    return "\n".join(lines)
