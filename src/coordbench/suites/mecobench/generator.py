"""coordbench's MECoBench-style task generator, with placement and oracle quality gates.

A draw picks an apartment, a template, a subgoal count, goal classes and counts, redundant
instances and distractors, and places every object on legal start furniture. The scene is
written in VirtualHome graph format and the task in MECoBench's task format, so it loads
through the same loader as real MECoBench files. Parallel and sequential versions share the
scene: objects start in the giver's zone (the goal room's neighbour and, when there is one,
a room beyond it); the receiver's zone is the goal room.
"""

from __future__ import annotations

import random
from typing import Any

from coordbench.agents.household.oracle import OracleTeam
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.task import HouseholdTask, task_from_dict

from .catalog import (
    APARTMENTS,
    FURNITURE,
    LARGE,
    OBJECTS,
    ROOM_FURNITURE,
    ROOMS,
    START_CONTAINERS,
    START_SURFACES,
    TEMPLATES,
)

MAX_ATTEMPTS = 50


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []

    def add(self, category: str, cls: str, pos: tuple[float, float, float],
            size: tuple[float, float, float], props: tuple[str, ...] = (),
            states: tuple[str, ...] = ()) -> int:
        nid = len(self.nodes) + 1
        self.nodes.append({
            "id": nid, "category": category, "class_name": cls, "prefab_name": cls,
            "obj_transform": {"position": [round(p, 4) for p in pos],
                              "rotation": [0.0, 0.0, 0.0, 1.0], "scale": [1.0, 1.0, 1.0]},
            "bounding_box": {"center": [round(p, 4) for p in pos],
                             "size": [round(s, 4) for s in size]},
            "properties": list(props), "states": list(states)})
        return nid

    def edge(self, a: int, rel: str, b: int) -> None:
        self.edges.append({"from_id": a, "to_id": b, "relation_type": rel})


def _build_apartment(apt: int, rng: random.Random, g: _Graph):
    size, cells, links = APARTMENTS[apt]
    rooms: dict[str, int] = {}
    centre: dict[str, tuple[float, float]] = {}
    for name in ROOMS:
        cx, cz = cells[name]
        centre[name] = (cx * size, cz * size)
        rooms[name] = g.add("Rooms", name, (cx * size, 1.5, cz * size), (size, 3.0, size))
    doors = []
    for a, b in links:
        (ax, az), (bx, bz) = centre[a], centre[b]
        d = g.add("Doors", "door", ((ax + bx) / 2, 1.0, (az + bz) / 2), (0.1, 2.0, 0.9),
                  ("CAN_OPEN",), ("OPEN",))
        g.edge(d, "INSIDE", rooms[a])
        doors.append((d, a, b))
    furniture: dict[str, list[tuple[int, str]]] = {}
    for name in ROOMS:
        cx, cz = centre[name]
        half = size / 2 - 1.4
        slots = [(cx + dx * half, cz + dz * half) for dx, dz in
                 [(-1, -1), (0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0)]]
        rng.shuffle(slots)
        for cls, (x, z) in zip(ROOM_FURNITURE[name], slots, strict=False):
            props, opens, fsize, _ = FURNITURE[cls]
            nid = g.add("Furniture", cls, (x, fsize[1] / 2, z), fsize,
                        props + (("CAN_OPEN",) if opens else ()), ("CLOSED",) if opens else ())
            g.edge(nid, "INSIDE", rooms[name])
            furniture.setdefault(name, []).append((nid, cls))
    return rooms, centre, doors, furniture


def draw_task(index: int, template: str, n_subgoals: int, apartment: int, attempt: int
              ) -> dict[str, Any]:
    """Return one MECoBench-format task dict (both structures' fields) for a seeded draw."""
    rng = random.Random(f"coordbench-mecobench-v1/{index}/{attempt}")
    g = _Graph()
    rooms, centre, doors, furniture = _build_apartment(apartment, rng, g)
    relation, goal_cls, classes = TEMPLATES[template]
    goal_room = next(r for r, items in furniture.items() if any(c == goal_cls for _, c in items))
    goal_id = next(nid for nid, c in furniture[goal_room] if c == goal_cls)
    # zones: giver rooms are the goal room's neighbour N and, when there is one, a room past N
    neigh = {r: [b if a == r else a for _, a, b in doors if r in (a, b)] for r in ROOMS}
    near = rng.choice(sorted(neigh[goal_room]))
    beyond = sorted(r for r in neigh[near] if r != goal_room)
    giver_rooms = [near] + ([rng.choice(beyond)] if beyond else [])
    handover = next(d for d, a, b in doors if {a, b} == {near, goal_room})
    # goal classes and counts
    kinds = rng.randint(1, min(n_subgoals, len(classes)))
    chosen = rng.sample(classes, kinds)
    counts = {c: 1 for c in chosen}
    for _ in range(n_subgoals - kinds):
        counts[rng.choice(chosen)] += 1
    spots = [(nid, cls, r) for r in giver_rooms for nid, cls in furniture[r]
             if cls != goal_cls and (cls in START_SURFACES or cls in START_CONTAINERS)]
    placed: list[dict[str, Any]] = []

    def place(obj_cls: str) -> int:
        fid, fcls, room = rng.choice(spots)
        props, _, fsize, _ = FURNITURE[fcls]
        inside = fcls in START_CONTAINERS and (
            fcls not in START_SURFACES or rng.random() < 0.5)
        fnode = g.nodes[fid - 1]["bounding_box"]["center"]
        cat, osize, _ = OBJECTS[obj_cls]
        pos = (fnode[0] + rng.uniform(-0.3, 0.3), fsize[1] + osize[1] / 2,
               fnode[2] + rng.uniform(-0.2, 0.2))
        nid = g.add(cat, obj_cls, pos, osize, ("GRABBABLE", "MOVABLE"))
        g.edge(nid, "INSIDE", rooms[room])
        g.edge(nid, "INSIDE" if inside else "ON", fid)
        placed.append({"id": nid, "class_name": obj_cls, "room_id": rooms[room],
                       "room_name": room, "placement": {
                           "relation": "INSIDE" if inside else "ON", "target_id": fid,
                           "target_name": fcls, "target_category": "Furniture"}})
        return nid

    for cls, k in counts.items():
        extra = rng.randint(0, 1 if cls in LARGE else 2)
        for _ in range(k + extra):
            place(cls)
    goal_objects = list(placed)
    others = [c for c in OBJECTS if c not in classes]
    for cls in rng.sample(others, 4):
        place(cls)
    goal = {f"{relation}_{cls}_{goal_id}": k for cls, k in counts.items()}
    texts = _goal_texts(rng, relation, goal_cls, goal_room, counts, goal_objects, furniture)
    topology = ", ".join(f"{a}--door({d})--{b}" for d, a, b in doors)
    starts = [rng.choice(ROOMS) for _ in range(5)]
    noisy = {c: [rooms[r] for r in rs] for c, rs in texts.pop("_noisy").items()}
    return {
        "task_id": index, "task_name": template, "env_id": apartment,
        "init_graph": {"nodes": g.nodes, "edges": g.edges},
        "task_goal": {"0": goal, "1": goal}, "goal_target_options": {},
        "goal_item_total": n_subgoals, "goal_item_kind_count": kinds,
        "task_locations": {"goal_objects": goal_objects},
        "goal_targets": [{"id": goal_id, "class_name": goal_cls, "goal_relation": relation,
                          "room_id": rooms[goal_room], "room_name": goal_room}],
        "init_rooms": starts, "department_topology": topology,
        "coordbench_noisy_hints": noisy,
        "coordbench_descriptions": {
            **{n["class_name"]: OBJECTS[n["class_name"]][2] for n in g.nodes
               if n["class_name"] in OBJECTS},
            **{n["class_name"]: FURNITURE[n["class_name"]][3] for n in g.nodes
               if n["class_name"] in FURNITURE}},
        "sequential": {
            "room_constraints": {
                "enabled": True,
                "agents": {"0": {"allowed_room_ids": [rooms[r] for r in giver_rooms],
                                 "allowed_room_names": giver_rooms},
                           "1": {"allowed_room_ids": [rooms[goal_room]],
                                 "allowed_room_names": [goal_room]}},
                "handover_chain": [{"from_agent": 0, "to_agent": 1, "door_id": handover,
                                    "room_pair_ids": [rooms[near], rooms[goal_room]]}],
                "required_handover_count": 1},
            "init_room_ids": [rooms[rng.choice(giver_rooms)], rooms[goal_room]],
            "agent_zone_room_ids": [[rooms[r] for r in giver_rooms], [rooms[goal_room]]]},
        **texts,
    }


def _goal_texts(rng: random.Random, relation: str, goal_cls: str, goal_room: str,
                counts: dict[str, int], objects: list[dict], furniture) -> dict[str, Any]:
    word = "on" if relation == "on" else "in"
    parts: dict[str, list[str]] = {k: [] for k in ("raw", "loc", "desc", "full", "noisy")}
    noisy_rooms: dict[str, list[str]] = {}
    for cls, k in counts.items():
        head = f"Find and put {k} {cls} {word} {goal_cls}"
        where = [f"One {cls} is {o['placement']['relation'].lower()} the "
                 f"{o['placement']['target_name']}, the {o['placement']['target_name']} is "
                 f"inside the {o['room_name']}" for o in objects if o["class_name"] == cls]
        rooms_true = sorted({o["room_name"] for o in objects if o["class_name"] == cls})
        noisy = list(where)
        noisy_rooms[cls] = list(rooms_true)
        if rng.random() < 0.3:
            wrong_room = rng.choice([r for r in ROOMS if r not in rooms_true])
            fcls = rng.choice([c for _, c in furniture[wrong_room]])
            noisy.append(f"One {cls} is on the {fcls}, the {fcls} is inside the {wrong_room}")
            noisy_rooms[cls].append(wrong_room)
        desc = (f" Appearance: {OBJECTS[cls][2]}. {goal_cls} appearance: "
                f"{FURNITURE[goal_cls][3]}.")
        loc = " Possible locations: " + " / ".join(where) + "."
        parts["raw"].append(head)
        parts["loc"].append(head + "." + loc)
        parts["desc"].append(head + "." + desc)
        parts["full"].append(head + "." + loc + desc)
        parts["noisy"].append(head + ". Possible locations: " + " / ".join(noisy) + "." + desc)
    tail = f";{goal_cls} is in {goal_room}."
    return {"raw_goal": "; ".join(parts["raw"]) + tail,
            "goal_with_location": ";".join(parts["loc"]) + tail,
            "goal_with_desc": ";".join(parts["desc"]) + tail,
            "goal_with_location_and_desc": ";".join(parts["full"]) + tail,
            "goal_with_location_and_desc_noise": ";".join(parts["noisy"]) + tail,
            "_noisy": noisy_rooms}


def as_structure(task: dict[str, Any], structure: str) -> dict[str, Any]:
    """Return the task dict of one structure (parallel: no zones; sequential: zones, 2 agents)."""
    out = {k: v for k, v in task.items() if k != "sequential"}
    if structure == "sequential":
        out.update(task["sequential"])
        out["num_agents"] = 2
    else:
        out["room_constraints"] = {"enabled": False}
        out["num_agents"] = 2
    return out


def placement_gate(task: dict[str, Any]) -> str | None:
    """Return why a draw's placements are illegal, or None when they pass."""
    nodes = {n["id"]: n for n in task["init_graph"]["nodes"]}
    goal_ids = {t["id"] for t in task["goal_targets"]}
    giver = set(task["sequential"]["room_constraints"]["agents"]["0"]["allowed_room_ids"])
    for o in task["task_locations"]["goal_objects"]:
        target = o["placement"]["target_id"]
        cls = nodes[target]["class_name"]
        rel = o["placement"]["relation"]
        if target in goal_ids:
            return f"object {o['id']} starts on the goal furniture"
        legal = START_CONTAINERS if rel == "INSIDE" else START_SURFACES
        if cls not in legal:
            return f"object {o['id']} starts {rel} {cls}, not a legal start location"
        if o["room_id"] not in giver:
            return f"object {o['id']} starts outside the giver's zone"
    total = sum(task["task_goal"]["0"].values())
    if not 2 <= total <= 7:
        return f"{total} subgoal instances (need 2-7)"
    return None


def oracle_gate(task: HouseholdTask) -> str | None:
    """Return why the oracle team fails the task within budget, or None when it solves it."""
    sizes = [2] if task.structure == "sequential" else [1, 2, 3, 4, 5]
    for n in sizes:
        env = HouseholdEnv(task, n, seed=0)
        team = OracleTeam(env)
        for _ in range(task.team_steps(n)):
            env.step(team.act())
            if env.success():
                break
        if not env.success():
            return f"oracle team of {n} fails within {task.team_steps(n)} team steps"
    return None


def generate(index: int, template: str, n_subgoals: int, apartment: int
             ) -> tuple[dict[str, Any], int]:
    """Return (task dict, attempts used): the first draw that passes both gates."""
    for attempt in range(MAX_ATTEMPTS):
        raw = draw_task(index, template, n_subgoals, apartment, attempt)
        if placement_gate(raw) is not None:
            continue
        ok = True
        for structure in ("parallel", "sequential"):
            task = task_from_dict(as_structure(raw, structure), f"v1[{index}]")
            if oracle_gate(task) is not None:
                ok = False
                break
        if ok:
            return raw, attempt + 1
    raise RuntimeError(f"no draw of task {index} passed the gates in {MAX_ATTEMPTS} attempts")
