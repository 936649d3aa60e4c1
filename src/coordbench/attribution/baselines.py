"""Trajectory-only failure attribution: the team's log as text, and the baselines a judge must
beat (a uniform random seat and step; the last agent to act).

Every function is pure: it reads a `core.trajectory.Trajectory` of any family (household and
construct episodes' `household_step` events, STAT's `stat_step` events, physical episodes'
`physical_phase`, `physical_event` and skill `message` events) and never plays anything.

Steps are the numbers the trajectory gives its events (`t`): the team step for household,
construct and STAT episodes (0 is the first), the control step (50 Hz) for physical ones.
Seats are indices into the header's `team` (seat i is `team[i].id`: agent_i, or robot_i).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from coordbench.core.trajectory import (
    ActionRecord,
    HouseholdStepEvent,
    MessageEvent,
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    StatStepEvent,
    Trajectory,
)
from coordbench.envs.stat.config import EXECUTE, IDLE, MOVE, SELECT0

# household-engine actions that change nothing by themselves: waiting, declaring the task
# done, a reply that named no action ("none", recorded as a protocol failure), and receive,
# which only accepts what a teammate hands over (the handover is the giver's act)
PASSIVE = frozenset({"wait", "none", "done", "receive", ""})
# how long one free-text field (a message, an outcome's detail) may be in the log
MESSAGE_CHARS = 300
DETAIL_CHARS = 160


@dataclass(frozen=True)
class Guess:
    """An attribution: the responsible seat and the decisive step (None: no answer), with the
    model calls and tokens it cost (0 for the baselines)."""

    seat: int | None
    step: int | None
    calls: int = 0
    tokens: int = 0


def family_of(traj: Trajectory) -> str:
    """Return the engine an episode was played on, as its events show: "household" (household
    and construct episodes), "stat", "physical", or "unknown" (no step events at all)."""
    for e in traj.events:
        if isinstance(e, HouseholdStepEvent):
            return "household"
        if isinstance(e, StatStepEvent):
            return "stat"
        if isinstance(e, PhysicalPhaseEvent | PhysicalCouplingEvent) \
                or e.type == "physical_poses":
            return "physical"
    return "physical" if traj.header.suite == "physical" else "unknown"


def seats_of(traj: Trajectory) -> int:
    """Return the number of seats in the episode's team (its header's `team`)."""
    return len(traj.header.team)


def seat_names(traj: Trajectory) -> list[str]:
    """Return each seat's name as the header gives it (agent_0, robot1, ...), by seat index."""
    return [a.id for a in traj.header.team]


def _name(traj: Trajectory, seat: int) -> str:
    team = traj.header.team
    return team[seat].id if 0 <= seat < len(team) else f"agent_{seat}"


def step_numbers(traj: Trajectory) -> list[int]:
    """Return the steps the team played, in order: the `t` of every household or STAT step
    event; for a physical episode every control step from 0 to the last one recorded."""
    fam = family_of(traj)
    if fam == "household":
        return [e.t for e in traj.steps(HouseholdStepEvent)]
    if fam == "stat":
        return [e.t for e in traj.steps(StatStepEvent)]
    # a physical episode records only what happened (phases, coupling events, skills, poses);
    # the robots were controlled at every step up to the last one an event names
    last = max((e.t for e in traj.events), default=-1)
    return list(range(last + 1))


def steps_of(traj: Trajectory) -> int:
    """Return the number of team steps played (control steps for a physical episode)."""
    return len(step_numbers(traj))


def random_guess(traj: Trajectory, seed: int) -> Guess:
    """Return a seat drawn uniformly from the team and a step drawn uniformly from the steps
    played (None where there are none), the same for the same seed and episode."""
    # the episode id enters the seed so one seed gives independent draws across episodes
    digest = hashlib.sha256(f"{seed}/{traj.header.episode_id}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    n, steps = seats_of(traj), step_numbers(traj)
    seat = int(rng.integers(n)) if n else None
    step = steps[int(rng.integers(len(steps)))] if steps else None
    return Guess(seat, step)


def acted(record: ActionRecord) -> bool:
    """Return whether a household action record is a real action: one that could change the
    world (not wait, receive, done or none, and not a reply that could not be read)."""
    return record.action not in PASSIVE and record.outcome != "protocol_failure"


def last_agent(traj: Trajectory) -> Guess:
    """Return the last agent to act and the step it acted at (Guess(None, None) if nobody did).

    Household and construct episodes: the last step with a real action (`acted`). STAT: the
    last step where an agent's executed action was not IDLE (moving, executing or selecting
    changes the state; a conflict loser's action was turned into IDLE). Physical: the last
    robot to start a skill (its `skill` message); an episode without skill decisions (scripted
    or learned policies) falls back to the last coupling event (drop, collision, partner lag)
    and then to the last control step. Several agents acting in one step: the highest seat,
    because the household engine executes a step's actions in seat order, so that seat acted
    last; STAT and physical agents act at once and follow the same convention.
    """
    fam = family_of(traj)
    if fam == "household":
        for e in reversed(traj.steps(HouseholdStepEvent)):
            seats = [a.agent for a in e.actions if acted(a)]
            if seats:
                return Guess(max(seats), e.t)
        return Guess(None, None)
    if fam == "stat":
        for e in reversed(traj.steps(StatStepEvent)):
            seats = [i for i, a in enumerate(e.executed) if a != 0]
            if seats:
                return Guess(max(seats), e.t)
        return Guess(None, None)
    skills = [m for m in traj.steps(MessageEvent) if m.phase == "skill"]
    if skills:
        return Guess(skills[-1].sender, skills[-1].t)
    coupling = [e for e in traj.steps(PhysicalCouplingEvent) if e.robots]
    if coupling:
        return Guess(max(coupling[-1].robots), coupling[-1].t)
    steps = step_numbers(traj)
    if steps and seats_of(traj):
        return Guess(seats_of(traj) - 1, steps[-1])
    return Guess(None, None)


# -- the log a judge reads --------------------------------------------------------------------

def _short(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _household_line(traj: Trajectory, t: int, a: ActionRecord) -> str:
    args = []
    for k, v in a.args.items():
        # the class of the object an action names tells a reader what was grabbed or opened
        args.append(f"{k}={v}:{a.obj_class}" if k == "obj" and a.obj_class else f"{k}={v}")
    line = f"step {t}, {_name(traj, a.agent)}: {a.action}({', '.join(args)}) -> {a.outcome}"
    if a.detail:
        line += f" [{_short(a.detail, DETAIL_CHARS)}]"
    if a.completed:
        line += f"; completed {', '.join(a.completed)}"
    return line


def stat_label(action: int) -> str:
    """Return a STAT action's text: idle, move, execute or select(task=j)."""
    return {IDLE: "idle", MOVE: "move", EXECUTE: "execute"}.get(
        action, f"select(task={action - SELECT0})")


def _stat_lines(traj: Trajectory, e: StatStepEvent) -> list[str]:
    lines = []
    for i, (want, done) in enumerate(zip(e.actions, e.executed, strict=False)):
        outcome = "ok"
        if done != want:
            lost = next((c for c in e.conflicts if i in c.agents and c.winner != i), None)
            if lost is not None:
                won = "nobody" if lost.winner is None else _name(traj, lost.winner)
                outcome = f"conflict_lost to {won} (idled)"
            else:
                outcome = f"executed as {stat_label(done)}"
        line = f"step {e.t}, {_name(traj, i)}: {stat_label(want)} -> {outcome}"
        tasks = [str(task) for agent, task in e.completed if agent == i]
        if tasks:
            line += f"; completed task {', '.join(tasks)}"
        lines.append(line)
    return lines


def _skill_line(traj: Trajectory, m: MessageEvent) -> str:
    try:
        note = json.loads(m.content)
    except ValueError:
        note = None
    if not isinstance(note, dict):
        return f"step {m.t}, {_name(traj, m.sender)}: starts {_short(m.content, MESSAGE_CHARS)}"
    skill = str(note.get("skill", "?"))
    if note.get("seconds") is not None:
        skill += f" {note['seconds']} s"
    line = f"step {m.t}, {_name(traj, m.sender)}: starts {skill}"
    if note.get("suggested"):
        line += f" (suggested: {note['suggested']})"
    if note.get("after"):
        line += f"; previous skill {_short(note['after'], DETAIL_CHARS)}"
    if note.get("fallback"):
        line += f"; fallback: {_short(note['fallback'], DETAIL_CHARS)}"
    return line


def _message_line(traj: Trajectory, m: MessageEvent) -> str:
    if m.recipients is None:
        to = "all"
    elif m.recipients:
        to = "+".join(_name(traj, r) for r in m.recipients)
    else:
        to = "nobody"
    phase = m.phase + (f" round {m.round}" if m.round else "")
    return (f"step {m.t}, {_name(traj, m.sender)} -> {to} ({phase}): "
            f"{_short(m.content, MESSAGE_CHARS)}")


def _coupling_line(traj: Trajectory, e: PhysicalCouplingEvent) -> str:
    who = "+".join(_name(traj, r) for r in e.robots) or "team"
    what = {"partner_lag": f"partner_lag {e.value or 0:.2f} s between the first and the last "
                           "robot taking hold",
            "drop": "drop: lost hold of the lifted object",
            "robot_collision": f"robot_collision, {e.value or 0:g} steps in contact"}[e.kind]
    return f"step {e.t}, {who}: {what}"


def _outcome(traj: Trajectory) -> str:
    """Return the closing line: how the episode ended and how far the team got."""
    end = traj.end
    how = "the episode has no end event (incomplete)" if end is None else (
        end.termination + ("" if end.success == (end.termination == "success")
                           else f" (success: {str(end.success).lower()})")
        + (f" ({_short(end.detail, DETAIL_CHARS)})" if end.detail else ""))
    fam = family_of(traj)
    if fam == "household":
        steps = traj.steps(HouseholdStepEvent)
        if steps:
            need = traj.header.params.get("required") or {}
            met = ", ".join(f"{k} {v}/{need.get(k, 1)}" for k, v in steps[-1].satisfied.items())
            how += f"; subgoals met: {met or 'none defined'}"
    elif fam == "stat":
        done = sum(len(e.completed) for e in traj.steps(StatStepEvent))
        total = traj.header.params.get("tasks")
        how += f"; tasks completed: {done}" + (f" of {total}" if total else "")
    elif fam == "physical":
        phases = traj.steps(PhysicalPhaseEvent)
        last = traj.header.params.get("until_phase")
        how += f"; phases completed: {len(phases)}" + (f" of {last}" if last else "")
    return f"end after {steps_of(traj)} steps: {how}"


class LogLine(NamedTuple):
    """One line of an episode's log: its step and seat (None: not one step, or not one
    seat) and its text."""

    step: int | None
    seat: int | None
    text: str


def log_entries(traj: Trajectory) -> list[LogLine]:
    """Return the episode's log as `LogLine`s in the order things happened; the last one
    (step None) says how the episode ended. See `timeline`."""
    def coupling(e: PhysicalCouplingEvent) -> list[tuple[int | None, str]]:
        return [(e.robots[0] if len(e.robots) == 1 else None, _coupling_line(traj, e))]

    handlers: dict[type, Callable[[Any], list[tuple[int | None, str]]]] = {
        HouseholdStepEvent: lambda e: [(a.agent, _household_line(traj, e.t, a))
                                       for a in e.actions],
        StatStepEvent: lambda e: list(enumerate(_stat_lines(traj, e))),
        MessageEvent: lambda m: [(m.sender, _skill_line(traj, m) if m.phase == "skill"
                                  else _message_line(traj, m))],
        PhysicalPhaseEvent: lambda e: [(None, f"step {e.t}: phase {e.phase} ({e.name}) "
                                        "completed" + (", a collaborative phase"
                                                       if e.collaborative else ""))],
        PhysicalCouplingEvent: coupling,
    }
    out: list[LogLine] = []
    for e in traj.events:
        # model calls, human decisions and poses are how a step was decided or drawn, not
        # what the team did: the step's actions and messages already say that
        handler = handlers.get(type(e))
        if handler is not None:
            out.extend(LogLine(e.t, seat, line) for seat, line in handler(e))
    out.append(LogLine(None, None, _outcome(traj)))
    return out


def timeline(traj: Trajectory) -> list[str]:
    """Return the log a judge reads: one line per (step, agent) saying what the agent did and
    how it went ("step 4, agent_1: grab(obj=27:cupcake) -> ok"), one per message ("step 4,
    agent_0 -> all (broadcast): ..."), and for physical episodes one per skill a robot starts,
    phase completed and coupling event; the last line says how the episode ended. Lines are
    in the order things happened (a step's messages before its actions); the text is a pure
    function of the trajectory."""
    return [entry.text for entry in log_entries(traj)]


def goal_of(traj: Trajectory) -> str:
    """Return the episode's task in one line, from its header (and first step's subgoals)."""
    h, p = traj.header, traj.header.params
    fam = family_of(traj)
    if isinstance(p.get("goal"), str):
        return p["goal"]
    if fam == "household":
        first = next(iter(traj.steps(HouseholdStepEvent)), None)
        need = p.get("required") or {}
        keys = list(first.satisfied) if first is not None else list(need)
        goals = ", ".join(f"{k} x{need.get(k, 1)}" for k in keys) or "(not recorded)"
        kind = p.get("family") or p.get("structure") or h.suite
        budget = p.get("team_steps") or p.get("budget")
        return (f"{h.suite} task {h.task_id} ({kind}): reach the subgoals {goals}"
                + (f" within {budget} steps" if budget else ""))
    if fam == "stat":
        size = f" on a {p['width']}x{p['height']} grid" if "width" in p and "height" in p else ""
        return (f"STAT {h.task_id}: the agents complete all {p.get('tasks', '?')} tasks{size}"
                + (f" within {p['episode_limit']} steps" if p.get("episode_limit") else ""))
    if fam == "physical":
        return (f"physical task {h.task_id}: the robots complete its phases 1 to "
                f"{p.get('until_phase', 3)} in order")
    return f"{h.suite} task {h.task_id}"
