"""Stable action menus over the household engine, and what each entry means to one agent.

A menu is every (agent, action) an episode can ever offer over a set of nodes, in a fixed
order, so an entry's index names it for the whole episode: the construct model planners pick
ids from it, the PettingZoo wrapper (`pettingzoo_env.py`) uses each agent's entries as its
Discrete actions, and learned teams score entries by their features. `plausible` says which
entries make sense now (held objects for put and drop, visible ones otherwise), the masks;
`entry_features` describes an entry from one agent's point of view in a fixed-length vector
that does not depend on the instance (so one network serves every instance of a family).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .actions import Action
from .engine import MAX_HELD, REACH, HouseholdEnv

VERBS = ("wait", "walk", "walk_to_room", "walk_to_door", "grab", "drop", "open", "close",
         "slice", "put_in", "put_on", "handover", "receive")
# per-entry features after the verb one-hot (see `entry_features`)
FEATURES = ("obj_visible", "obj_in_reach", "obj_held_by_me", "obj_held_by_other",
            "obj_goal_item", "obj_in_place", "obj_open", "obj_distance", "obj_buffer",
            "target_goal_for_obj", "target_open", "target_buffer_full", "me_hands_full",
            "same_room", "goal_state_target", "completion", "time_left", "obj_nearer_mate",
            "agent_index")
N_FEATURES = len(VERBS) + len(FEATURES)


def construct_nodes(info: dict[str, Any]) -> list[int]:
    """Return the nodes a construct instance's menu covers (its items, containers, buffers,
    targets, knife, source and target), sorted."""
    return sorted({*info.get("items", []), *info.get("containers", []),
                   *info.get("buffers", []), *map(int, info.get("targets", {}).values()),
                   *([info["knife"]] if info.get("knife") else []),
                   *([info["source"], info["target"]] if info.get("source") else [])})


def household_nodes(env: HouseholdEnv) -> list[int]:
    """Return the nodes a household task's menu covers: every object of a goal class, every
    subgoal target, and every container that opens (goal objects may hide inside), sorted."""
    sc = env.scene
    classes = {sg.obj_class for sg in env.task.subgoals if sg.relation != "state"}
    out = {n for n, node in sc.nodes.items() if node.class_name in classes and node.grabbable}
    out |= {t for sg in env.task.subgoals for t in sg.targets}
    out |= {n for n, node in sc.nodes.items() if node.can_open and node.is_container
            and n in env.node_room}
    return sorted(n for n in out if n in sc.nodes)


def catalog(env: HouseholdEnv, nodes: list[int], household: bool = False
            ) -> list[tuple[int, Action]]:
    """Return every (agent, action) the menu over `nodes` offers, agent by agent in a fixed
    order. `household` adds what household tasks need beyond the construct skills: walking to
    rooms and hand-over doors, handing over to each teammate and receiving."""
    sc = env.scene
    grabbable = [n for n in nodes if sc.nodes[n].grabbable]
    places = [n for n in nodes if sc.nodes[n].is_container or sc.nodes[n].is_surface]
    out: list[tuple[int, Action]] = []
    for a in range(env.n):
        out.append((a, Action("wait")))
        out += [(a, Action("walk", obj=n)) for n in nodes]
        out += [(a, Action("grab", obj=n)) for n in grabbable]
        out += [(a, Action("drop", obj=n)) for n in grabbable]
        out += [(a, Action(v, obj=n)) for n in places if sc.nodes[n].can_open
                for v in ("open", "close")]
        out += [(a, Action("slice", obj=n)) for n in grabbable
                if "CUTTABLE" in sc.nodes[n].properties]
        out += [(a, Action("put_in" if sc.nodes[p].is_container else "put_on", obj=g,
                           target=p)) for g in grabbable for p in places]
        if household:
            out += [(a, Action("walk_to_room", room=r)) for r in sorted(sc.rooms)]
            out += [(a, Action("walk_to_door", obj=d)) for d in env.task.handover_doors]
            out += [(a, Action("handover", obj=g, to_agent=j)) for g in grabbable
                    for j in range(env.n) if j != a]
            out.append((a, Action("receive")))
    return out


def agent_menus(env: HouseholdEnv, nodes: list[int] | None, household: bool = True
                ) -> list[list[Action]]:
    """Return each agent's menu: its entries of the catalog over `nodes` (None: the task's
    `household_nodes`), in catalog order."""
    chosen = household_nodes(env) if nodes is None else nodes
    per: list[list[Action]] = [[] for _ in range(env.n)]
    for agent, act in catalog(env, chosen, household):
        per[agent].append(act)
    return per


def plausible(env: HouseholdEnv, agent: int, act: Action, strict: bool = False) -> bool:
    """Return whether `act` makes sense for `agent` now: put, drop and hand over only what it
    holds, grab only what nobody holds with a free hand, walk to and use only what it sees,
    walk to rooms and doors it may enter. `strict` (learned teams' masks) also requires what
    it grabs, opens, closes, slices or puts into to be within reach, drops walking to what
    already is, and keeps to the agent's role (its skills, where it may take objects from,
    the objects it alone may slice): the engine would refuse the first and the last
    (too_far, illegal_skill) and the second does nothing."""
    held = env.held[agent]
    if strict and env.roles is not None:
        role = env.roles[agent]
        allowed = env.task.role_skills.get(role)
        if allowed is not None and act.name not in allowed:
            return False
        sources = env.task.role_sources.get(role)
        if act.name == "grab" and sources is not None and not any(
                p in sources for _, p in env.parents.get(act.obj, ())):
            return False
    if strict and act.name == "slice" and env.task.owners.get(act.obj, agent) != agent:
        return False
    if strict and act.name in ("walk", "grab", "open", "close", "slice", "put_in", "put_on"):
        node = act.target if act.name in ("put_in", "put_on") else act.obj
        near = (node in env.node_pos
                and env.distance(env.pos[agent], env.node_pos[node]) <= REACH)
        if near == (act.name == "walk"):
            return False
    if act.name in ("put_in", "put_on", "drop", "handover") and act.obj not in held:
        return False
    if act.name == "grab" and (act.obj in env.holder or len(held) >= MAX_HELD):
        return False
    if act.name in ("walk", "grab", "open", "close", "slice") and not env.is_visible(
            agent, act.obj):
        return False
    if act.name == "walk_to_room" and act.room not in env.allowed[agent]:
        return False
    if act.name == "walk_to_door" and not any(r in env.allowed[agent]
                                              for r in env.scene.doors.get(act.obj, ())):
        return False
    return True


def menu(env: HouseholdEnv, entries: list[tuple[int, Action]], agent: int | None
         ) -> list[tuple[int, int, Action]]:
    """Return (id, agent, action) of the entries plausible now, for one agent or all."""
    return [(k, a, act) for k, (a, act) in enumerate(entries)
            if (agent is None or a == agent) and plausible(env, a, act)]


class Goals:
    """What the task asks, in the form the features need (computed once per episode)."""

    def __init__(self, env: HouseholdEnv) -> None:
        self.targets: dict[str, set[int]] = {}  # object class -> its subgoal targets
        self.state_targets: set[int] = set()
        for sg in env.task.subgoals:
            if sg.relation == "state":
                self.state_targets |= set(sg.targets)
            else:
                self.targets.setdefault(sg.obj_class, set()).update(sg.targets)
        self.buffers = set(env.task.buffers)

    def in_place(self, env: HouseholdEnv, obj: int) -> bool:
        """Return whether `obj` rests on or in one of its class's targets."""
        tg = self.targets.get(env.scene.nodes[obj].class_name, set())
        return any(p in tg for _, p in env.parents.get(obj, ()))


def observe_entries(env: HouseholdEnv, goals: Goals, agent: int, entries: list[Action],
                    progress: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Return one agent's view of its menu, padded to `size` entries: the features of every
    entry (float32 (size, N_FEATURES)) and the strict mask (int8 (size,); padding 0), what
    the PettingZoo environment observes and a learned team acts on."""
    obs = np.zeros((size, N_FEATURES), np.float32)
    mask = np.zeros(size, np.int8)
    cache: dict[Any, Any] = {}
    for k, act in enumerate(entries):
        obs[k] = entry_features(env, goals, agent, act, progress, cache)
        mask[k] = plausible(env, agent, act, strict=True)
    return obs, mask


_F = len(VERBS)
_OBJECT_SLOTS = [_F + k for k in (0, 1, 2, 3, 4, 5, 6, 7, 8, 14, 17)]


def _object_features(env: HouseholdEnv, goals: Goals, agent: int, obj: int) -> np.ndarray:
    """Return the features about `obj` itself, for `agent` (the `_OBJECT_SLOTS` values)."""
    node = env.scene.nodes[obj]
    where = env.node_pos.get(obj)
    near = env.distance(env.pos[agent], where) if where is not None else None
    closer = 0.0
    if where is not None:  # teammates closer to the object (ties: a lower index goes first)
        closer = sum(1 for j in range(env.n) if j != agent and (
            (d := env.distance(env.pos[j], where)) < near or (d == near and j < agent))
        ) / max(1, env.n - 1)
    placed = goals.in_place(env, obj)
    return np.array([
        env.is_visible(agent, obj),
        near is not None and near <= REACH,
        obj in env.held[agent],
        obj in env.holder and env.holder[obj] != agent,
        node.class_name in goals.targets and not placed,
        placed,
        env.open_state.get(obj, False),
        min(1.0, near / 20.0) if near is not None else 1.0,
        obj in goals.buffers,
        obj in goals.state_targets and not env.has_state(obj, "SLICED"),
        closer,
    ], np.float32)


def entry_features(env: HouseholdEnv, goals: Goals, agent: int, act: Action,
                   progress: float = 0.0, cache: dict[Any, Any] | None = None) -> np.ndarray:
    """Return the entry's features for `agent` (float32, `N_FEATURES`): the verb one-hot,
    then `FEATURES` about its object and target (0 where it names none); `progress` is the
    share of the budget used. `cache` (one dict per agent and moment) shares what entries
    about the same object, and every entry, have in common."""
    cache = {} if cache is None else cache
    out = np.zeros(N_FEATURES, np.float32)
    out[VERBS.index(act.name)] = 1.0
    f = _F
    obj = act.obj
    sc = env.scene
    if obj is not None and obj in sc.nodes:
        vals = cache.get(("obj", obj))
        if vals is None:
            vals = cache[("obj", obj)] = _object_features(env, goals, agent, obj)
        out[_OBJECT_SLOTS] = vals
        if act.target is not None:
            tcls = goals.targets.get(sc.nodes[obj].class_name, set())
            out[f + 9] = act.target in tcls
            out[f + 10] = env.open_state.get(act.target, True)
            full = cache.get(("full", act.target))
            if full is None:
                full = cache[("full", act.target)] = (
                    act.target in goals.buffers and env.buffer_load(act.target)
                    >= env.task.buffers.get(act.target, 1 << 30))
            out[f + 11] = full
    if act.name == "walk_to_room":
        out[f + 13] = act.room == env.room[agent]
    team = cache.get("team")
    if team is None:
        team = cache["team"] = (len(env.held[agent]) >= MAX_HELD, env.completion_rate(),
                                agent / max(1, env.n - 1))
    out[f + 12], out[f + 15], out[f + 18] = team
    out[f + 16] = 1.0 - progress
    return out
