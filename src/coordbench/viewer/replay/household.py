"""Household-engine replay shared by MECoBench and the constructs (both play on
envs/household): rebuild the engine from the task and the recorded seed, feed it the
recorded actions step by step, and snapshot what the picture draws after each step.

Only the nodes an episode touches are drawn: rooms, doors, the goal's targets and objects,
every node an action named, buffers, the knife and shared stations. The replay checks every
recorded outcome code and the recorded subgoal counts against the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordbench.core.trajectory import HouseholdStepEvent, Trajectory
from coordbench.envs.household.actions import WAIT, Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.task import HouseholdTask

# a recorded failure of the agent (no action, or an unparseable one): the engine ran a wait
_NOT_EXECUTED = ("none",)


def _action(name: str, args: dict[str, Any]) -> Action:
    keys = ("obj", "target", "room", "to_agent")
    return Action(name, **{k: args[k] for k in keys if k in args})


def _relevant(task: HouseholdTask, traj: Trajectory, extra: Sequence[int]) -> list[int]:
    sc = task.scene
    ids: set[int] = set(sc.doors) | set(task.buffers) | set(task.shared_nodes) | set(extra)
    goal_classes = {g.obj_class for g in task.subgoals}
    for g in task.subgoals:
        ids.update(g.targets)
    for nid, n in sc.nodes.items():
        if n.grabbable and n.class_name in goal_classes:
            ids.add(nid)
            # where a goal object starts (the counter, the shelf) gives the picture context
            ids.update(p for _, p in sc.parents.get(nid, ()))
    for e in traj.steps(HouseholdStepEvent):
        for a in e.actions:
            for k in ("obj", "target"):
                v = a.args.get(k)
                if isinstance(v, int) and v in sc.nodes:
                    ids.add(v)
    return sorted(i for i in ids if i in sc.nodes and i not in sc.rooms)


def _static(task: HouseholdTask, n: int, nodes: list[int], tags: dict[int, list[str]]
            ) -> dict[str, Any]:
    sc = task.scene
    goal_targets = {t for g in task.subgoals for t in g.targets}
    goal_classes = {g.obj_class for g in task.subgoals}
    out_nodes = []
    for nid in nodes:
        nd = sc.nodes[nid]
        t = list(tags.get(nid, []))
        if nid in sc.doors:
            t.append("door")
        if nid in goal_targets:
            t.append("target")
        if nd.grabbable and nd.class_name in goal_classes:
            t.append("goal")
        if nid in task.buffers:
            t.append("buffer")
        if nid in task.shared_nodes:
            t.append("shared")
        out_nodes.append({"id": nid, "cls": nd.class_name, "x": round(nd.x, 3),
                          "z": round(nd.z, 3), "w": round(nd.size[0], 3),
                          "d": round(nd.size[2], 3), "grabbable": nd.grabbable,
                          "openable": nd.can_open, "tags": t})
    return {
        "rooms": [{"id": r, "name": name, "rect": list(sc.room_rects[r])}
                  for r, name in sc.rooms.items()],
        "doors": [{"id": d, "rooms": list(pair)} for d, pair in sc.doors.items()],
        "nodes": out_nodes,
        "zones": [task.allowed_rooms(i) for i in range(n)] if task.zones else None,
        "roles": task.roles,
        "buffers": {str(k): v for k, v in task.buffers.items()},
        "owners": {str(k): v for k, v in task.owners.items()},
        "subgoals": [{"key": g.key, "relation": g.relation, "cls": g.obj_class,
                      "targets": list(g.targets), "count": g.count} for g in task.subgoals],
        "other_nodes": len(sc.nodes) - len(nodes) - len(sc.rooms),
    }


def _snapshot(env: HouseholdEnv, nodes: list[int], knife: int | None) -> dict[str, Any]:
    objs = {}
    for nid in nodes:
        node = env.scene.nodes[nid]
        if not node.grabbable or nid in env.holder:
            continue
        x, z = env.node_pos[nid]
        parent = next((p for _, p in env.parents.get(nid, ())), None)
        objs[str(nid)] = [round(x, 3), round(z, 3), parent]
    return {
        "agents": [{"room": env.room[i], "x": round(env.pos[i][0], 3),
                    "z": round(env.pos[i][1], 3), "held": list(env.held[i]),
                    "door": env.at_door[i]} for i in range(env.n)],
        "objects": objs,
        "open": [nid for nid in nodes if env.open_state.get(nid) is True],
        "sliced": [nid for nid in nodes if "SLICED" in env.states.get(nid, ())],
        "switched_on": [nid for nid in nodes if "ON" in env.states.get(nid, ())],
        "buffers": {str(b): env.buffer_load(b) for b in env.task.buffers},
        "knife_owner": env.holder.get(knife) if knife is not None else None,
        "satisfied": env.satisfied(),
        "completion": env.completion_rate(),
    }


def replay(kind: str, task: HouseholdTask, traj: Trajectory, n: int, seed: int,
           order: Sequence[int] | None = None, knife: int | None = None,
           source: str = "") -> dict[str, Any]:
    """Return the picture of a household-engine episode: the static scene, the state after
    every step (index 0: the start), and how the replay compared with the record."""
    # trajectories that do not record their conflict set (construct ones, older ones)
    # contended closes too
    env = HouseholdEnv(task, n, seed, traj.header.params.get("conflict_set", "with_close"))
    extra = [knife] if knife is not None else []
    nodes = _relevant(task, traj, extra)
    tags = {knife: ["knife"]} if knife is not None else {}
    states = [_snapshot(env, nodes, knife)]
    mismatch = None
    checked = 0
    for e in traj.steps(HouseholdStepEvent):
        actions = [WAIT] * n
        for a in e.actions:
            if a.action not in _NOT_EXECUTED:
                actions[a.agent] = _action(a.action, a.args)
        outcomes = env.step(actions, order)
        for a in e.actions:
            if a.action in _NOT_EXECUTED:
                continue
            checked += 1
            got = outcomes[a.agent].code
            if mismatch is None and got != a.outcome:
                mismatch = (f"step {e.t}, agent {a.agent} {a.action}: recorded {a.outcome}, "
                            f"replayed {got}")
        if mismatch is None and env.satisfied() != e.satisfied:
            mismatch = f"step {e.t}: subgoal counts {e.satisfied} recorded, {env.satisfied()} " \
                       "replayed"
        states.append(_snapshot(env, nodes, knife))
    end = traj.end
    if mismatch is None and end is not None and end.success != env.success():
        mismatch = f"recorded success={end.success}, the replay ends with {env.success()}"
    return {"kind": kind, "static": _static(task, n, nodes, tags), "states": states,
            "replay": {"available": True, "ok": mismatch is None, "checked": checked,
                       "mismatch": mismatch, "engine": "envs.household.engine",
                       "source": source}}
