"""The ten task families of the coordination constructs, as generated household instances.

Every builder returns a MECoBench-format task dict (scene graph + goal) with the construct
extensions (roles, buffers, owners, state goals) and a `coordbench_construct` block that the
oracles and scores read: the family, the construct, the containers and their required order,
the knife, the buffers.

| construct | family | what coordination it needs |
|---|---|---|
| D1 allocation | store_groceries, sort_and_store, tidy_drawers | split deliveries evenly |
| D2 ordering | stock_cabinet, load_in_order, fill_drawers_in_order | open, load (in order), close |
| D3 mutual exclusion | prepare_food | one knife: take turns slicing |
| D4 handoff | relay_items, indirect_relay, cross_zone_handoff | pace a buffer of capacity 2 |
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from coordbench.suites.mecobench.generator import _Graph

FOOD = ("apple", "cupcake", "pudding", "juice", "wine", "pancake")
DISHES = ("plate", "mug", "waterglass", "wineglass")
CLUTTER = ("book", "toy", "cellphone", "magazine", "remotecontrol", "barsoap")
SLICEABLE = ("bread", "tomato", "apple", "cucumber", "potato")
ROOM_SIZE = 6.0  # small rooms: every object stays within view range of every other
BUFFER_CAPACITY = 2
ALL_SKILLS = ["walk", "grab", "open", "close", "put_on", "put_in", "slice", "toggle", "drop",
              "wait", "done"]
PRODUCER_SKILLS = ["walk", "grab", "put_on", "drop", "wait", "done"]
CONSUMER_SKILLS = ["walk", "grab", "open", "close", "put_on", "put_in", "drop", "wait", "done"]


class _Scene:
    """A room (or two) with furniture on slots around the walls and items on surfaces."""

    def __init__(self, rng: random.Random, rooms: list[str]) -> None:
        self.rng = rng
        self.g = _Graph()
        self.room_ids: dict[str, int] = {}
        self.centre: dict[str, tuple[float, float]] = {}
        self.slots: dict[str, list[tuple[float, float]]] = {}
        for k, name in enumerate(rooms):
            cx = k * ROOM_SIZE
            self.centre[name] = (cx, 0.0)
            self.room_ids[name] = self.g.add("Rooms", name, (cx, 1.5, 0.0),
                                             (ROOM_SIZE, 3.0, ROOM_SIZE))
            half = ROOM_SIZE / 2 - 1.3
            slots = [(cx + dx * half, dz * half) for dx, dz in
                     [(-1, -1), (0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0)]]
            rng.shuffle(slots)
            self.slots[name] = slots
        self.door = None
        if len(rooms) == 2:
            self.door = self.g.add("Doors", "door", (ROOM_SIZE / 2, 1.0, 0.0), (0.1, 2.0, 0.9),
                                   ("CAN_OPEN",), ("OPEN",))
            self.g.edge(self.door, "INSIDE", self.room_ids[rooms[0]])

    def furniture(self, room: str, cls: str, props: tuple[str, ...], state: str | None = None,
                  at: tuple[float, float] | None = None) -> int:
        x, z = at or self.slots[room].pop()
        nid = self.g.add("Furniture", cls, (x, 0.45, z), (1.0, 0.9, 0.6), props,
                         (state,) if state else ())
        self.g.edge(nid, "INSIDE", self.room_ids[room])
        return nid

    def item(self, room: str, cls: str, on: int, props: tuple[str, ...] = ()) -> int:
        fx, _, fz = self.g.nodes[on - 1]["bounding_box"]["center"]
        pos = (fx + self.rng.uniform(-0.35, 0.35), 0.95, fz + self.rng.uniform(-0.2, 0.2))
        nid = self.g.add("Props", cls, pos, (0.1, 0.1, 0.1), ("GRABBABLE", "MOVABLE") + props)
        self.g.edge(nid, "INSIDE", self.room_ids[room])
        self.g.edge(nid, "ON", on)
        return nid

    def task(self, name: str, index: int, goal: dict[str, int], team: int,
             **extra: Any) -> dict[str, Any]:
        rooms = list(self.room_ids)
        return {
            "task_id": f"{name}-{team}-{index}", "task_name": name,
            "init_graph": {"nodes": self.g.nodes, "edges": self.g.edges},
            "task_goal": {"0": goal}, "goal_target_options": {},
            "init_rooms": [rooms[0]] * team,
            "raw_goal": extra.pop("text"), "room_constraints": {"enabled": False}, **extra}


def _counts(rng: random.Random, classes: tuple[str, ...], total: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for _ in range(total):
        c = rng.choice(classes)
        out[c] = out.get(c, 0) + 1
    return out


def _place(s: _Scene, room: str, counts: dict[str, int], surfaces: list[int]) -> list[int]:
    return [s.item(room, cls, s.rng.choice(surfaces)) for cls, k in sorted(counts.items())
            for _ in range(k)]


def store_groceries(rng, team, index):
    s = _Scene(rng, ["kitchen"])
    fridge = s.furniture("kitchen", "fridge", ("CONTAINERS", "CAN_OPEN"), "OPEN")
    src = [s.furniture("kitchen", c, ("SURFACES",)) for c in ("kitchencounter", "kitchentable")]
    counts = _counts(rng, FOOD, team + rng.randint(1, 3))
    items = _place(s, "kitchen", counts, src)
    goal = {f"inside_{c}_{fridge}": k for c, k in counts.items()}
    return s.task("store_groceries", index, goal, team, text="Store every grocery item in the "
                  "fridge.", coordbench_construct={"construct": "D1", "items": items,
                                                   "targets": {str(i): fridge for i in items}})


def sort_and_store(rng, team, index):
    s = _Scene(rng, ["kitchen"])
    fridge = s.furniture("kitchen", "fridge", ("CONTAINERS", "CAN_OPEN"), "OPEN")
    cabinet = s.furniture("kitchen", "cabinet", ("CONTAINERS", "CAN_OPEN"), "OPEN")
    src = [s.furniture("kitchen", c, ("SURFACES",)) for c in ("kitchencounter", "kitchentable")]
    total = team + rng.randint(1, 3)
    food = _counts(rng, FOOD, max(1, total // 2))
    dishes = _counts(rng, DISHES, total - sum(food.values()))
    items_f = _place(s, "kitchen", food, src)
    items_d = _place(s, "kitchen", dishes, src)
    goal = {**{f"inside_{c}_{fridge}": k for c, k in food.items()},
            **{f"inside_{c}_{cabinet}": k for c, k in dishes.items()}}
    targets = {**{str(i): fridge for i in items_f}, **{str(i): cabinet for i in items_d}}
    return s.task("sort_and_store", index, goal, team, text="Food goes in the fridge, dishes "
                  "in the cabinet.", coordbench_construct={"construct": "D1",
                                                           "items": items_f + items_d,
                                                           "targets": targets})


def tidy_drawers(rng, team, index):
    s = _Scene(rng, ["bedroom"])
    drawers = [s.furniture("bedroom", "drawer", ("CONTAINERS", "CAN_OPEN"), "OPEN")
               for _ in range(2)]
    src = [s.furniture("bedroom", c, ("SURFACES",)) for c in ("bed", "desk")]
    classes = list(CLUTTER)
    rng.shuffle(classes)
    split = {d: classes[k * 3:(k + 1) * 3] for k, d in enumerate(drawers)}
    counts = _counts(rng, tuple(classes[:6]), team + rng.randint(1, 3))
    items = _place(s, "bedroom", counts, src)
    target_of = {c: d for d, cs in split.items() for c in cs}
    goal: dict[str, int] = {}
    for c, k in counts.items():
        goal[f"inside_{c}_{target_of[c]}"] = k
    names = {i: s.g.nodes[i - 1]["class_name"] for i in items}
    return s.task("tidy_drawers", index, goal, team, text="Put each item in its drawer.",
                  coordbench_construct={"construct": "D1", "items": items,
                                        "targets": {str(i): target_of[names[i]] for i in items}})


def _ordered_load(name, room, container_cls, order_matters, rng, team, index):
    s = _Scene(rng, [room])
    box = s.furniture(room, container_cls, ("CONTAINERS", "CAN_OPEN"), "CLOSED")
    sources = {"bathroom": ("bathroomcounter", "bench"), "kitchen": ("kitchentable", "bench"),
               "livingroom": ("coffeetable", "bench")}[room]
    src = [s.furniture(room, c, ("SURFACES",)) for c in sources]
    pool = DISHES if container_cls == "dishwasher" else CLUTTER
    counts = _counts(rng, pool, team + rng.randint(1, 2))
    items = _place(s, room, counts, src)
    rng.shuffle(items)
    goal = {f"inside_{c}_{box}": k for c, k in counts.items()}
    text = (f"Open the {container_cls}, load the items" + (" in the listed order" if
            order_matters else "") + f", then close the {container_cls}.")
    return s.task(name, index, goal, team, text=text,
                  coordbench_state_goals=[["CLOSED", box]],
                  coordbench_construct={"construct": "D2", "items": items,
                                        "targets": {str(i): box for i in items},
                                        "containers": [box],
                                        "order": items if order_matters else []})


def stock_cabinet(rng, team, index):
    room = "bathroom" if index % 2 else "livingroom"
    return _ordered_load("stock_cabinet", room, "cabinet", False, rng, team, index)


def load_in_order(rng, team, index):
    return _ordered_load("load_in_order", "kitchen", "dishwasher", True, rng, team, index)


def fill_drawers_in_order(rng, team, index):
    s = _Scene(rng, ["bedroom"])
    drawers = [s.furniture("bedroom", "drawer", ("CONTAINERS", "CAN_OPEN"), "CLOSED")
               for _ in range(2)]
    src = [s.furniture("bedroom", c, ("SURFACES",)) for c in ("bed", "desk")]
    items_a = _place(s, "bedroom", _counts(rng, CLUTTER, max(1, team // 2 + 1)), src)
    items_b = _place(s, "bedroom", _counts(rng, CLUTTER, max(1, (team + 1) // 2)), src)
    goal: dict[str, int] = {}
    names = {i: s.g.nodes[i - 1]["class_name"] for i in items_a + items_b}
    for d, items in ((drawers[0], items_a), (drawers[1], items_b)):
        for i in items:
            goal[f"inside_{names[i]}_{d}"] = goal.get(f"inside_{names[i]}_{d}", 0) + 1
    targets = {**{str(i): drawers[0] for i in items_a}, **{str(i): drawers[1] for i in items_b}}
    return s.task("fill_drawers_in_order", index, goal, team,
                  text="Fill the first drawer (open, load, close), then the second.",
                  coordbench_state_goals=[["CLOSED", drawers[0]], ["CLOSED", drawers[1]]],
                  coordbench_construct={"construct": "D2", "items": items_a + items_b,
                                        "targets": targets, "containers": drawers,
                                        "container_order": drawers, "order": []})


def prepare_food(rng, team, index):
    s = _Scene(rng, ["kitchen"])
    counter = s.furniture("kitchen", "kitchencounter", ("SURFACES",))
    table = s.furniture("kitchen", "kitchentable", ("SURFACES",))
    knife = s.item("kitchen", "knife", counter)
    items = [s.item("kitchen", rng.choice(SLICEABLE), table, ("CUTTABLE",))
             for _ in range(team)]
    return s.task("prepare_food", index, {}, team,
                  text="Each agent slices its own item; there is one knife.",
                  coordbench_state_goals=[["SLICED", i] for i in items],
                  coordbench_owners={str(i): k for k, i in enumerate(items)},
                  coordbench_construct={"construct": "D3", "knife": knife, "items": items})


def _relay(name, rng, team, index, two_rooms=False, hops=1):
    rooms = ["kitchen", "livingroom"] if two_rooms else ["kitchen"]
    s = _Scene(rng, rooms)
    src_room, dst_room = rooms[0], rooms[-1]
    source = s.furniture(src_room, "kitchencounter", ("SURFACES",))
    target = s.furniture(dst_room, "fridge" if not two_rooms else "cabinet",
                         ("CONTAINERS", "CAN_OPEN"), "CLOSED")
    if two_rooms:
        buffers = [s.furniture(src_room, "bufferstation", ("SURFACES",),
                               at=(ROOM_SIZE / 2 - 0.6, 0.0))]
    else:
        buffers = [s.furniture(src_room, "bufferstation", ("SURFACES",)) for _ in range(hops)]
    counts = _counts(rng, FOOD, 2 + rng.randint(1, 3) + team // 2)
    items = _place(s, src_room, counts, [source])
    goal = {f"inside_{c}_{target}": k for c, k in counts.items()}
    if hops == 2:
        roles = ["producer", "carrier", "consumer"] + (["producer"] if team == 4 else [])
    else:
        producers = (team + 1) // 2 if team > 2 else 1
        roles = ["producer"] * producers + ["consumer"] * (team - producers)
    sources = {"producer": [source], "consumer": [buffers[-1]]}
    skills = {"producer": PRODUCER_SKILLS, "consumer": CONSUMER_SKILLS}
    if hops == 2:
        sources["carrier"] = [buffers[0]]
        skills["carrier"] = PRODUCER_SKILLS
    extra: dict[str, Any] = {}
    if two_rooms:
        extra["coordbench_shared"] = buffers
        extra["room_constraints"] = {"enabled": True, "agents": {
            str(k): {"allowed_room_ids": [s.room_ids[src_room if r == "producer" else dst_room]]}
            for k, r in enumerate(roles)}, "handover_chain": [], "required_handover_count": 0}
        extra["init_room_ids"] = [s.room_ids[src_room if r == "producer" else dst_room]
                                  for r in roles]
    task = s.task(name, index, goal, team,
                  text="Producers bring the items to the buffer station (it holds "
                       f"{BUFFER_CAPACITY}); consumers take them from there into the "
                       f"{s.g.nodes[target - 1]['class_name']}.",
                  coordbench_roles=roles, coordbench_role_skills=skills,
                  coordbench_role_sources=sources,
                  coordbench_buffers={str(b): BUFFER_CAPACITY for b in buffers},
                  coordbench_construct={"construct": "D4", "items": items, "buffers": buffers,
                                        "source": source, "target": target, "roles": roles,
                                        "capacity": BUFFER_CAPACITY}, **extra)
    if two_rooms:
        task.pop("init_rooms")
    return task


def relay_items(rng, team, index):
    return _relay("relay_items", rng, team, index)


def indirect_relay(rng, team, index):
    return _relay("indirect_relay", rng, team, index, hops=2)


def cross_zone_handoff(rng, team, index):
    return _relay("cross_zone_handoff", rng, team, index, two_rooms=True)


Builder = Callable[[random.Random, int, int], dict[str, Any]]
TASK_FAMILIES: dict[str, tuple[str, Builder, tuple[int, ...]]] = {
    "store_groceries": ("D1", store_groceries, (2, 3, 4)),
    "sort_and_store": ("D1", sort_and_store, (2, 3, 4)),
    "tidy_drawers": ("D1", tidy_drawers, (2, 3, 4)),
    "stock_cabinet": ("D2", stock_cabinet, (2, 3, 4)),
    "load_in_order": ("D2", load_in_order, (2, 3, 4)),
    "fill_drawers_in_order": ("D2", fill_drawers_in_order, (2, 3, 4)),
    "prepare_food": ("D3", prepare_food, (2, 3, 4)),
    "relay_items": ("D4", relay_items, (2, 3, 4)),
    "indirect_relay": ("D4", indirect_relay, (3, 4)),
    "cross_zone_handoff": ("D4", cross_zone_handoff, (2, 3, 4)),
}
CONSTRUCTS = ("D1", "D2", "D3", "D4")
