"""`coordbench reproduce metrics`: does each metric detect what it names?

Every family's rule minds are played with one failure injected at a time (the dials of
`agents.team.dials`) at rates from 0 to 0.5, on the same cases at every rate. For each injected
failure the metric that names it must move with the rate (its least-squares slope on the
rate has the named sign, with the whole 95% interval on that side of 0), and where it is a
direct count of the failure it must give the injected rate back (the injected rate inside
the 95% interval of the rate it implies, at every rate). The other metrics should move
little: how much each one does is reported as the change from rate 0 to the highest rate
with Welch's interval (the sensitivity/specificity table).

CoCoBench's Figure 5 check (are the four construct scores distinct?) is run on the oracle's
trajectories with each construct's violations injected independently, at their own random
rate per trajectory: moving work from one agent to another (D1), a put refused by a closed
goal container (D2), a lost grab of the shared knife (D3) and a put refused by a full buffer
(D4), each rewriting an action of the trajectory that none of the other scores reads. If the
scores are distinct, each responds to its own violations only and the cross-applied
correlations stay near 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.analyses.common import correlation, mean_diff, ols_slope
from coordbench.core.rundir import RunDir
from coordbench.core.stats import wilson_ci
from coordbench.core.trajectory import ActionRecord, HouseholdStepEvent, Trajectory

from .plots import heatmap, lines, value_grid
from .study import Episodes, Finding, Item, Options, Study, show, table

PAPER = "metrics"
TITLE = "Metric validity: every metric against injected failures"
RATES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
QUICK_RATES = (0.0, 0.25, 0.5)


@dataclass(frozen=True)
class Probe:
    """One injected failure of one family: the dial, the metric that names the failure and
    the direction it must move (+1 up, -1 down), how a direct count gives the rate back
    (None: the metric is not a direct count), and where it is played."""

    family: str
    failure: str
    metric: str
    sign: int
    recover: str | None
    setting: str

    @property
    def id(self) -> str:
        """Return the probe's name, `family/failure`."""
        return f"{self.family}/{self.failure}"


PROBES = (
    Probe("household", "protocol_violation", "protocol_failures", +1, "per_decision",
          "parallel, 2 agents, broadcast"),
    Probe("household", "hallucination", "hallucinated_completion", +1, "false_done",
          "parallel, 2 agents, broadcast"),
    Probe("household", "perception", "wrong_class_grabs", +1, None,
          "parallel, 2 agents, broadcast"),
    Probe("household", "message_loss", "duplicate_grabs", +1, None,
          "parallel, 3 agents, broadcast"),
    Probe("household", "contention", "CAR", +1, None, "parallel, 2 agents, broadcast"),
    Probe("household", "handover_slip", "HFR", +1, "hfr", "sequential, 2 agents, broadcast"),
    Probe("constructs", "protocol_violation", "protocol_failure", +1, "ends_per_decision",
          "rep240 subset, central planner"),
    Probe("constructs", "hallucination", "normal_stop", +1, "ends_per_decision",
          "rep240 subset, central planner"),
    Probe("constructs", "perception", "invalid_action_ratio", +1, None,
          "rep240 subset, central planner"),
    Probe("constructs", "message_loss", "occupancy_conflict", +1, None,
          "rep240 subset, decentralized with broadcast"),
    Probe("stat", "message_loss", "conflict_rate", +1, None, "3A-12T-10x6, broadcast"),
    Probe("stat", "perception", "throughput", -1, None, "3A-12T-10x6, broadcast"),
)
# the per-episode metrics each family's table shows (the probes' metrics among them)
SHOWN = {
    "household": ("SR", "CR", "AUC", "protocol_failures", "hallucinated_completion",
                  "wrong_class_grabs", "duplicate_grabs", "CAR", "HFR", "DOL",
                  "tokens_per_step"),
    "constructs": ("SR", "CS", "legal_rate", "invalid_action_ratio", "protocol_failure",
                   "normal_stop", "occupancy_conflict", "C_D1", "C_D2", "C_D3", "C_D4"),
    "stat": ("return", "throughput", "conflict_rate", "conflicts_per_task",
             "forced_idle_rate", "diversity_per_decision_agent"),
}
STAT_CONFIG = "3A-12T-10x6"


def rates(options: Options) -> tuple[float, ...]:
    """Return the injected rates the study plays."""
    return QUICK_RATES if options.quick else RATES


def sizes(options: Options) -> dict[str, int]:
    """Return the cases per (probe, rate) of each family (constructs: the whole rep240)."""
    if options.quick:
        return {"household": 16, "constructs": 240, "stat": 12}
    return {"household": 48, "constructs": 240, "stat": 40}


def _dials(probe: Probe, rate: float):
    from coordbench.agents.team.dials import Dials

    return Dials(**{probe.failure: rate})


def _condition(probe: Probe, rate: float, options: Options) -> tuple[Any, Any, int | None]:
    """Return the (suite, condition, limit) that plays `probe` at `rate`."""
    n = sizes(options)[probe.family]
    if probe.family == "household":
        from coordbench.suites.mecobench.episode import HouseholdSpec
        from coordbench.suites.mecobench.suite import SUITE, mecobench_condition

        structure = "sequential" if probe.failure == "handover_slip" else "parallel"
        team = 3 if probe.failure == "message_loss" else 2
        spec = HouseholdSpec(structure, team, "broadcast", "rule", dials=_dials(probe, rate))
        return SUITE, mecobench_condition(None, "v1", spec), n
    if probe.family == "constructs":
        from coordbench.suites.constructs.episode import ConstructSpec
        from coordbench.suites.constructs.suite import SUITE, ConstructCondition

        planner = "decentralized_comm" if probe.failure == "message_loss" else "central"
        spec = ConstructSpec(planner, "rule", dials=_dials(probe, rate))
        return SUITE, ConstructCondition(spec, "rep240", None, None, None), \
            (n if n < 240 else None)
    from coordbench.suites.stat.suite import SUITE, StatEvalSpec

    return SUITE, StatEvalSpec(STAT_CONFIG, "rule", protocol="broadcast",
                               dials=_dials(probe, rate)), n


def _oracle_condition() -> tuple[Any, Any, None]:
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.suite import SUITE, ConstructCondition

    return SUITE, ConstructCondition(ConstructSpec("decentralized", "oracle"), "rep240"), None


def _keys(options: Options) -> list[tuple[str, float]]:
    return [(p.id, r) for p in PROBES for r in rates(options)]


def _probe(pid: str) -> Probe:
    return next(p for p in PROBES if p.id == pid)


def _planned(options: Options) -> list[tuple[str, tuple]]:
    """Return (label, (suite, condition, limit)) of every condition the study plays, each
    once (probes of one family share their rate-0 condition)."""
    items = [(f"{pid} {r:g}", _condition(_probe(pid), r, options))
             for pid, r in _keys(options)]
    items.append(("constructs oracle", _oracle_condition()))
    seen, unique = set(), []
    for label, (suite, cond, limit) in items:
        name = suite.condition(cond)
        if name not in seen:
            seen.add(name)
            unique.append((label, (suite, cond, limit)))
    return unique


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition, limit) items the study plays: every probe at every
    rate, and the oracle's construct trajectories for the Figure 5 check."""
    return [item for _, item in _planned(options)]


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [label for label, _ in _planned(options)]


def resources(options: Options) -> None:
    """Return None: the study plays rule minds and the oracle only."""
    return None


def episodes(run: RunDir, options: Options) -> Episodes:
    """Return the study's episodes by key ((probe id, rate), or "oracle")."""
    names = {}
    for pid, r in _keys(options):
        suite, cond, _ = _condition(_probe(pid), r, options)
        names[(pid, r)] = suite.condition(cond)
    suite, cond, _ = _oracle_condition()
    names["oracle"] = suite.condition(cond)
    return Episodes(run, names)


# -- the metrics of one episode --------------------------------------------------------------
def _household_metrics(traj: Trajectory) -> dict[str, float | None]:
    from coordbench.metrics.household import episode_metrics

    return episode_metrics(traj)


def _construct_metrics(traj: Trajectory) -> dict[str, float | None]:
    from coordbench.metrics.constructs import episode_metrics, failure_taxonomy, termination_key

    out = dict(episode_metrics(traj))
    end = termination_key(traj)
    out["protocol_failure"] = float(end == "protocol_failure")
    out["normal_stop"] = float(end == "normal_stop")
    out["occupancy_conflict"] = float(failure_taxonomy(traj)["occupancy_conflict"])
    return out


def _stat_metrics(traj: Trajectory) -> dict[str, float | None]:
    from coordbench.metrics.stat import arrays_from_trajectory, episode_metrics

    return {k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
            for k, v in episode_metrics(arrays_from_trajectory(traj)).items()}


METRICS: dict[str, Callable[[Trajectory], dict[str, float | None]]] = {
    "household": _household_metrics, "constructs": _construct_metrics, "stat": _stat_metrics}


def _values(trajs: Sequence[Trajectory], family: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for t in trajs:
        for k, v in METRICS[family](t).items():
            if v is not None:
                out.setdefault(k, []).append(float(v))
    return out


# -- direct counts: the rate a metric gives back ---------------------------------------------
def _decisions(trajs: Sequence[Trajectory]) -> int:
    """Return the agent decisions of household episodes (every recorded action)."""
    return sum(len(e.actions) for t in trajs for e in t.steps(HouseholdStepEvent))


def recovered(probe: Probe, trajs: Sequence[Trajectory], base: Sequence[Trajectory]
              ) -> dict[str, Any] | None:
    """Return the rate the probe's direct count implies, with its 95% Wilson interval
    ({"mean", "lo", "hi", "count", "n"}), or None where the metric is no direct count.

    per_decision: protocol failures per agent decision; false_done: `done` declarations made
    while subgoals remained, per decision; ends_per_decision: episodes ended by the failure
    per planner decision (an episode ends at its first one, so this is the maximum-likelihood
    rate; the decision that stopped a planner believing the work done records no step, and
    is counted; the rate-0 episodes' own ends are taken out as for hfr); hfr: a forced slip
    fails a handover that would have succeeded, so HFR = h0 + (1 - h0) p and
    p = (HFR - h0)/(1 - h0), h0 the rate-0 HFR.
    """
    if probe.recover is None:
        return None
    if probe.recover == "per_decision":
        from coordbench.metrics.household import protocol_failures

        k, n = sum(protocol_failures(t) for t in trajs), _decisions(trajs)
    elif probe.recover == "false_done":
        k = sum(1 for t in trajs for e in t.steps(HouseholdStepEvent)
                for a in e.actions if a.action == "done" and e.completion < 1.0)
        n = _decisions(trajs)
    elif probe.recover == "ends_per_decision":
        from coordbench.metrics.constructs import termination_key

        def ends(ts: Sequence[Trajectory]) -> tuple[int, int]:
            k = sum(termination_key(t) == probe.metric for t in ts)
            # a protocol failure's step is recorded; a planner that believes the work done
            # ends the episode before its step, so that decision adds one
            return k, sum(len(t.steps(HouseholdStepEvent)) for t in ts) \
                + (k if probe.metric == "normal_stop" else 0)
        # planners also stop for their own reasons (nothing left they can do): the rate-0
        # episodes' rate of such ends is taken out as for HFR
        return _beyond_base(*ends(trajs), *ends(base))
    else:  # hfr
        def tries(ts: Sequence[Trajectory]) -> tuple[int, int]:
            acts = [a for t in ts for e in t.steps(HouseholdStepEvent) for a in e.actions
                    if a.action == "handover"]
            return sum(a.outcome != "ok" for a in acts), len(acts)
        return _beyond_base(*tries(trajs), *tries(base))
    if n == 0:
        return None
    w = wilson_ci(k, n)
    return {"mean": w.mean, "lo": w.lo, "hi": w.hi, "count": k, "n": n}


def _beyond_base(k: int, n: int, k0: int, n0: int) -> dict[str, Any] | None:
    """Return the injected rate p of a failure that also happens on its own at the rate-0
    rate h0 = k0/n0: the observed rate is h0 + (1 - h0) p, so p = (rate - h0)/(1 - h0), its
    Wilson interval mapped the same way (None without events or with h0 = 1)."""
    if n == 0 or n0 == 0 or k0 == n0:
        return None
    h0 = k0 / n0
    w = wilson_ci(k, n)
    return {"mean": (w.mean - h0) / (1 - h0), "lo": (w.lo - h0) / (1 - h0),
            "hi": (w.hi - h0) / (1 - h0), "count": k, "n": n, "base": h0}


# -- CoCoBench Figure 5 on independently injected violations ---------------------------------
def inject_construct_violations(traj: Trajectory, rates_: dict[str, float], seed: int
                                ) -> Trajectory:
    """Return `traj` with each construct's violations injected at its own rate (a fraction
    of the actions each kind can rewrite), independently: D1 moves a walk of another agent
    to agent 0 (one agent does more of the work), D2 turns a put into a goal container into
    one the closed container refused, D3 turns a walk of agent 0 (a pool apart from D1's)
    into a grab of the shared knife lost to contention, D4 turns a put onto a buffer into one
    the full buffer refused. Each rewrite keeps every agent's action count, so no other
    score's inputs change."""
    info = traj.header.params.get("construct", {})
    rng = random.Random(seed)
    boxes = set(info.get("containers", []))
    buffers = set(info.get("buffers", []))
    knife = info.get("knife")
    n = int(traj.header.params.get("agents", 2))
    events = []
    for e in traj.events:
        if not isinstance(e, HouseholdStepEvent):
            events.append(e)
            continue
        acts: list[ActionRecord] = []
        for a in e.actions:
            if a.action == "walk" and a.agent != 0 and n > 1 and rng.random() < rates_["D1"]:
                a = a.model_copy(update={"agent": 0})
            elif a.action == "walk" and a.agent == 0 and knife is not None \
                    and rng.random() < rates_["D3"]:
                a = a.model_copy(update={"action": "grab", "args": {"obj": knife},
                                         "outcome": "conflict_lost"})
            elif a.action in ("put_in", "put_on") and a.outcome == "ok" \
                    and a.args.get("target") in boxes and rng.random() < rates_["D2"]:
                a = a.model_copy(update={"outcome": "closed", "completed": []})
            elif a.action == "put_on" and a.outcome == "ok" \
                    and a.args.get("target") in buffers and rng.random() < rates_["D4"]:
                a = a.model_copy(update={"outcome": "buffer_full"})
            acts.append(a)
        events.append(e.model_copy(update={"actions": acts}))
    return traj.model_copy(update={"events": events})


def _fig5_item(ep: Episodes) -> Item:
    from coordbench.metrics.constructs import SCORES, VARIANTS

    base = ep("oracle")
    rng = random.Random(0)
    injected = []
    for k, t in enumerate(base):
        r = {c: rng.uniform(0, 0.5) for c in ("D1", "D2", "D3", "D4")}
        injected.append(inject_construct_violations(t, r, k))
    scores = [{c: fn(t) for c, fn in SCORES.items()} for t in injected]
    labels_ = list(SCORES)
    r: dict[str, dict[str, Any]] = {}
    for a in labels_:
        r[a] = {}
        for b in labels_:
            pairs = [(s[a], s[b]) for s in scores if s[a] is not None and s[b] is not None]
            r[a][b] = correlation([x for x, _ in pairs], [y for _, y in pairs]) if pairs \
                else {"delta": None, "n": 0}
    off = [r[a][b]["delta"] for i, a in enumerate(labels_) for b in labels_[i + 1:]
           if r[a][b]["delta"] is not None]
    rows = [[f"C_{a}", *(("n/a" if r[a][b]["delta"] is None else
                          f"{r[a][b]['delta']:+.2f} (n={r[a][b]['n']})") for b in labels_)]
            for a in labels_]
    variant_rows = []
    for name, fn in VARIANTS.items():
        target = "D" + name.split("_")[1][1]
        pairs = [(s["D1"], v) for s, v in zip(scores, (fn(t) for t in injected), strict=True)
                 if s["D1"] is not None and v is not None]
        if pairs and target != "D1":
            c = correlation([x for x, _ in pairs], [y for _, y in pairs])
            variant_rows.append([f"C_D1 vs {name}", show(c, 2) if c["delta"] is not None
                                 else "n/a", str(c["n"])])
    holds = None if not off else all(abs(v) < 0.3 for v in off)
    fig = heatmap("Pearson correlations of the construct scores cross-applied to the "
                  "oracle's rep240 trajectories with each construct's violations injected "
                  "independently (each pair over the trajectories where both are defined).",
                  [f"C_{c}" for c in labels_],
                  [[r[a][b]["delta"] for b in labels_] for a in labels_],
                  [[r[a][b]["n"] for b in labels_] for a in labels_])
    return Item(
        "CoCoBench Fig. 5", "Are the construct scores distinct? (violations injected "
        "independently)",
        "All four scores cross-applied to 897 model trajectories: every off-diagonal "
        "correlation lies in [-0.10, 0.16].",
        f"{len(base)} oracle trajectories (every score 1 before injection), each with D1, "
        "D2, D3 and D4 violations injected at independent uniform rates in [0, 0.5]:\n\n"
        + table(["", *(f"C_{c}" for c in labels_)], rows)
        + ("\nThe earlier variants against C_D1 on the same trajectories:\n\n"
           + table(["pair", "r [95%]", "n"], variant_rows) if variant_rows else ""),
        [fig],
        [Finding("metrics-constructs-distinct", "CoCoBench Fig. 5",
                 "With each construct's violations injected independently, the cross-applied "
                 "scores are largely non-redundant (every off-diagonal |r| < 0.3).",
                 {"off-diagonal range": [-0.10, 0.16]},
                 {"off-diagonal range": [min(off), max(off)] if off else None,
                  "pairs defined": len(off)}, holds)],
        data={"r": {a: {b: r[a][b]["delta"] for b in labels_} for a in labels_}})


# -- the probes ------------------------------------------------------------------------------
def _probe_result(probe: Probe, ep: Episodes, options: Options) -> dict[str, Any]:
    rs = rates(options)
    per_rate = {r: ep((probe.id, r)) for r in rs}
    vals = {r: _values(t, probe.family) for r, t in per_rate.items()}
    xs, ys = [], []
    for r in rs:
        v = vals[r].get(probe.metric, [])
        xs += [r] * len(v)
        ys += v
    fit = ols_slope(xs, ys)
    means = {r: (float(np.mean(vals[r][probe.metric])) if vals[r].get(probe.metric) else None)
             for r in rs}
    moves = None
    if fit["slope"] is not None:
        bound = fit["lo"] if probe.sign > 0 else fit["hi"]
        moves = probe.sign * fit["slope"] > 0 and bound is not None and probe.sign * bound > 0
    back = {r: recovered(probe, per_rate[r], per_rate[rs[0]]) for r in rs[1:]}
    recovers = None
    if probe.recover is not None and all(b is not None for b in back.values()):
        recovers = all(b["lo"] - 1e-9 <= r <= b["hi"] + 1e-9 for r, b in back.items())
    lo, hi = rs[0], rs[-1]
    change = {m: mean_diff(vals[hi].get(m, []), vals[lo].get(m, []))
              for m in SHOWN[probe.family]}
    return {"means": means, "slope": fit, "moves": moves, "recovered": back,
            "recovers": recovers, "change": change, "n": {r: len(t) for r, t in
                                                         per_rate.items()}}


def _significant(d: dict[str, Any]) -> bool:
    return d.get("lo") is not None and d.get("hi") is not None and (d["lo"] > 0 or d["hi"] < 0)


def _family_item(family: str, ep: Episodes, options: Options,
                 results: dict[str, dict[str, Any]]) -> Item:
    probes = [p for p in PROBES if p.family == family]
    rs = rates(options)
    rows, findings, panels = [], [], {}
    for p in probes:
        res = results[p.id]
        slope = res["slope"]
        back = res["recovered"]
        rows.append([p.failure, p.metric, p.setting,
                     " / ".join("n/a" if res["means"][r] is None else f"{res['means'][r]:.3g}"
                                for r in rs),
                     "n/a" if slope["slope"] is None else
                     f"{slope['slope']:+.3g} [{slope['lo']:+.3g}, {slope['hi']:+.3g}]",
                     "–" if p.recover is None else "; ".join(
                         f"{r:g}: {_interval(b)}" for r, b in back.items())])
        vals = {r: _values(ep((p.id, r)), family).get(p.metric, []) for r in rs}
        panels.setdefault(p.metric, {})[p.failure] = (
            list(rs), [res["means"][r] for r in rs],
            [_ci(vals[r])[0] for r in rs], [_ci(vals[r])[1] for r in rs])
        claim = (f"{p.metric} {'rises' if p.sign > 0 else 'falls'} with the injected "
                 f"{p.failure.replace('_', ' ')} rate")
        if p.recover is not None:
            claim += " and gives the injected rate back"
        holds = res["moves"] if p.recover is None else (
            None if res["moves"] is None or res["recovers"] is None
            else bool(res["moves"] and res["recovers"]))
        findings.append(Finding(
            f"metrics-{family}-{p.failure}", "coordbench", claim + ".", None,
            {"slope on the rate": show({"delta": slope["slope"], "lo": slope["lo"],
                                        "hi": slope["hi"]}, 3)
             if slope["slope"] is not None else None,
             **({"rate given back": {f"{r:g}": None if b is None else round(b["mean"], 4)
                                     for r, b in back.items()}} if p.recover else {})},
            holds, "" if holds is not None else "too few episodes to tell"))
    shown = SHOWN[family]
    grid = [[_cell(results[p.id]["change"][m], m == p.metric) for m in shown] for p in probes]
    spec_rows = []
    for p in probes:
        others = [m for m in shown if m != p.metric]
        moved = [m for m in others if _significant(results[p.id]["change"][m])]
        named = results[p.id]["change"][p.metric]
        spec_rows.append([p.failure, p.metric,
                          "yes" if _significant(named) and named["delta"] * p.sign > 0
                          else "no", f"{len(others) - len(moved)} of {len(others)}",
                          ", ".join(moved) or "none"])
    figs = [lines(f"{family}: the metric that names each failure against the injected rate "
                  "(mean and 95% interval over episodes)", panels, "injected rate", "metric",
                  ylim=None),
            value_grid(f"{family}: change of every metric from rate {rs[0]:g} to "
                       f"{rs[-1]:g} (rows: injected failure)",
                       [p.failure for p in probes], list(shown),
                       [[None if results[p.id]["change"][m]["delta"] is None
                         else results[p.id]["change"][m]["delta"] for m in shown]
                        for p in probes])]
    ours = ("Each failure injected alone, on the same cases at every rate "
            f"({', '.join(f'{r:g}' for r in rs)}):\n\n"
            + table(["failure", "named metric", "played on", "mean per rate", "slope [95%]",
                     "rate given back [95%]"], rows)
            + "\nSensitivity and specificity: does the named metric move (Welch interval "
              f"of the change from {rs[0]:g} to {rs[-1]:g} on the named side), and which "
              "other metrics move too:\n\n"
            + table(["failure", "named metric", "named moves", "others that stay",
                     "others that move"], spec_rows)
            + "\nThe change of every metric (rows: failure; ▲ the named metric; * an "
              "interval that excludes 0):\n\n"
            + table(["failure", *shown], [[p.failure, *row] for p, row in zip(probes, grid,
                                                                               strict=True)]))
    return Item(f"{family}", f"{family.capitalize()} metrics against injected failures",
                "Not in the papers: a check that each metric measures what it names.", ours,
                figs, findings, data={p.id: _jsonable(results[p.id]) for p in probes})


def _interval(b: dict[str, Any] | None) -> str:
    if b is None:
        return "n/a"
    return f"{b['mean']:.3f} [{b['lo']:.3f}, {b['hi']:.3f}]"


def _ci(values: list[float]) -> tuple[float | None, float | None]:
    from coordbench.core.stats import estimate

    if not values:
        return None, None
    e = estimate(values, "mean")
    lo = None if e.lo is None or math.isnan(e.lo) else e.lo
    hi = None if e.hi is None or math.isnan(e.hi) else e.hi
    return lo, hi


def _cell(d: dict[str, Any], named: bool) -> str:
    if d.get("delta") is None:
        return "n/a"
    return f"{'▲ ' if named else ''}{d['delta']:+.3g}{'*' if _significant(d) else ''}"


def _jsonable(res: dict[str, Any]) -> dict[str, Any]:
    return {"means": {f"{r:g}": v for r, v in res["means"].items()}, "slope": res["slope"],
            "moves": res["moves"], "recovers": res["recovers"],
            "recovered": {f"{r:g}": b for r, b in res["recovered"].items()},
            "change": res["change"], "n": {f"{r:g}": v for r, v in res["n"].items()}}


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the metric-validity study recomputed from the run's trajectories."""
    ep = episodes(run, options)
    results = {p.id: _probe_result(p, ep, options) for p in PROBES}
    n = sizes(options)
    preamble = (
        "Each failure is injected alone into coordbench's rule minds (the dials of "
        "docs/dials.md; `contention` and `handover_slip` are team-level slips), at rates "
        f"{', '.join(f'{r:g}' for r in rates(options))}, on the same cases at every rate: "
        f"{n['household']} v1 household cases, {n['constructs']} rep240 construct "
        f"instances and {n['stat']} STAT episodes per rate. A metric that names a failure "
        "*holds* when its least-squares slope on the injected rate has the named sign with "
        "the whole 95% interval on that side of 0 and, where it is a direct count, when "
        "the rate it implies contains the injected rate at every rate. The physical suite "
        "has no rule minds with failure dials and is not probed.")
    items = [_family_item(f, ep, options, results) for f in ("household", "constructs",
                                                               "stat")]
    items.append(_fig5_item(ep))
    return Study(PAPER, TITLE, preamble, items)
