"""Static scene information derived from a VirtualHome-format scene graph.

A scene graph is `{"nodes": [...], "edges": [...]}` with nodes carrying id, category,
class_name, obj_transform.position, bounding_box {center, size}, properties and states, and
edges INSIDE / ON / FACING. Doors are INSIDE one room only, so the rooms a door connects are
derived from geometry: a door (or doorjamb) joins the rooms whose floor rectangles lie within
DOOR_MARGIN of its position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from coordbench.errors import ConfigError

DOOR_MARGIN = 0.3  # metres a door may lie outside a room's rectangle and still belong to it
NON_OBJECT_CATEGORIES = frozenset({"Rooms", "Walls", "Floor", "Floors", "Ceiling", "Windows"})


@dataclass(frozen=True)
class Node:
    """One scene node: what it is, where it is, what it can do."""

    id: int
    class_name: str
    category: str
    x: float
    y: float
    z: float
    size: tuple[float, float, float]
    properties: frozenset[str]
    states: tuple[str, ...]

    @property
    def grabbable(self) -> bool:
        """Return whether the node can be picked up."""
        return "GRABBABLE" in self.properties

    @property
    def can_open(self) -> bool:
        """Return whether the node opens and closes."""
        return "CAN_OPEN" in self.properties

    @property
    def is_container(self) -> bool:
        """Return whether things can be put inside the node."""
        return "CONTAINERS" in self.properties

    @property
    def is_surface(self) -> bool:
        """Return whether things can be put on the node."""
        return "SURFACES" in self.properties


@dataclass
class Scene:
    """Rooms, doors and nodes of one apartment, plus the initial relations."""

    nodes: dict[int, Node]
    rooms: dict[int, str]  # room id -> room name
    room_rects: dict[int, tuple[float, float, float, float]]  # x0, x1, z0, z1
    doors: dict[int, tuple[int, int]]  # door id -> the two rooms it joins
    room_of: dict[int, int]  # node id -> room id (initial)
    parents: dict[int, tuple[tuple[str, int], ...]]  # node -> initial (relation, parent) pairs
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    def room_id(self, name_or_id: str | int) -> int | None:
        """Return the room id for a room name or id, or None if there is no such room."""
        if isinstance(name_or_id, int) or (isinstance(name_or_id, str) and name_or_id.isdigit()):
            rid = int(name_or_id)
            return rid if rid in self.rooms else None
        for rid, name in self.rooms.items():
            if name == str(name_or_id).strip().lower():
                return rid
        return None

    def room_center(self, rid: int) -> tuple[float, float]:
        """Return the centre (x, z) of a room's floor rectangle."""
        x0, x1, z0, z1 = self.room_rects[rid]
        return (0.5 * (x0 + x1), 0.5 * (z0 + z1))

    def door_between(self, a: int, b: int) -> list[int]:
        """Return the doors joining rooms a and b (a door and its doorjambs)."""
        return [d for d, pair in self.doors.items() if set(pair) == {a, b}]

def _num(v: Any, where: str) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        raise ConfigError(f"{where}: expected a number, got {v!r}")
    return float(v)


def load_scene(graph: Any, where: str = "init_graph") -> Scene:
    """Return the Scene of a VirtualHome-format graph; raise ConfigError naming a bad field."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list) or not isinstance(
            graph.get("edges"), list):
        raise ConfigError(f"{where}: expected an object with 'nodes' and 'edges' lists")
    nodes: dict[int, Node] = {}
    rooms: dict[int, str] = {}
    rects: dict[int, tuple[float, float, float, float]] = {}
    for k, n in enumerate(graph["nodes"]):
        w = f"{where}.nodes[{k}]"
        if not isinstance(n, dict) or not isinstance(n.get("id"), int):
            raise ConfigError(f"{w}: a node needs an integer 'id'")
        try:
            bb = n.get("bounding_box") or {}
            center = bb.get("center") or n["obj_transform"]["position"]
            size = bb.get("size") or [0.0, 0.0, 0.0]
            x, y, z = (_num(c, f"{w}.bounding_box.center") for c in center)
            sx, sy, sz = (_num(c, f"{w}.bounding_box.size") for c in size)
            node = Node(n["id"], str(n["class_name"]).lower(), str(n.get("category", "")),
                        x, y, z, (sx, sy, sz), frozenset(n.get("properties") or ()),
                        tuple(n.get("states") or ()))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{w} (id {n.get('id')}): missing or malformed field {e}") from None
        nodes[node.id] = node
        if node.category == "Rooms":
            rooms[node.id] = node.class_name
            rects[node.id] = (x - sx / 2, x + sx / 2, z - sz / 2, z + sz / 2)
    if not rooms:
        raise ConfigError(f"{where}: the graph has no node of category 'Rooms'")
    room_of: dict[int, int] = {}
    parents: dict[int, list[tuple[str, int]]] = {}
    for k, e in enumerate(graph["edges"]):
        try:
            a, b, rel = int(e["from_id"]), int(e["to_id"]), str(e["relation_type"]).upper()
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{where}.edges[{k}]: needs from_id, to_id, relation_type") from None
        if a not in nodes or b not in nodes:
            raise ConfigError(f"{where}.edges[{k}]: unknown node id {a if a not in nodes else b}")
        if rel == "INSIDE" and b in rooms:
            room_of[a] = b
        elif rel in ("INSIDE", "ON"):
            parents.setdefault(a, []).append((rel, b))
    doors: dict[int, tuple[int, int]] = {}
    for nid, node in nodes.items():
        if node.category != "Doors":
            continue
        near = [rid for rid, (x0, x1, z0, z1) in rects.items()
                if x0 - DOOR_MARGIN <= node.x <= x1 + DOOR_MARGIN
                and z0 - DOOR_MARGIN <= node.z <= z1 + DOOR_MARGIN]
        if len(near) == 2:
            doors[nid] = (near[0], near[1])
    for nid, node in nodes.items():
        if nid not in room_of and node.category not in NON_OBJECT_CATEGORIES:
            inside = [rid for rid, (x0, x1, z0, z1) in rects.items()
                      if x0 <= node.x <= x1 and z0 <= node.z <= z1]
            if inside:
                room_of[nid] = inside[0]
    return Scene(nodes, rooms, rects, doors, room_of,
                 {k: tuple(v) for k, v in parents.items()}, raw=graph)
