"""Construct scores and diagnostics (after CoCoBench, Section 4): pure functions of trajectories.

A construct trajectory's header `params["construct"]` carries the instance facts the scores
need, for every instance whatever its own construct, so that all four scores can be
cross-applied to every trajectory (the paper's Fig. 5): the oracle's makespan, action and step
counts (M* of C_D1 and C_D3), the goal containers, targets and orders (C_D2), the shared knife
(C_D3) and the buffer stations (C_D4). Only recorded actions count: an agent that does nothing
in a step records nothing (as an agent that is not chosen by a central planner). Every score is
in [0, 1], or None (reported n/a) where it is truly undefined: its denominator is 0 (no
precedence-relevant operation, no access to a shared tool, no buffer handoff), or the instance
lacks the fact it needs (an instance file written before the fact was recorded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from coordbench.core.trajectory import ActionRecord, HouseholdStepEvent, ModelCallEvent, Trajectory

PRECONDITION = frozenset({"closed", "not_held", "no_tool", "hands_full", "protected",
                          "receiver_not_ready", "receiver_hands_full"})
OCCUPANCY = frozenset({"conflict_lost", "held_by_other", "buffer_full"})
AFFORDANCE = frozenset({"wrong_target", "not_grabbable", "not_sliceable", "no_switch",
                        "not_visible", "too_far", "out_of_zone"})
ILLEGAL = frozenset({"illegal_skill"})
REDUNDANT = frozenset({"already_open", "already_closed", "already_sliced"})
INVALID = frozenset({"invalid", "protocol_failure"})
IDLE = frozenset({"wait", "receive", "done", "none"})


def _steps(traj: Trajectory) -> list[HouseholdStepEvent]:
    return traj.steps(HouseholdStepEvent)


def _records(traj: Trajectory) -> list[ActionRecord]:
    return [a for e in _steps(traj) for a in e.actions]


def _info(traj: Trajectory) -> dict[str, Any]:
    return traj.header.params.get("construct", {})


def makespan(traj: Trajectory) -> int:
    """Return M = the largest number of actions any one agent executed (failures and waits
    included)."""
    counts: dict[int, int] = {}
    for a in _records(traj):
        counts[a.agent] = counts.get(a.agent, 0) + 1
    return max(counts.values(), default=0)


def d1_reference(info: dict[str, Any]) -> int | None:
    """Return the M* of C_D1 for an instance's construct facts: on a D1 instance the exact
    min-max makespan under the skill abstraction (`m_star`, which the oracle attains), on any
    other the oracle's realised makespan (`oracle_makespan`, the largest number of actions one
    agent of the reference run executed); None when the instance records neither."""
    if info.get("construct") == "D1" and info.get("m_star") is not None:
        return int(info["m_star"])
    ref = info.get("oracle_makespan")
    return None if ref is None else int(ref)


def score_d1(traj: Trajectory) -> float | None:
    """Return C_D1 = min(1, M*/M): M = the largest number of actions one agent executed
    (failures and waits included), M* = `d1_reference` (D1: the optimal makespan under the
    skill abstraction; other constructs: the oracle's makespan on the instance).

    None for one agent, for M = 0, or when the instance has no M*.
    """
    m_star = d1_reference(_info(traj))
    m = makespan(traj)
    if m_star is None or m == 0 or int(traj.header.params.get("agents", 1)) < 2:
        return None
    return min(1.0, m_star / m)


def d2_counts(traj: Trajectory) -> tuple[int, int]:
    """Return (n, v) for D2: precedence-relevant container operations and violations.

    Relevant: open/close of a goal container, put_in/put_on into one. Violations: putting into
    a closed container, closing it before all its items are in, loading out of the required
    item order, touching a later container before the earlier one is filled and closed.
    Redundant no-ops and failures that are not about order (hands, reach, contention) count
    in neither n nor v.
    """
    n, v, _ = _d2_walk(traj)
    return n, v


def _d2_walk(traj: Trajectory) -> tuple[int, int, set[int]]:
    """Return (n, v, positions in `_records` of the violations that are also precondition
    failures: puts refused by a closed goal container)."""
    info = _info(traj)
    boxes = list(info.get("containers", []))
    targets = {int(k): v for k, v in info.get("targets", {}).items()}
    order = list(info.get("order", []))
    seq = list(info.get("container_order", []))
    inside: set[int] = set()
    closed_done: set[int] = set()
    counted: set[int] = set()
    nxt = 0
    n = v = 0
    for k, a in enumerate(_records(traj)):
        box = a.args.get("target") if a.action in ("put_in", "put_on") else a.args.get("obj")
        if a.action not in ("open", "close", "put_in", "put_on") or box not in boxes:
            continue
        if a.outcome in REDUNDANT or (a.outcome != "ok" and a.outcome != "closed"):
            continue
        n += 1
        if a.outcome == "closed":
            counted.add(k)
        earlier = seq[:seq.index(box)] if box in seq else []
        if any(b not in closed_done for b in earlier):
            v += 1
            continue
        if a.outcome == "closed":
            v += 1
        elif a.action in ("put_in", "put_on"):
            item = a.args.get("obj")
            if order and (nxt >= len(order) or order[nxt] != item):
                v += 1
            else:
                nxt += 1 if order else 0
            inside.add(item)
        elif a.action == "close":
            mine = [i for i, b in targets.items() if b == box]
            if any(i not in inside for i in mine):
                v += 1
            else:
                closed_done.add(box)
    return n, v, counted


def legal(traj: Trajectory) -> bool | None:
    """Return whether no action was an illegal skill or a precondition violation (None: no
    action)."""
    records = _records(traj)
    if not records:
        return None
    return not any(a.outcome in ILLEGAL | PRECONDITION for a in records)


def score_d2(traj: Trajectory) -> float | None:
    """Return C_D2 = p_legal (1 - v/n) (paper Eq. 8): p_legal = 1, or 0.5 after any illegal
    skill or precondition violation that v does not already count (a put refused by a
    closed goal container is an ordering violation in v; it does not halve the score a
    second time); None when n = 0."""
    n, v, counted = _d2_walk(traj)
    if n == 0:
        return None
    gate = any(a.outcome in ILLEGAL | PRECONDITION
               for k, a in enumerate(_records(traj)) if k not in counted)
    return (0.5 if gate else 1.0) * (1 - v / n)


def score_d2_double_penalty(traj: Trajectory) -> float | None:
    """Return coordbench's earlier C_D2: p_legal (1 - v/n) with p_legal = 0.5 after any
    illegal skill or precondition violation, a put into a closed container included (which
    v counts too); None when n = 0."""
    n, v = d2_counts(traj)
    if n == 0:
        return None
    return (1.0 if legal(traj) else 0.5) * (1 - v / n)


def executed_actions(traj: Trajectory) -> int:
    """Return the executed action steps of an episode: every agent's recorded actions, waits
    and refused actions included (a decision that produced no action, `none`, is not one)."""
    return sum(a.action != "none" for a in _records(traj))


def _knife_tries(traj: Trajectory) -> tuple[int, int] | None:
    """Return (a, c): grab attempts on the shared knife and those lost to contention; None
    without a knife or an attempt."""
    knife = _info(traj).get("knife")
    tries = [a for a in _records(traj) if a.action == "grab" and a.args.get("obj") == knife]
    if knife is None or not tries:
        return None
    return len(tries), sum(a.outcome in ("conflict_lost", "held_by_other") for a in tries)


def score_d3(traj: Trajectory) -> float | None:
    """Return C_D3 = (1 - c/a) min(1, M*/L) (paper Eq. 9).

    a = grab attempts on the shared knife, c = those lost to contention (`conflict_lost`,
    `held_by_other`), L = the executed action steps (`executed_actions`: every agent's
    recorded actions), M* = the oracle's makespan in the same unit: the action steps of the
    reference run (`oracle_actions`; under the paper's central protocol one action is one
    step, so its makespan is its action count, as the released code computes it). An agent
    that does nothing in a step adds nothing to L; wasted and refused actions do. The
    efficiency term is 1 when the instance records no `oracle_actions`. None when a = 0 (no
    access to a shared tool).
    """
    tries = _knife_tries(traj)
    if tries is None:
        return None
    a, c = tries
    m_star = _info(traj).get("oracle_actions")
    done = executed_actions(traj)
    eff = 1.0 if not m_star or not done else min(1.0, m_star / done)
    return (1 - c / a) * eff


def score_d3_team_steps(traj: Trajectory) -> float | None:
    """Return coordbench's earlier C_D3: (1 - c/a) min(1, M*/L) with L = the episode's team
    steps (steps in which agents only waited included) and M* = the oracle's team steps
    (`oracle_steps`); None when a = 0."""
    tries = _knife_tries(traj)
    if tries is None:
        return None
    a, c = tries
    steps = len(_steps(traj))
    m_star = _info(traj).get("oracle_steps")
    eff = 1.0 if not m_star or not steps else min(1.0, m_star / steps)
    return (1 - c / a) * eff


def _source_buffers(traj: Trajectory) -> dict[int, int]:
    """Return {agent: the buffer it takes from} for the downstream agents of a handoff chain:
    a carrier takes from the first buffer, a consumer from the last (a producer takes from
    the source, no buffer). Roles come from the construct facts, else the header's team."""
    info = _info(traj)
    buffers = list(info.get("buffers", []))
    if not buffers:
        return {}
    roles = info.get("roles") or [a.role for a in traj.header.team]
    side = {"carrier": buffers[0], "consumer": buffers[-1]}
    return {i: side[r] for i, r in enumerate(roles) if r in side}


def d4_counts(traj: Trajectory) -> tuple[int, int, int]:
    """Return (h, o, w) of C_D4: successful puts onto a buffer, overflow events (puts refused
    because the buffer was full), and empty-buffer waits downstream: waits by an agent that
    takes from a buffer (a consumer or carrier) in a step that ended with that buffer
    empty."""
    buffers = set(_info(traj).get("buffers", []))
    source = _source_buffers(traj)
    h = o = w = 0
    for e in _steps(traj):
        for a in e.actions:
            if a.action == "put_on" and a.args.get("target") in buffers:
                h += a.outcome == "ok"
                o += a.outcome == "buffer_full"
            if a.action == "wait" and a.agent in source \
                    and e.buffers.get(str(source[a.agent]), 1) == 0:
                w += 1
    return h, o, w


def d4_counts_any_wait(traj: Trajectory) -> tuple[int, int, int]:
    """Return coordbench's earlier (h, o, w): w = waits by any agent in steps that ended
    with every buffer empty."""
    h, o, _ = d4_counts(traj)
    w = 0
    for e in _steps(traj):
        if e.buffers and all(v == 0 for v in e.buffers.values()):
            w += sum(a.action == "wait" for a in e.actions)
    return h, o, w


def _d4(counts: tuple[int, int, int]) -> float | None:
    h, o, w = counts
    return None if h == 0 else 1 - min(1.0, (o + w) / h)


def score_d4(traj: Trajectory) -> float | None:
    """Return C_D4 = 1 - min(1, (o + w)/h) (paper Eq. 10, w = empty-buffer waits
    downstream, `d4_counts`); None when h = 0."""
    return _d4(d4_counts(traj))


def score_d4_any_wait(traj: Trajectory) -> float | None:
    """Return coordbench's earlier C_D4, whose w counts any agent's wait in a step that ended
    with every buffer empty (`d4_counts_any_wait`); None when h = 0."""
    return _d4(d4_counts_any_wait(traj))


SCORES = {"D1": score_d1, "D2": score_d2, "D3": score_d3, "D4": score_d4}
# coordbench's earlier variants, under their own names (never the paper's)
VARIANTS = {"C_D2_double_penalty": score_d2_double_penalty,
            "C_D3_team_steps": score_d3_team_steps, "C_D4_any_wait": score_d4_any_wait}


def construct_score(traj: Trajectory) -> float | None:
    """Return the score of the trajectory's own construct (CS), or None (n/a)."""
    fn = SCORES.get(_info(traj).get("construct", ""))
    return fn(traj) if fn else None


def cross_scores(traj: Trajectory) -> dict[str, float | None]:
    """Return {"D1": C_D1, ..., "D4": C_D4}: all four scores cross-applied to one trajectory
    (None where a score is undefined on it)."""
    return {c: fn(traj) for c, fn in SCORES.items()}


def construct_of(traj: Trajectory) -> str:
    """Return the trajectory's own construct (D1-D4; "" if the header names none)."""
    return str(_info(traj).get("construct", ""))


def failure_taxonomy(traj: Trajectory) -> dict[str, int]:
    """Return, for an episode, its dependency violations, occupancy conflicts, affordance
    failures and illegal skills (counts of actions with those outcomes)."""
    records = _records(traj)
    return {"dependency_violation": sum(a.outcome in PRECONDITION for a in records)
            + (d2_counts(traj)[1] if _info(traj).get("construct") == "D2" else 0),
            "occupancy_conflict": sum(a.outcome in OCCUPANCY for a in records),
            "affordance_failure": sum(a.outcome in AFFORDANCE for a in records),
            "illegal_skill": sum(a.outcome in ILLEGAL for a in records)}


# failure kinds by their public (CLI JSON, report) name -> the failure_taxonomy count
FAILURE_KINDS = {"dependency": "dependency_violation", "occupancy": "occupancy_conflict",
                 "affordance": "affordance_failure", "illegal_skill": "illegal_skill"}
# the termination taxonomy's public names, in report order
TERMINATIONS = ("success", "normal_stop", "budget_exhausted", "protocol_failure")


def termination(traj: Trajectory) -> str:
    """Return success, normal_stop, budget_exhaustion or protocol_failure (an episode without
    its end; a provider-errored one, which runs never count, keeps its name "error")."""
    end = traj.end
    if end is None:
        return "protocol_failure"
    return {"success": "success", "truncated": "budget_exhaustion"}.get(end.termination,
                                                                         end.termination)


def termination_key(traj: Trajectory) -> str:
    """Return the episode's termination under its public name, one of `TERMINATIONS`:
    success, normal_stop, budget_exhausted (the action budget was spent) or protocol_failure
    (no episode end, or an error end)."""
    t = termination(traj)
    return {"budget_exhaustion": "budget_exhausted", "error": "protocol_failure"}.get(t, t)


def failure_kinds(traj: Trajectory) -> dict[str, bool]:
    """Return, for each public failure kind (`FAILURE_KINDS`), whether the episode exhibits at
    least one such event (a dependency violation, occupancy conflict, affordance failure or
    illegal-skill use)."""
    counts = failure_taxonomy(traj)
    return {k: counts[v] > 0 for k, v in FAILURE_KINDS.items()}


def episode_metrics(traj: Trajectory) -> dict[str, float | None]:
    """Return every per-episode construct diagnostic by its report name."""
    records = _records(traj)
    steps = _steps(traj)
    ok = traj.end is not None and traj.end.success
    calls = traj.steps(ModelCallEvent)
    out: dict[str, float | None] = {
        "SR": float(ok),
        "CS": construct_score(traj),
        "legal_rate": None if legal(traj) is None else float(bool(legal(traj))),
        "invalid_action_ratio": (sum(a.outcome in INVALID for a in records) / len(records))
        if records else None,
        "progress_on_failure": None if ok or not steps else steps[-1].completion,
        "steps_on_success": float(len(steps)) if ok else None,
        "planner_calls": float(len(calls) if calls else len(records)),
        "makespan": float(makespan(traj)),
    }
    for c, fn in SCORES.items():
        out[f"C_{c}"] = fn(traj)
    for name, fn in VARIANTS.items():
        out[name] = fn(traj)
    if not ok:
        out.update({k: float(v) for k, v in failure_taxonomy(traj).items()})
    return out


# how each metric's interval is drawn (core.stats.estimate): 0/1 outcomes get Wilson
# intervals, shares a t-interval clipped to [0, 1]; counts a plain t-interval
KINDS = {"SR": "binary", "legal_rate": "binary", "CS": "unit", "invalid_action_ratio": "unit",
         "progress_on_failure": "unit", **{f"C_{c}": "unit" for c in SCORES},
         **{k: "unit" for k in VARIANTS}}


def correlation_matrix(rows: Sequence[dict[str, float | None]],
                       keys: Sequence[str] = ("D1", "D2", "D3", "D4")
                       ) -> dict[str, dict[str, float | None]]:
    """Return Pearson correlations between construct scores over rows (e.g. one row per
    model x planner condition), each pair over the rows where both are defined; None with
    fewer than 3 such rows or no variance."""
    out: dict[str, dict[str, float | None]] = {}
    for a in keys:
        out[a] = {}
        for b in keys:
            pairs = [(r[a], r[b]) for r in rows if r.get(a) is not None and r.get(b) is not None]
            if len(pairs) < 3:
                out[a][b] = None
                continue
            xs, ys = zip(*pairs, strict=True)
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
            sy = math.sqrt(sum((y - my) ** 2 for y in ys))
            out[a][b] = None if sx == 0 or sy == 0 else sum(
                (x - mx) * (y - my) for x, y in pairs) / (sx * sy)
    return out
