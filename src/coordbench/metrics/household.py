"""MECoBench metrics: pure functions of one household trajectory.

Source: "MECoBench" (2026), Sections 3.2 and 6; where the paper gives no exact rule, the
definition below is coordbench's, documented in docs/household.md. A metric that does not apply
to an episode returns None (reported as n/a), never 0.
"""

from __future__ import annotations

from coordbench.core.trajectory import (
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    Trajectory,
)
from coordbench.metrics.behaviour import claims_completion


def _steps(traj: Trajectory) -> list[HouseholdStepEvent]:
    return traj.steps(HouseholdStepEvent)


def _actions(traj: Trajectory):
    return [a for e in _steps(traj) for a in e.actions]


def success(traj: Trajectory) -> float:
    """Return SR for one episode: 1.0 if every subgoal was met, else 0.0."""
    end = traj.end
    return 1.0 if end is not None and end.success else 0.0


def completion_rate(traj: Trajectory) -> float:
    """Return CR: satisfied object instances / required instances at the end (0 if no step)."""
    steps = _steps(traj)
    return steps[-1].completion if steps else 0.0


def completion_curve(traj: Trajectory) -> list[float]:
    """Return CR(e) for e = 1..B effective steps (B the budget): the team's completion after
    the team step that contains effective step e (team step t covers e in ((t-1)n, tn]),
    held at its final value after the episode ends, and 0 before any step."""
    n = int(traj.header.params["agents"])
    budget = int(traj.header.params["budget"])
    curve = [e.completion for e in _steps(traj)]
    if not curve:
        return [0.0] * budget
    return [curve[min((e + n - 1) // n, len(curve)) - 1] for e in range(1, budget + 1)]


def step_auc(traj: Trajectory) -> float:
    """Return the Step-CR AUC: (1/B) sum_{e=1..B} CR(e), B the effective-step budget.

    After team step t the team has used e = t*n effective steps; CR(e) for e in
    ((t-1)n, tn] is the completion after step t (credit at the step that achieved it), and
    CR stays at its final value after the episode ends (`completion_curve`). So AUC is in
    [0, 1] and rewards early completion.
    """
    curve = completion_curve(traj)
    return sum(curve) / len(curve) if curve else 0.0


def n_objects(traj: Trajectory) -> int:
    """Return the number of target objects (the sum of the subgoals' required counts; each
    target object is one unit of MECoBench's "#objects")."""
    return int(sum(traj.header.params.get("required", {}).values()))


def _calls(traj: Trajectory) -> list[ModelCallEvent]:
    return traj.steps(ModelCallEvent)


def tokens_per_step(traj: Trajectory) -> float:
    """Return model tokens (prompt + completion, every call) / effective steps used.

    0 for teams without a model. Cached replies count their original usage.
    """
    used = len(_actions(traj))
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in _calls(traj))
    if not tokens:  # trajectories that carry usage only on actions and messages
        tokens = sum(a.tokens for a in _actions(traj)) + sum(
            m.tokens for m in traj.events if getattr(m, "type", "") == "message")
    return tokens / used if used else 0.0


def protocol_failures(traj: Trajectory) -> int:
    """Return act-phase protocol failures plus communicate-phase replies that failed to parse."""
    acts = sum(a.outcome == "protocol_failure" for a in _actions(traj))
    talk = sum(c.parse_status == "failed" for c in _calls(traj) if c.phase != "act")
    return acts + talk


def division_of_labor(traj: Trajectory) -> float | None:
    """Return DOL = (1 - sum_i s_i^2) / (1 - 1/n), s_i = agent i's share of completions.

    A completion is credited to the agent whose put_on/put_in raised a subgoal's count.
    None for single agents, for sequential tasks (the receiver places everything, so DOL is
    trivially 0 there) and for episodes with no completion.
    """
    n = int(traj.header.params["agents"])
    if n < 2 or traj.header.params.get("structure") == "sequential":
        return None
    counts = [0] * n
    for a in _actions(traj):
        counts[a.agent] += len(a.completed)
    total = sum(counts)
    if total == 0:
        return None
    return (1 - sum((c / total) ** 2 for c in counts)) / (1 - 1 / n)


def conflict_action_rate(traj: Trajectory) -> float:
    """Return CAR = agent-actions in a same-step conflict group of >= 2 / all actions.

    The groups are the step events' conflicts, which the engine records under the episode's
    conflict set (header `params["conflict_set"]`): MECoBench's same-step grab/open on one
    object by default ("paper"); "with_close" also contends same-step closes.
    """
    actions = _actions(traj)
    involved = sum(len(c.agents) for e in _steps(traj) for c in e.conflicts)
    return involved / len(actions) if actions else 0.0


def handover_failure_rate(traj: Trajectory) -> float | None:
    """Return HFR = failed handover attempts / handover attempts; None if none was attempted."""
    tries = [a for a in _actions(traj) if a.action == "handover"]
    if not tries:
        return None
    return sum(a.outcome != "ok" for a in tries) / len(tries)


# the actions that move an agent: MECoBench's spatial error is an attempt to move to a
# location outside the agent's assigned region (paper Table 12's caption)
MOVES = frozenset({"walk", "walk_to_room", "walk_to_door"})


def spatial_error_rate(traj: Trajectory) -> float | None:
    """Return the spatial error rate: attempts to move (walk to an object, a room or a door)
    that were refused as outside the agent's zone / all actions; None for parallel tasks (no
    zones). Grabs, puts and opens refused out of zone are not moves (`out_of_zone_rate`
    counts them too)."""
    if traj.header.params.get("structure") != "sequential":
        return None
    actions = _actions(traj)
    bad = sum(a.outcome == "out_of_zone" and a.action in MOVES for a in actions)
    return bad / len(actions) if actions else 0.0


def out_of_zone_rate(traj: Trajectory) -> float | None:
    """Return coordbench's earlier spatial error: every action refused as out of zone (moves,
    grabs, puts, opens) / all actions; None for parallel tasks."""
    if traj.header.params.get("structure") != "sequential":
        return None
    actions = _actions(traj)
    return sum(a.outcome == "out_of_zone" for a in actions) / len(actions) if actions else 0.0


def duplicate_grabs(traj: Trajectory) -> int:
    """Return grab attempts on an object a teammate holds or grabbed in the same step."""
    out = 0
    for e in _steps(traj):
        out += sum(1 for a in e.actions if a.action == "grab" and a.outcome == "held_by_other")
        out += sum(len(c.agents) - 1 for c in e.conflicts
                   if any(a.action == "grab" and a.args.get("obj") == c.target
                          for a in e.actions))
    return out


def wrong_class_grabs(traj: Trajectory) -> int:
    """Return successful grabs of objects whose class no subgoal asks for (misidentification)."""
    goal = set(traj.header.params.get("goal_classes", []))
    return sum(1 for a in _actions(traj) if a.action == "grab" and a.outcome == "ok"
               and a.obj_class is not None and a.obj_class not in goal)


def hallucinated_completion(traj: Trajectory) -> bool:
    """Return whether an agent declared the task finished while subgoals remained.

    A declaration is a `done` action at step t, or a message sent at step t that states the
    whole task is finished (`behaviour.claims_completion`: "The task is complete", "All items
    have been placed", ...), MECoBench's false-completion case. "Remained" is judged on what
    the agent could know at that moment: the completion before step t's actions (after step
    t-1; 0 at t = 0) for a message, which is sent before the step's actions, and after step t
    for a `done` action, which is part of it. Shared-memory boards are not messages.
    """
    return bool(traj.memo("hallucinated_completion", _hallucinated))


def _hallucinated(traj: Trajectory) -> bool:
    steps = _steps(traj)
    if any(e.completion < 1.0 and any(a.action == "done" for a in e.actions) for e in steps):
        return True
    before = {e.t + 1: e.completion for e in steps}
    return any(m.phase != "memory" and before.get(m.t, 0.0) < 1.0
               and claims_completion(m.content) for m in traj.steps(MessageEvent))


def episode_metrics(traj: Trajectory) -> dict[str, float | None]:
    """Return every per-episode metric by its report name."""
    return {
        "SR": success(traj),
        "CR": completion_rate(traj),
        "AUC": step_auc(traj),
        "tokens_per_step": tokens_per_step(traj),
        "protocol_failures": float(protocol_failures(traj)),
        "DOL": division_of_labor(traj),
        "CAR": conflict_action_rate(traj),
        "HFR": handover_failure_rate(traj),
        "spatial_error": spatial_error_rate(traj),
        "out_of_zone": out_of_zone_rate(traj),
        "duplicate_grabs": float(duplicate_grabs(traj)),
        "wrong_class_grabs": float(wrong_class_grabs(traj)),
        "hallucinated_completion": float(hallucinated_completion(traj)),
        "steps": float(len(_steps(traj))),
    }


# how each metric's interval is drawn (core.stats.estimate): 0/1 outcomes get Wilson
# intervals, shares a t-interval clipped to [0, 1]; counts and steps a plain t-interval
KINDS = {"SR": "binary", "hallucinated_completion": "binary", "CR": "unit", "AUC": "unit",
         "DOL": "unit", "CAR": "unit", "HFR": "unit", "spatial_error": "unit",
         "out_of_zone": "unit"}
