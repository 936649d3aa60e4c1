"""One trajectory as the viewer draws it: a lane per agent, what each agent did at each step,
and the team-wide events (conflicts with their winners, handovers, messages, model calls, a
person's decisions with their think time).

Everything here is read from the trajectory; nothing is guessed. Model calls carry what
`ModelCallEvent` records (reply, parse status, tokens, latency, attempts); prompts are kept
beside the run by request hash (RUN/prompts/) and come with the episode's payload.
"""

from __future__ import annotations

from typing import Any

from coordbench.core.trajectory import (
    EpisodeEndEvent,
    HouseholdStepEvent,
    HumanDecisionEvent,
    MessageEvent,
    ModelCallEvent,
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    StatStepEvent,
    Trajectory,
)
from coordbench.envs.stat.config import EXECUTE, IDLE, MOVE, SELECT0

_STAT_NAMES = {IDLE: "idle", MOVE: "move", EXECUTE: "exec"}


def _stat_label(a: int) -> str:
    return _STAT_NAMES.get(a, f"T{a - SELECT0}")


def _stat_cells(e: StatStepEvent) -> list[dict[str, Any]]:
    lost = {i for c in e.conflicts for i in c.agents if i != c.winner}
    done = dict(e.completed)
    cells = []
    for i, (a, x) in enumerate(zip(e.actions, e.executed, strict=True)):
        code = ("conflict_lost" if i in lost else "completed" if i in done
                else "idle" if x == IDLE else "ok")
        detail = f"picked task {a - SELECT0}" if a >= SELECT0 else _STAT_NAMES.get(a, "")
        if i in lost:
            detail += f"; lost the pick, executed {_stat_label(x)}"
        if i in done:
            detail += f"; completed task {done[i]}"
        cells.append({"agent": i, "t": e.t, "label": _stat_label(a), "code": code,
                      "detail": detail, "reward": e.rewards[i]})
    return cells


def _household_cells(e: HouseholdStepEvent) -> list[dict[str, Any]]:
    cells = []
    for a in e.actions:
        args = ", ".join(f"{k}={v}" for k, v in a.args.items())
        what = f"{a.action}({args})" + (f" [{a.obj_class}]" if a.obj_class else "")
        cells.append({"agent": a.agent, "t": e.t, "label": a.action, "code": a.outcome,
                      "detail": (what + (f": {a.detail}" if a.detail else "")
                                 + (f"; completed {', '.join(a.completed)}"
                                    if a.completed else "")),
                      "action": a.action, "args": a.args, "obj_class": a.obj_class,
                      "completed": a.completed, "raw": a.raw, "tokens": a.tokens,
                      "wait": a.action in ("wait", "receive")})
    return cells


def _handovers(e: HouseholdStepEvent) -> list[dict[str, Any]]:
    return [{"t": e.t, "from": a.agent, "to": a.args.get("to_agent"), "obj": a.args.get("obj"),
             "code": a.outcome} for a in e.actions if a.action == "handover"]


def _call(c: ModelCallEvent) -> dict[str, Any]:
    # the prompt is kept beside the run by request hash (the payload's "prompts")
    return c.model_dump(exclude={"type"})


def build(traj: Trajectory) -> dict[str, Any]:
    """Return the timeline of `traj`: agents, per-step cells, conflicts, handovers, messages,
    model calls, per-step team numbers and physical phase/coupling events, as plain JSON."""
    h = traj.header
    cells: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    handovers: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []  # a person's, with their think time
    team: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    coupling: list[dict[str, Any]] = []
    steps = 0
    for e in traj.events:
        if isinstance(e, StatStepEvent):
            cells += _stat_cells(e)
            team.append({"t": e.t, "reward": sum(e.rewards), "decision_pre": e.decision_pre,
                         "decision_post": e.decision_post, "completed": e.completed})
        elif isinstance(e, HouseholdStepEvent):
            cells += _household_cells(e)
            handovers += _handovers(e)
            team.append({"t": e.t, "completion": e.completion, "satisfied": e.satisfied,
                         "buffers": e.buffers, "images": e.images})
        elif isinstance(e, MessageEvent):
            messages.append(e.model_dump(exclude={"type"}))
            continue
        elif isinstance(e, ModelCallEvent):
            calls.append(_call(e))
            continue
        elif isinstance(e, HumanDecisionEvent):
            decisions.append(e.model_dump(exclude={"type"}))
            continue
        elif isinstance(e, PhysicalPhaseEvent):
            phases.append(e.model_dump(exclude={"type"}))
            continue
        elif isinstance(e, PhysicalCouplingEvent):
            coupling.append(e.model_dump(exclude={"type"}))
            continue
        elif isinstance(e, EpisodeEndEvent):
            continue
        else:  # an event type added after this viewer: counted, not drawn
            continue
        conflicts += [{"t": e.t, "target": c.target, "agents": c.agents, "winner": c.winner}
                      for c in e.conflicts]
        steps = max(steps, e.t + 1)
    end = traj.end
    return {
        "agents": [{"id": a.id, "role": a.role, "driver": a.driver} for a in h.team],
        "steps": max(steps, end.t if end else 0),
        "step_events": bool(team),
        "cells": cells, "conflicts": conflicts, "handovers": handovers,
        "messages": messages, "calls": calls, "decisions": decisions, "team": team,
        "phases": phases, "coupling": coupling,
        "end": end.model_dump(exclude={"type"}) if end else None,
    }
