"""`coordbench reproduce attribution`: who made a team fail, and when, measured against
injected ground truth (docs/attribution.md).

Rule teams of each family (the physical family: scripted experts) are played clean and
with one failure injected into one seat at one step (the one-shot dial `fail_at`: at that
step the seat misperceives and believes the task done, each where its family's minds can;
the physical expert lets go of what it holds). An injected episode is a *failure the
injection caused* where it fails (STAT: takes longer than the clean team on the same
layout) while the clean team succeeds on the same case. Each such failure is attributed by

- the counterfactual method (`coordbench attribute`: replays with one seat taken over);
- the Who&When log-reading judge, all-at-once and step-by-step, with `--judge MODEL`;
- two baselines: a seat and a step drawn at random, and the last agent to act.

Agent-level accuracy: the method names the injected seat (the counterfactual method: its
responsible seat with the largest blame share, the lower seat on a tie). Step-level: the
step it names is the injected step, or within 2 steps of it. Who&When (Zhang et al., ICML
2025) reports, for its best method on its 127 systems, 53.5% agent-level and 14.2%
step-level accuracy.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.analyses.common import proportion_diff, rate
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory

from .study import Episodes, Finding, Item, Options, Study, judge_rate, show, table

PAPER = "attribution"
TITLE = "Failure attribution: who and when, against injected ground truth"
WHO_AND_WHEN = {"agent": 0.535, "step": 0.142}  # the paper's best method (all systems)
WITHIN = 2
STAT_CONFIG = "3A-6T-5x3"
# the reference that takes the injected seat over in the second counterfactual row
TAKEOVER = {"household": "rule", "constructs": "rule", "stat": "rule", "physical": "expert"}
TAKEOVER_METHOD = "counterfactual (a reference takes over)"


@dataclass(frozen=True)
class Arm:
    """One family's setting: its team size, the steps injected, cases played."""

    family: str
    seats: int
    steps: tuple[int, ...]
    cases: int
    setting: str


def arms(options: Options) -> list[Arm]:
    """Return the families' settings (smaller with --quick)."""
    q = options.quick
    return [
        Arm("household", 3, (1, 2, 3, 5) if q else (1, 2, 3, 4, 5, 6, 8), 16 if q else 48,
            "MECoBench v1, parallel, 3 rule agents, shared memory"),
        Arm("constructs", 2, (1, 2, 4) if q else (1, 2, 3, 4, 6), 12 if q else 40,
            "CoCoBench instances of 2 agents, decentralized rule agents, broadcast"),
        Arm("stat", 3, (0, 4, 6) if q else (0, 2, 4, 6, 8), 20 if q else 40,
            f"STAT {STAT_CONFIG}, 3 rule agents, broadcast"),
        # control steps inside the carry (both CoBots hold the table from ~110 to ~250)
        Arm("physical", 2, (130, 200) if q else (110, 150, 190, 230), 2 if q else 6,
            "CoHuB CoCarry, 2 scripted CoBot experts (the injected one lets go once)"),
    ]


def _seats(arm: Arm, injected: tuple[int, int] | None) -> tuple[Any, ...]:
    from coordbench.agents.team.seats import Seat

    if arm.family == "physical":
        return tuple(Seat("scripted", f"expert+fail_at={injected[1]}"
                          if injected and injected[0] == i else "expert")
                     for i in range(arm.seats))
    return tuple(Seat("rule", f"fail_at={injected[1]}" if injected and injected[0] == i
                      else None) for i in range(arm.seats))


def _condition(arm: Arm, injected: tuple[int, int] | None) -> tuple[Any, Any, int | None]:
    """Return the (suite, condition, limit) of `arm`, clean or with `injected` (seat,
    step)."""
    seats = _seats(arm, injected)
    if arm.family == "household":
        from coordbench.suites.mecobench.episode import HouseholdSpec
        from coordbench.suites.mecobench.suite import SUITE, mecobench_condition

        spec = HouseholdSpec("parallel", arm.seats, "shared_memory", "rule", seats=seats)
        return SUITE, mecobench_condition(None, "v1", spec), arm.cases
    if arm.family == "constructs":
        from coordbench.suites.constructs.episode import ConstructSpec
        from coordbench.suites.constructs.suite import SUITE, ConstructCondition

        spec = ConstructSpec("decentralized", "rule", protocol="broadcast", seats=seats)
        return SUITE, ConstructCondition(spec, "all", None, arm.seats, arm.cases), None
    if arm.family == "physical":
        from coordbench.suites.physical.suite import SUITE, PhysicalSpec

        return SUITE, PhysicalSpec("CoCarry", "seats", seats=seats), arm.cases
    from coordbench.suites.stat.suite import SUITE, StatEvalSpec

    return SUITE, StatEvalSpec(STAT_CONFIG, "rule", protocol="broadcast", seats=seats), \
        arm.cases


def _keys(options: Options) -> list[tuple[str, int | None, int | None]]:
    out: list[tuple[str, int | None, int | None]] = []
    for arm in arms(options):
        out.append((arm.family, None, None))
        out += [(arm.family, s, t) for s in range(arm.seats) for t in arm.steps]
    return out


def _arm(options: Options, family: str) -> Arm:
    return next(a for a in arms(options) if a.family == family)


def _item(options: Options, key: tuple[str, int | None, int | None]) -> tuple[Any, Any, Any]:
    family, seat, step = key
    inj = None if seat is None or step is None else (seat, step)
    return _condition(_arm(options, family), inj)


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition, limit) items: each family clean, and each (seat,
    step) injected."""
    return [_item(options, k) for k in _keys(options)]


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [f"{f} clean" if s is None else f"{f} agent_{s} fails at step {t}"
            for f, s, t in _keys(options)]


def resources(options: Options) -> None:
    """Return None: rule teams play every condition (a judge is called by the study)."""
    return None


def episodes(run: RunDir, options: Options) -> Episodes:
    """Return the study's episodes by key ((family, seat, step); seat None: clean)."""
    names = {}
    for k in _keys(options):
        suite, cond, _ = _item(options, k)
        names[k] = suite.condition(cond)
    return Episodes(run, names)


# -- the failures the injection caused ---------------------------------------------------
@dataclass(frozen=True)
class Caused:
    """An injected episode that failed where the clean team did not: its family, the
    injected seat and step, where it lies in the run, and its clean twin's outcome."""

    family: str
    seat: int
    step: int
    condition: str
    key: str
    clean_value: float
    traj: Trajectory


def _outcome(family: str, traj: Trajectory) -> float:
    """Return the outcome an injection is judged on: success (STAT: throughput, so that a
    team that finishes later than its clean twin underperforms)."""
    if family == "stat":
        from coordbench.metrics.stat import arrays_from_trajectory, throughput

        return float(throughput(arrays_from_trajectory(traj)))
    return float(bool(traj.end and traj.end.success))


def caused(run: RunDir, options: Options) -> list[Caused]:
    """Return every failure an injection caused, in plan order."""
    ep = episodes(run, options)
    clean: dict[str, dict[str, float]] = {}
    out = []
    for family, seat, step in ep.keys:
        name = ep.names[(family, seat, step)]
        if seat is None:
            clean[family] = {t.header.episode_id.rsplit("/", 1)[1]: _outcome(family, t)
                             for t in ep((family, seat, step))}
            continue
        for t in ep((family, seat, step)):
            key = t.header.episode_id.rsplit("/", 1)[1]
            base = clean.get(family, {}).get(key)
            if base is None:
                continue
            value = _outcome(family, t)
            ok = base >= 1.0 if family != "stat" else True
            if ok and value < base - 1e-12:
                out.append(Caused(family, int(seat), int(step), name, key, base, t))
    return out


# -- the methods -----------------------------------------------------------------------------
def _counterfactual(run: RunDir, cases: list[Caused], reference: str | None = None
                    ) -> dict[tuple[str, str], dict]:
    """Return each caused failure's stored counterfactual attribution with `reference`
    taking seats over (None: each seat's default, `clean` for the injected rule seats),
    computed where missing (`RUN/attribution/`, or `RUN/attribution-REF/`; resumable)."""
    from coordbench.attribution.episode import Question
    from coordbench.attribution.run import Target, attribute_run, recording_digest

    folder = "attribution" if reference is None else f"attribution-{reference}"
    # one job run per question (STAT's threshold is each episode's clean twin's), not per
    # episode: each run reads the stored results back once
    asked: dict[Question, list[Target]] = {}
    for c in cases:
        metric = "throughput" if c.family == "stat" else None
        # a STAT team underperforms where it is slower than its clean twin
        threshold = c.clean_value - 1e-9 if c.family == "stat" else 1.0
        q = Question(metric=metric, threshold=threshold, reference=reference)
        asked.setdefault(q, []).append(Target(
            c.condition, c.key, 0.0, int(c.traj.end.t if c.traj.end else 0),
            len(c.traj.header.team), 0, 0.0, recording_digest(run, c.condition, c.key)))
    out: dict[tuple[str, str], dict] = {}
    for q, ts in asked.items():
        results, _ = attribute_run(run, ts, q, folder=folder)
        out.update({(r["condition"], r["key"]): r for r in results})
    return out


def _named(result: dict | None) -> tuple[int | None, int | None]:
    """Return the (seat, step) a counterfactual attribution names: its responsible seat with
    the largest blame share (the lower seat on a tie)."""
    if not result or not result.get("responsible"):
        return None, None
    best = max(result["responsible"],
               key=lambda r: (r.get("blame", 0.0), -int(r["seat"].removeprefix("agent_"))))
    return int(best["seat"].removeprefix("agent_")), int(best["step"])


def _judged(cases: list[Caused], options: Options) -> dict[str, list[tuple[Any, Any]]]:
    """Return the judge's (seat, step) per caused failure, per method (none without
    --judge)."""
    if not getattr(options, "judge", None):
        return {}
    from coordbench.attribution.judge import METHODS as JUDGES
    from coordbench.attribution.judge import judge
    from coordbench.llm.client import HarnessSettings, harness_for

    harness = harness_for(HarnessSettings(options.models, True, None, None, 0))
    out: dict[str, list[tuple[Any, Any]]] = {}
    for method in JUDGES:
        got = [asyncio.run(judge(c.traj, harness, str(options.judge), method))
               for c in cases]
        out[f"judge {method}"] = [(g.seat, g.step) for g in got]
    return out


def guesses(run: RunDir, cases: list[Caused], options: Options
            ) -> dict[str, list[tuple[int | None, int | None]]]:
    """Return each method's (seat, step) per caused failure."""
    from coordbench.attribution.baselines import last_agent, random_guess

    cf = _counterfactual(run, cases)
    out = {"counterfactual": [_named(cf.get((c.condition, c.key))) for c in cases]}
    # a reference that never made the mistake: a rule mind (physical: the clean expert)
    # shadows the seat and takes it over, so a failure it could still undo moves the step
    ruled = {}
    for ref in dict.fromkeys(TAKEOVER.values()):
        ruled.update(_counterfactual(run, [c for c in cases if TAKEOVER[c.family] == ref],
                                     ref))
    out[TAKEOVER_METHOD] = [_named(ruled.get((c.condition, c.key))) for c in cases]
    rnd = [random_guess(c.traj, seed=k) for k, c in enumerate(cases)]
    out["random"] = [(g.seat, g.step) for g in rnd]
    last = [last_agent(c.traj) for c in cases]
    out["last_agent"] = [(g.seat, g.step) for g in last]
    out.update(_judged(cases, options))
    return out


def accuracy(cases: list[Caused], named: list[tuple[int | None, int | None]]
             ) -> dict[str, dict[str, Any]]:
    """Return {"agent", "step", "step_within"}: rates (Wilson) of naming the injected seat,
    its step, and its step within `WITHIN` steps (a step counts only with the right seat)."""
    agent = [s == c.seat for c, (s, _) in zip(cases, named, strict=True)]
    exact = [s == c.seat and t == c.step for c, (s, t) in zip(cases, named, strict=True)]
    near = [s == c.seat and t is not None and abs(t - c.step) <= WITHIN
            for c, (s, t) in zip(cases, named, strict=True)]
    n = len(cases)
    return {"agent": rate(sum(agent), n), "step": rate(sum(exact), n),
            "step_within": rate(sum(near), n)}


def _pct(r: dict[str, Any]) -> str:
    if not r.get("n"):
        return "n/a"
    return f"{r['mean']:.1%} [{r['lo']:.1%}, {r['hi']:.1%}] ({r['count']}/{r['n']})"


def _results(run: RunDir, options: Options) -> tuple[list[Caused], dict[str, Any]]:
    cases = caused(run, options)
    named = guesses(run, cases, options)
    by: dict[str, Any] = {}
    for method, got in named.items():
        by[method] = {"all": accuracy(cases, got)}
        for fam in dict.fromkeys(c.family for c in cases):
            idx = [k for k, c in enumerate(cases) if c.family == fam]
            by[method][fam] = accuracy([cases[k] for k in idx], [got[k] for k in idx])
    return cases, by


def _findings(by: dict[str, Any]) -> list[Finding]:
    cf = by.get("counterfactual", {}).get("all", {})
    miss_agent = _miss(cf.get("agent"))
    miss_step = _miss(cf.get("step_within"))
    out = [
        Finding("cf-agent", "issue", "the counterfactual method names the injected seat in "
                ">= 90% of the failures the injection caused", ">= 90%",
                _pct(cf.get("agent", {})), judge_rate(miss_agent, 0.10)),
        Finding("cf-step", "issue", "... and its step within +-2 steps in >= 70%", ">= 70%",
                _pct(cf.get("step_within", {})), judge_rate(miss_step, 0.30)),
    ]
    for base in ("random", "last_agent"):
        b = by.get(base, {}).get("all", {}).get("agent")
        if not cf.get("agent") or not b:
            continue
        d = proportion_diff(cf["agent"]["count"], cf["agent"]["n"], b["count"], b["n"])
        from .study import judge

        out.append(Finding(f"cf-beats-{base}", "Who&When Table 2",
                           f"the counterfactual method names the seat more often than "
                           f"{base.replace('_', ' ')}", "a log reader: 53.5% at best",
                           f"{show(d.get('delta'))} [{show(d.get('lo'))}, "
                           f"{show(d.get('hi'))}]", judge(d, +1, "failures")))
    return out


def _miss(r: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return the miss rate of an accuracy rate (its complement, with Wilson's interval)."""
    if not r or not r.get("n"):
        return None
    return rate(r["n"] - r["count"], r["n"])


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the attribution study: accuracy per method and family, the baselines and
    Who&When's figures beside ours, and the findings."""
    cases, by = _results(run, options)
    rows = []
    for method, fams in by.items():
        for fam, acc in fams.items():
            rows.append([method, fam, _pct(acc["agent"]), _pct(acc["step"]),
                         _pct(acc["step_within"])])
    rows.append(["Who&When best (paper)", "127 systems", f"{WHO_AND_WHEN['agent']:.1%}",
                 f"{WHO_AND_WHEN['step']:.1%}", "-"])
    counts = {a.family: sum(c.family == a.family for c in cases) for a in arms(options)}
    item = Item(
        "Accuracy", "Who and when: accuracy on failures the injection caused",
        "Who&When's best method names the responsible agent in 53.5% of failures and the "
        "decisive step in 14.2% (log readers; no replay).",
        table(["method", "family", "agent", "step (exact)", f"step (+-{WITHIN})"], rows),
        findings=_findings(by),
        data={"caused": counts, "accuracy": by, "who_and_when": WHO_AND_WHEN},
        note="Step accuracy counts a step only with the right seat.")
    settings = "; ".join(f"{a.family}: {a.setting}, {len(a.steps)} injected steps x "
                         f"{a.seats} seats x {a.cases} cases" for a in arms(options))
    preamble = (f"Failures caused by one injected failure (one seat, one step): "
                f"{', '.join(f'{k} {v}' for k, v in counts.items())}. {settings}.")
    return Study(PAPER, TITLE, preamble, [item])
