"""The coordination profile: six family-independent measures of how a team coordinated, each
a pure function of one trajectory of any family, with one written definition per family
(the table in docs/cross-family.md is the reference; the per-family functions below say the
same).

- redundancy: duplicated claims per decision. STAT: the extra agents of each conflict
  (`len(agents) - 1`) / decisions (agents with a choice, `decision_pre`). Household and
  constructs: the extra agents of each same-step conflict group + grabs of an object a
  teammate holds / agent actions. Physical: n/a (robots make no discrete claims).
- idle_share: agent-steps without work / agent-steps. STAT: the agent chose IDLE (a
  conflict's loser, idled by the rule, tried to work: redundancy counts it). Household and
  constructs: wait, done, a receive that no hand-over reached that step, or no action.
  Physical: 0.1 s pose samples in which no base or joint coordinate of the robot moved more
  than 1 mm / 1 mrad, over robot samples.
- division_of_labour: DOL = (1 - sum_i s_i^2) / (1 - 1/n), s_i agent i's share of the units
  of work: STAT task completions; household subgoal completions (MECoBench's DOL, n/a for
  sequential tasks); constructs successful skill executions; physical n/a (phases are joint).
- handoff_failure: STAT n/a; household failed handovers / handovers; constructs failed
  handovers and buffer puts / their attempts; physical (Handover) 1 if the exchange phase was
  not reached after the pick, else 0.
- comm_per_unit: messages / units of work (physical: phases completed).
- progress_per_step: the share of the task done / steps (STAT joint steps, household and
  construct team steps, physical 50 Hz control steps).

Messages are every `message` event (broadcasts, discussion, reports, leader assignments,
shared-memory writes) except those to no one (`recipients` []: the skill choices a
model-driven physical robot records); `tokens_per_unit` adds model tokens (prompt +
completion of every model call) per unit, None for teams without a model. A ratio is None
(n/a) where its denominator is 0, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from coordbench.core.trajectory import (
    ActionRecord,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    PhysicalPhaseEvent,
    PhysicalPosesEvent,
    StatStepEvent,
    Trajectory,
)
from coordbench.runner.family import family

# the contract's measures, in table order, then the extensions
MEASURES = ("redundancy", "idle_share", "division_of_labour", "handoff_failure",
            "comm_per_unit", "progress_per_step")
EXTRA = ("tokens_per_unit",)
KEYS = MEASURES + EXTRA
# how each measure's interval is drawn (core.stats.estimate)
KINDS = {"redundancy": "nonneg", "idle_share": "unit", "division_of_labour": "unit",
         "handoff_failure": "unit", "comm_per_unit": "nonneg", "progress_per_step": "nonneg",
         "tokens_per_unit": "nonneg"}

STAT_IDLE = 0  # envs.stat.config.IDLE; metrics do not import the environment
HOUSEHOLD_IDLE = frozenset({"wait", "done", "none"})
# a physical robot counts as idle over a pose sample when no coordinate moved more than this
# (poses are stored in units of 1e-4: 10 units = 1 mm or 1 mrad)
POSE_STILL = 10
# the phase (1-based) that is a hand-off, by physical task
HANDOFF_PHASE = {"Handover": 2}

Profile = dict[str, float | None]


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def dol(units: Sequence[int]) -> float | None:
    """Return DOL = (1 - sum s_i^2) / (1 - 1/n) over per-agent unit counts; None for one agent
    or no unit."""
    n, total = len(units), sum(units)
    if n < 2 or total == 0:
        return None
    return (1 - sum((u / total) ** 2 for u in units)) / (1 - 1 / n)


def _communication(traj: Trajectory, units: float) -> Profile:
    # a message to no one (recipients []: a physical robot's skill choice) is a recorded
    # decision, not communication
    messages = sum(m.recipients != [] for m in traj.steps(MessageEvent))
    calls = traj.steps(ModelCallEvent)
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    return {"comm_per_unit": _ratio(messages, units),
            "tokens_per_unit": _ratio(tokens, units) if calls else None}


def stat_profile(traj: Trajectory) -> Profile:
    """Return the profile of a STAT episode (definitions in the module docstring)."""
    steps: list[StatStepEvent] = traj.steps(StatStepEvent)
    n = int(traj.header.params["agents"])
    n_tasks = int(traj.header.params["tasks"])
    decisions = sum(e.decision_pre for e in steps)
    duplicates = sum(len(c.agents) - 1 for e in steps for c in e.conflicts)
    # submitted, not executed: a conflict's loser tried to work (as a household agent whose
    # grab lost its conflict did), it is counted by redundancy, not as idle
    idle = sum(a == STAT_IDLE for e in steps for a in e.actions)
    done = [0] * n
    for e in steps:
        for agent, _task in e.completed:
            done[agent] += 1
    units = sum(done)
    return {"redundancy": _ratio(duplicates, decisions),
            "idle_share": _ratio(idle, n * len(steps)),
            "division_of_labour": dol(done),
            "handoff_failure": None,
            **_communication(traj, units),
            "progress_per_step": _ratio(units / n_tasks if n_tasks else 0.0, len(steps))}


def _duplicates(steps: list[HouseholdStepEvent]) -> int:
    return sum(len(c.agents) - 1 for e in steps for c in e.conflicts) + sum(
        a.outcome == "held_by_other" for e in steps for a in e.actions)


def _idle_agent_steps(steps: list[HouseholdStepEvent], n: int) -> int:
    idle = 0
    for e in steps:
        received = {a.args.get("to_agent") for a in e.actions
                    if a.action == "handover" and a.outcome == "ok"}
        working = {a.agent for a in e.actions if a.action not in HOUSEHOLD_IDLE
                   and not (a.action == "receive" and a.agent not in received)}
        idle += n - len(working)
    return idle


def _household_like(traj: Trajectory, unit: Callable[[ActionRecord], int],
                    handoff: Callable[[ActionRecord], bool], dol_applies: bool) -> Profile:
    steps: list[HouseholdStepEvent] = traj.steps(HouseholdStepEvent)
    n = int(traj.header.params["agents"])
    actions = [a for e in steps for a in e.actions]
    done = [0] * n
    for a in actions:
        done[a.agent] += unit(a)
    tries = [a for a in actions if handoff(a)]
    completion = steps[-1].completion if steps else 0.0
    return {"redundancy": _ratio(_duplicates(steps), len(actions)),
            "idle_share": _ratio(_idle_agent_steps(steps, n), n * len(steps)),
            "division_of_labour": dol(done) if dol_applies else None,
            "handoff_failure": _ratio(sum(a.outcome != "ok" for a in tries), len(tries)),
            **_communication(traj, sum(done)),
            "progress_per_step": _ratio(completion, len(steps))}


def household_profile(traj: Trajectory) -> Profile:
    """Return the profile of a household (MECoBench) episode."""
    return _household_like(
        traj, unit=lambda a: len(a.completed), handoff=lambda a: a.action == "handover",
        dol_applies=traj.header.params.get("structure") != "sequential")


def construct_profile(traj: Trajectory) -> Profile:
    """Return the profile of a construct (CoCoBench) episode."""
    buffers = set(traj.header.params.get("construct", {}).get("buffers", []))
    return _household_like(
        traj,
        unit=lambda a: int(a.outcome == "ok" and a.action not in HOUSEHOLD_IDLE
                           and a.action != "receive"),
        handoff=lambda a: a.action == "handover" or (
            a.action == "put_on" and a.args.get("target") in buffers),
        dol_applies=True)


def _pose_idle(traj: Trajectory) -> float | None:
    poses: list[PhysicalPosesEvent] = traj.steps(PhysicalPosesEvent)
    if not poses:
        return None
    p = poses[-1]
    idle = total = 0
    for k in range(1, len(p.robots)):
        if p.steps[k] - p.steps[k - 1] != p.every:  # the last, shorter interval
            continue
        for robot in p.robots[k]:
            total += 1
            idle += max(abs(v) for v in robot) <= POSE_STILL
    return _ratio(idle, total)


def physical_profile(traj: Trajectory) -> Profile:
    """Return the profile of a physical (CoHuB) episode."""
    params = traj.header.params
    start = int(params.get("start_phase", 0))
    until = int(params.get("until_phase", 3))
    reached = max((e.phase for e in traj.steps(PhysicalPhaseEvent)), default=start)
    steps = (traj.end.t - int(params.get("start_step", 0))) if traj.end else 0
    handoff = HANDOFF_PHASE.get(traj.header.task_id)
    failed = None
    if handoff is not None and start < handoff <= until and reached >= handoff - 1:
        failed = float(reached < handoff)
    units = reached - start
    return {"redundancy": None, "idle_share": _pose_idle(traj), "division_of_labour": None,
            "handoff_failure": failed, **_communication(traj, units),
            "progress_per_step": _ratio(units / max(1, until - start), steps)}


def episode_profile(traj: Trajectory) -> Profile:
    """Return {measure: value or None} for one episode of any family (every key of `KEYS`);
    ValueError for a suite without a profile."""
    f = family(traj.header.suite)
    fn = f.get("profile") if f is not None else None
    if fn is None:
        raise ValueError(f"no coordination profile for suite {traj.header.suite!r}")
    out = traj.memo("profile", fn)
    return {k: out.get(k) for k in KEYS}
