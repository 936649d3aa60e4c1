"""`coordbench table RUN... --by model`: a leaderboard, models as rows, for every family.

A condition's *model* is what played it: its model alias (a leader's alias after a `+`), or,
for a team without a model, its agents or policy ("rule", "oracle", "greedy", ...). Its
*setting* is everything else of its manifest (structure, team, protocol, prior, task source,
seed, planner, ...): two conditions with the same setting played the same instances, so their
episodes pair by (setting, episode key).

Per family (suite) and model: each headline metric, the coordination profile, model tokens
and cost per episode, every one with its 95% interval over the model's episodes; and, against
the reference model, paired differences over the instances both played (success: the paired
difference with a bootstrap interval and McNemar's exact p; other metrics: the bootstrap
interval and Wilcoxon's p), with Holm's correction over the models compared. Where a model
played an instance several times (conditions that differ only in their seed), pass@k and
pass^k over its repeated trials (k: the fewest trials of an instance played at least twice).
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordbench.analyses.common import est
from coordbench.analyses.paired import holm, paired_metric, paired_success, repeated
from coordbench.core.rundir import RunDir
from coordbench.core.stats import estimate, few
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.errors import ConfigError
from coordbench.report.format import CONTRACT
from coordbench.runner.family import family, suite_object

FORMATS = ("md", "csv", "html")
# manifest fields that say who played, not what was played
WHO = frozenset({"suite", "model", "leader_model", "agents", "policy", "checkpoint", "seats",
                 "dials"})
# a setting field at this value means what a manifest without the field means
DEFAULTS = {"on_protocol_failure": "end"}
BINARY = frozenset({"SR", "success", "legal_rate", "hallucinated_completion"})
COST = ("tokens_per_episode", "cost_per_episode")


def model_of(spec: dict[str, Any]) -> str:
    """Return who played a condition: its model alias (with its leader's after a '+'), a
    mixed team's seats (`llm:A+rule`), else its agents or policy with its checkpoint's name
    (`learned:qmix-3`); imperfect minds add their dials (`rule[perception0.1]`)."""
    if spec.get("seats"):
        who = "+".join(s["kind"] if not s.get("arg") else f"{s['kind']}:{s['arg']}"
                       for s in spec["seats"])
    elif spec.get("model"):
        who = str(spec["model"]) + (f"+{spec['leader_model']}" if spec.get("leader_model")
                                    else "")
    else:
        who = str(spec.get("agents") or spec.get("policy") or "unknown")
        if spec.get("checkpoint"):
            who += f":{Path(str(spec['checkpoint'])).stem}"
    dials = spec.get("dials")
    if isinstance(dials, dict) and any(dials.values()):
        from coordbench.agents.team.dials import Dials

        who += f"[{Dials(**dials).label()}]"
    return who


def _success_key(values: dict[str, float | None]) -> str | None:
    return next((k for k in ("SR", "success") if values.get(k) is not None), None)


def _pass_k(cells: dict[tuple, dict[str, float | None]]) -> dict[str, Any] | None:
    """Return pass@k and pass^k of a model's repeated trials (instances that differ only in
    the seed), or None where no instance was played twice."""
    trials: dict[tuple, list[bool]] = {}
    for (setting, key), values in cells.items():
        sk = _success_key(values)
        if sk is None:
            continue
        instance = (tuple(x for x in setting if x[0] != "seed"), key)
        trials.setdefault(instance, []).append(bool(values[sk]))
    counts = [len(v) for v in trials.values() if len(v) >= 2]
    if not counts:
        return None
    return repeated({str(i): v for i, v in trials.items()}, min(counts))


def setting_of(spec: dict[str, Any]) -> tuple:
    """Return the condition's setting: its manifest without the fields that say who played,
    an unset field (None) and a field at its default being the same as an absent one (so a
    model's condition pairs with a rule team's whose manifest omits them)."""
    return tuple(sorted((k, repr(v)) for k, v in spec.items()
                        if k not in WHO and v is not None and DEFAULTS.get(k, ...) != v))


@dataclass
class Board:
    """One family's leaderboard: per model its metrics' estimates and its paired differences
    against the reference."""

    suite: str
    metrics: tuple[str, ...]
    reference: str
    models: list[str] = field(default_factory=list)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)
    paired: dict[str, dict[str, Any]] = field(default_factory=dict)
    repeats: dict[str, dict[str, Any]] = field(default_factory=dict)  # model -> pass@k, ^k


def _episode_values(suite: str, traj: Trajectory) -> dict[str, float | None]:
    from coordbench.metrics.profile import episode_profile

    obj = suite_object(suite)
    out: dict[str, float | None] = dict(obj.metrics(traj)) if obj is not None else {}
    try:
        out.update(episode_profile(traj))
    except ValueError:
        pass
    calls = traj.steps(ModelCallEvent)
    out["tokens_per_episode"] = float(sum(c.prompt_tokens + c.completion_tokens
                                          for c in calls))
    out["cost_per_episode"] = float(sum(c.cost for c in calls if not c.cache_hit))
    return out


def collect(runs: list[RunDir], reference: str | None = None) -> list[Board]:
    """Return one leaderboard per family over every condition of `runs`; ConfigError names a
    `reference` no family's conditions were played by."""
    from coordbench.metrics.profile import KEYS

    per: dict[str, dict[str, dict[tuple, dict[str, float | None]]]] = {}
    origin: dict[tuple, str] = {}
    runs = list({Path(r.path).resolve(): r for r in runs}.values())  # a run named twice: once
    for run in runs:
        for cond, spec in run.conditions.items():
            suite = str(spec.get("suite"))
            if family(suite) is None:
                continue
            model, setting = model_of(spec), setting_of(spec)
            where = f"{run.path}/{cond}"
            first = origin.setdefault((suite, model, setting), where)
            if first != where:  # two copies of one row would be counted, and paired, twice
                raise ConfigError(f"{first} and {where} hold the same row ({model}, one "
                                  "setting): pass each run once")
            cells = per.setdefault(suite, {}).setdefault(model, {})
            for key in run.episode_keys(cond):
                traj = run.load_episode(cond, key)
                cells[(setting, key)] = _episode_values(suite, traj)
    known = sorted({m for models in per.values() for m in models})
    if reference is not None and reference not in known:
        raise ConfigError(f"--reference {reference!r} played no condition of these runs; "
                          f"models: {', '.join(known) or 'none'}")
    boards = []
    for suite, models in per.items():
        f = family(suite)
        head = tuple(f.headline_metrics()) if f is not None else ()
        order = sorted(models, key=lambda m: (m != reference, m))
        ref = reference if reference in models else order[0]
        board = Board(suite, (*head, *KEYS, *COST), ref, order)
        for m in order:
            cells = models[m]
            board.episodes[m] = len(cells)
            board.rows[m] = {}
            for k in board.metrics:
                vals = [v[k] for v in cells.values() if v.get(k) is not None]
                board.rows[m][k] = est(estimate(vals, "binary" if k in BINARY else "mean")) \
                    if vals else None
        for m in order:
            rep = _pass_k(models[m])
            if rep is not None:
                board.repeats[m] = rep
        base = models[ref]
        for m in order:
            if m == ref:
                continue
            shared = [key for key in models[m] if key in base]
            diffs = {}
            for k in board.metrics:
                pairs = [(models[m][key].get(k), base[key].get(k)) for key in shared]
                pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
                if not pairs:
                    continue
                a, b = [x for x, _ in pairs], [y for _, y in pairs]
                diffs[k] = (paired_success([bool(x) for x in a], [bool(y) for y in b])
                            if k in BINARY else paired_metric(a, b))
            board.paired[m] = {"pairs": len(shared), "metrics": diffs}
        # Holm over the models compared, per metric
        for k in board.metrics:
            ms = [m for m in board.paired if k in board.paired[m]["metrics"]]
            adj = holm([board.paired[m]["metrics"][k].get("p") for m in ms])
            for m, p in zip(ms, adj, strict=True):
                board.paired[m]["metrics"][k]["p_holm"] = p
        boards.append(board)
    return boards


def _cell(e: dict[str, Any] | None) -> str:
    if e is None or e.get("mean") is None:
        return "n/a"
    half = e.get("ci95")
    return f"{e['mean']:.3g}" + (f" ± {half:.2g}" if half else "") + few(e.get("n"))


def _diff(d: dict[str, Any] | None) -> str:
    if d is None or d.get("delta") is None:
        return "n/a"
    p = d.get("p_holm", d.get("p"))
    return (f"{d['delta']:+.3g} [{d['lo']:+.3g}, {d['hi']:+.3g}]"
            + ("" if p is None else f" p={p:.3g}"))


def _lead(board: Board) -> str:
    return board.metrics[0] if board.metrics else "SR"


def markdown(boards: list[Board]) -> str:
    """Return every leaderboard as markdown: models as rows, each metric with its interval,
    then the paired differences against the reference (p: Holm-adjusted)."""
    out = []
    for b in boards:
        shown = [k for k in b.metrics if any(b.rows[m].get(k) for m in b.models)]
        out += [f"## {b.suite}: models", "", "| model | episodes | " + " | ".join(shown) + " |",
                "|---" * (len(shown) + 2) + "|"]
        out += [f"| {m} | {b.episodes[m]} | " + " | ".join(_cell(b.rows[m].get(k))
                                                          for k in shown) + " |"
                for m in b.models]
        if b.repeats:
            out += ["", "Repeated trials (instances played with several seeds):", "",
                    "| model | k | instances | pass@k | pass^k |", "|---|---|---|---|---|"]
            out += [f"| {m} | {r['k']} | {r['instances']} | {r['pass@k']:.3f} | "
                    f"{r['pass^k']:.3f} |" for m, r in b.repeats.items()]
        if b.paired:
            lead = [k for k in shown if k in (_lead(b), "CR", "CS", "return", "redundancy",
                                              "tokens_per_episode")]
            out += ["", f"Paired against {b.reference} over the instances both played "
                        "(difference, 95% bootstrap interval, Holm-adjusted p: McNemar's "
                        "exact test for success, Wilcoxon's for the others):", "",
                    "| model | pairs | " + " | ".join(lead) + " |", "|---" * (len(lead) + 2) + "|"]
            out += [f"| {m} | {p['pairs']} | " + " | ".join(_diff(p["metrics"].get(k))
                                                           for k in lead) + " |"
                    for m, p in b.paired.items()]
        out.append("")
    return "\n".join(out) + "\n"


def csv_text(boards: list[Board]) -> str:
    """Return every model's metrics and paired differences as long-format CSV."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["suite", "model", "metric", "mean", "ci95", "n", "reference", "delta", "lo",
                "hi", "p", "p_holm", "pairs"])
    for b in boards:
        for m in b.models:
            for k in b.metrics:
                e = b.rows[m].get(k)
                if e is None:
                    continue
                d = b.paired.get(m, {}).get("metrics", {}).get(k, {})
                w.writerow([b.suite, m, k, e["mean"], e["ci95"], e["n"], b.reference,
                            d.get("delta"), d.get("lo"), d.get("hi"), d.get("p"),
                            d.get("p_holm"), b.paired.get(m, {}).get("pairs")])
    return buf.getvalue()


def html_text(boards: list[Board]) -> str:
    """Return the leaderboards as one self-contained HTML page."""
    parts = ["<!doctype html><meta charset='utf-8'><title>coordbench models</title>"
             "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px}</style>"]
    for b in boards:
        shown = [k for k in b.metrics if any(b.rows[m].get(k) for m in b.models)]
        parts.append(f"<h2>{html.escape(b.suite)}: models</h2><table><tr><th>model</th>"
                     "<th>episodes</th>" + "".join(f"<th>{html.escape(k)}</th>" for k in shown)
                     + "</tr>")
        for m in b.models:
            parts.append(f"<tr><td>{html.escape(m)}</td><td>{b.episodes[m]}</td>" + "".join(
                f"<td>{html.escape(_cell(b.rows[m].get(k)))}</td>" for k in shown) + "</tr>")
        parts.append("</table>")
        if b.paired:
            parts.append(f"<p>Paired against {html.escape(b.reference)} (Holm-adjusted p)</p>"
                         "<table><tr><th>model</th><th>pairs</th>" + "".join(
                             f"<th>{html.escape(k)}</th>" for k in shown) + "</tr>")
            for m, p in b.paired.items():
                parts.append(f"<tr><td>{html.escape(m)}</td><td>{p['pairs']}</td>" + "".join(
                    f"<td>{html.escape(_diff(p['metrics'].get(k)))}</td>" for k in shown)
                    + "</tr>")
            parts.append("</table>")
    return "\n".join(parts) + "\n"


def json_rows(boards: list[Board]) -> list[dict[str, Any]]:
    """Return one object per (family, model): "model", "suite", "episodes", each metric as
    {"mean", "ci95", "n", "lo", "hi"}, and "paired" differences against "reference"."""
    out = []
    for b in boards:
        for m in b.models:
            row: dict[str, Any] = {"model": m, "suite": b.suite, "episodes": b.episodes[m],
                                   "reference": b.reference}
            for k in b.metrics:
                e = b.rows[m].get(k)
                row[k] = None if e is None else {x: e.get(x) for x in CONTRACT}
            row["repeats"] = b.repeats.get(m)
            p = b.paired.get(m)
            row["paired"] = None if p is None else {
                "pairs": p["pairs"], **{k: {x: d.get(x) for x in ("delta", "lo", "hi", "p",
                                                                   "p_holm", "test")}
                                        for k, d in p["metrics"].items()}}
            out.append(row)
    return out
