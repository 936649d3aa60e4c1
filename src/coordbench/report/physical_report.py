"""Physical-suite tables for a run directory, recomputed from its trajectories."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, rate_ci
from coordbench.core.trajectory import Trajectory
from coordbench.envs.physical.tasks import get_task
from coordbench.metrics.physical import episode_metrics, failure_breakdown, summarize

from .format import estimate_json, pct
from .section import Section

MODEL_KEYS = ("model_calls", "tokens", "protocol_failures")  # per rollout, model-driven teams


def main_summary(trs: list[Trajectory]) -> dict[str, Any]:
    """Return {"success": Estimate, "phases": {"p1".."p3": Estimate}, ...diagnostics}; for a
    model-driven team also model calls, tokens and protocol failures per rollout."""
    s = summarize(trs)
    out = {"success": s["success"], "phases": {f"p{p}": s[f"p{p}"] for p in (1, 2, 3)},
           "failure": failure_breakdown(trs),
           "coupling": {k: s[k] for k in ("drops", "robot_collisions", "partner_lag_s")},
           "steps": s["steps"]}
    out.update({k: s[k] for k in MODEL_KEYS if k in s})
    return out


def phase_summary(task_name: str, by_phase: dict[int, list[Trajectory]]) -> dict[str, Any]:
    """Return per-phase success and the collaborative vs non-collaborative averages."""
    task = get_task(task_name)
    per = {f"p{k}": rate_ci([episode_metrics(t)["success"] for t in trs])
           for k, trs in by_phase.items()}
    groups: dict[str, list[float]] = {"collaborative": [], "non_collaborative": []}
    for k, trs in by_phase.items():
        key = "collaborative" if task.phases[k - 1].collaborative else "non_collaborative"
        groups[key].extend(episode_metrics(t)["success"] for t in trs)
    return {"phases": per, **{k: rate_ci(v) if v else Estimate(float("nan"), None, 0)
                             for k, v in groups.items()}}


def success_rates(trs: list[Trajectory]) -> np.ndarray:
    """Return the per-rollout success array."""
    return np.array([episode_metrics(t)["success"] for t in trs])


def main_json(s: dict[str, Any]) -> dict[str, Any]:
    """Return a main summary as JSON (the `physical eval --json` entry of one task)."""
    return {"success": estimate_json(s["success"]),
            "phases": {k: estimate_json(v) for k, v in s["phases"].items()},
            "failure": s["failure"],
            "coupling": {k: estimate_json(v) for k, v in s["coupling"].items()},
            **{k: estimate_json(s[k]) for k in MODEL_KEYS if k in s}}


def policy_name(spec: dict[str, Any]) -> str:
    """Return how a condition's policy is shown (an llm team with its model and
    controller)."""
    if spec.get("policy") == "llm":
        return f"llm {spec.get('model')} ({spec.get('controller')})"
    return str(spec["policy"])


def phase_json(ps: dict[str, Any]) -> dict[str, Any]:
    """Return a phase-level summary as JSON."""
    return {"phases": {k: estimate_json(v) for k, v in ps["phases"].items()},
            "collaborative": estimate_json(ps["collaborative"]),
            "non_collaborative": estimate_json(ps["non_collaborative"])}


def console_table(title: str, rows: dict[tuple[str, str], dict[str, Any]]) -> Table:
    """Return a rich table: one row per (task, policy) of main-protocol results (JSON)."""
    table = Table(title=title, title_justify="left")
    for col in ("task", "policy", "success", "p1", "p2", "p3", "fails at p1/p2/p3", "drops"):
        table.add_column(col, justify="left" if col in ("task", "policy") else "right")
    for (task, policy), e in rows.items():
        f = e["failure"]
        table.add_row(task, policy, pct(e["success"]),
                      *(pct(e["phases"][p]) for p in ("p1", "p2", "p3")),
                      f"{f['fail_p1']:.0%}/{f['fail_p2']:.0%}/{f['fail_p3']:.0%}",
                      f"{e['coupling']['drops']['mean']:.2f}")
    return table


def section(run: RunDir, conditions: list[str]) -> Section:
    """Return the physical section: main-protocol success and phase rates per task and
    policy, and phase-level success where it was run."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    phases: dict[tuple[str, str], dict[int, list[Trajectory]]] = {}
    results = {}
    for cond in conditions:
        spec, trs = run.conditions[cond], run.load_episodes(cond)
        if not trs:
            continue
        key = (spec["task"], policy_name(spec))
        if spec["protocol"] == "main":
            rows[key] = main_json(main_summary(trs))
            results[cond] = {"suite": "physical", "spec": spec, "metrics": {
                k: estimate_json(e) for k, e in summarize(trs).items()}}
        else:
            phases.setdefault(key, {})[int(spec["protocol"][-1])] = trs
            results[cond] = {"suite": "physical", "spec": spec, "metrics": {
                "success": estimate_json(rate_ci(success_rates(trs)))}}
    if not rows and not phases:
        return Section("physical collaboration")
    lines = ["## Physical collaboration", "",
             "Success and cumulative phase rates over rollouts (seeds 1..N) with 95% Wilson "
             "intervals; drops per rollout (definitions: docs/physical.md).", "",
             "| task | policy | n | success | p1 | p2 | p3 | drops |",
             "|---|---|---|---|---|---|---|---|"]
    for (task, policy), e in rows.items():
        cells = [e["success"], *e["phases"].values()]
        lines.append(f"| {task} | {policy} | {e['success']['n']} | "
                     + " | ".join(pct(c) for c in cells)
                     + f" | {e['coupling']['drops']['mean']:.2f} |")
    if phases:
        lines += ["", "Phase level (from the demonstrations' phase starts):", "",
                  "| task | policy | phase 1 | phase 2 | phase 3 | collaborative | "
                  "non-collaborative |", "|---|---|---|---|---|---|---|"]
        for (task, policy), by_phase in phases.items():
            ps = phase_json(phase_summary(task, by_phase))
            cells = [ps["phases"].get(f"p{k}") for k in (1, 2, 3)]
            lines.append(f"| {task} | {policy} | "
                         + " | ".join("n/a" if c is None else pct(c) for c in cells)
                         + f" | {pct(ps['collaborative'])} | {pct(ps['non_collaborative'])} |")
    tables = [console_table("physical collaboration", rows)] if rows else []
    return Section("physical collaboration", "\n".join(lines) + "\n", tables, results)


def run_summary(run: RunDir, plan: Any, values: dict[str, Any]) -> tuple[dict, list]:
    """Return `physical eval`'s --json object ({task: success and phase rates, the
    phase-level rates with --phase-level, the errored episodes of a model-driven team}) and
    its console lines."""
    from coordbench.suites.physical.suite import LLM, SUITE

    ctx = plan.context
    main = {s.task: (s, n) for _, s, n in plan.items if s.protocol == "main"}
    payload: dict[str, Any] = {}
    for name in ctx["names"]:
        spec, n = main[name]
        cond = SUITE.condition(spec)
        # episodes a provider failure errored (or the cost limit cut) are not results
        saved = set(run.episode_keys(cond))
        trs = [run.load_episode(cond, c.key) for c in SUITE.cases(spec, n) if c.key in saved]
        entry = main_json(main_summary(trs)) if trs else {}
        if ctx["policy"] == LLM:
            entry["errored"] = len(run.errored_keys(cond))
        if values["phase_level"]:
            by_phase = {s.phase: [run.load_episode(SUITE.condition(s), c.key)
                                  for c in SUITE.cases(s, k)]
                        for _, s, k in plan.items if s.task == name and s.phase}
            entry["phase_level"] = phase_json(phase_summary(name, by_phase))
        payload[name] = entry
    robots = "" if ctx["embodiment"] == "cobot" else f" ({ctx['embodiment']} robots)"
    shown: list[Any] = [console_table(
        f"physical{robots}: {ctx['shown']}, seeds 1..{values['rollouts']}",
        {(name, ctx["shown"]): e for name, e in payload.items() if "success" in e})]
    for name, e in payload.items():
        if "phase_level" in e:
            pl = e["phase_level"]
            shown.append(f"{name} phase level: " + ", ".join(
                f"{k} {pct(v)}" for k, v in pl["phases"].items()) +
                f"; collaborative {pct(pl['collaborative'])}, non-collaborative "
                f"{pct(pl['non_collaborative'])}")
    return payload, shown
