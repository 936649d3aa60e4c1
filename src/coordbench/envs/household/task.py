"""MECoBench-format household tasks: loading, goals, prior texts, zones and budgets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from coordbench.errors import ConfigError

from .scene import Scene, load_scene

# Prior-information variants -> the task field holding that goal text.
PRIOR_FIELDS = {
    "full": "goal_with_location_and_desc",
    "no_appearance": "goal_with_location",
    "no_location": "goal_with_desc",
    "none": "raw_goal",
    "noisy": "goal_with_location_and_desc_noise",
}
PRIORS = tuple(PRIOR_FIELDS)
Structure = Literal["parallel", "sequential"]
_KEY = re.compile(r"^(on|inside)_(.+)_(\d+)$")


@dataclass(frozen=True)
class Subgoal:
    """`count` objects of class `obj_class` must be ON/INSIDE one of `targets`.

    relation "state": node `targets[0]` must carry the state named by `obj_class` (SLICED,
    CLOSED, OPEN, ON, OFF); `count` is 1.
    """

    key: str
    relation: Literal["on", "inside", "state"]
    obj_class: str
    targets: tuple[int, ...]
    count: int


@dataclass
class HouseholdTask:
    """One case: a scene, its subgoals, the agents' start rooms, zones and goal texts."""

    task_id: str
    name: str
    structure: Structure
    scene: Scene
    subgoals: list[Subgoal]
    goal_texts: dict[str, str]
    start_rooms: list[int]
    zones: list[list[int]] | None = None
    handover_doors: list[int] = field(default_factory=list)
    required_handovers: int = 0
    topology_text: str = ""
    location_hints: dict[str, list[int]] = field(default_factory=dict)  # class -> rooms
    # class -> the furniture the goal text names as where it starts (location priors)
    location_spots: dict[str, list[int]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)  # class -> appearance text
    # construct-task extensions (all optional; MECoBench tasks leave them empty)
    roles: list[str] | None = None  # role of each agent
    role_skills: dict[str, list[str]] = field(default_factory=dict)  # role -> allowed actions
    buffers: dict[int, int] = field(default_factory=dict)  # buffer station id -> capacity
    owners: dict[int, int] = field(default_factory=dict)  # object -> the only agent to slice it
    role_sources: dict[str, list[int]] = field(default_factory=dict)  # role -> where it may grab
    shared_nodes: list[int] = field(default_factory=list)  # visible from every allowed room
    budget_override: int | None = None  # effective-step budget set by the instance itself
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def max_agents(self) -> int:
        """Return the largest team the task supports (sequential tasks: the number of zones;
        tasks with roles: the number of roles)."""
        if self.zones:
            return len(self.zones)
        # a construct-style task gives each agent a role; more agents would have none
        return len(self.roles) if self.roles else max(len(self.start_rooms), 5)

    def budget(self, prior: str = "full") -> int:
        """Return the effective-step budget (actions summed over agents).

        Parallel: 60, or 80 for the priors without true locations (no_location, none: the
        no-location modes of MECoBench's code) and noisy; sequential: 80.
        """
        if self.budget_override is not None:
            return self.budget_override
        if self.structure == "sequential" or prior in ("no_location", "none", "noisy"):
            return 80
        return 60

    def team_steps(self, n_agents: int, prior: str = "full") -> int:
        """Return the number of team steps: floor(budget / n), so n * steps <= budget."""
        return self.budget(prior) // n_agents

    def goal_text(self, prior: str = "full") -> str:
        """Return the goal text of a prior variant (noisy falls back to full when absent)."""
        if prior not in PRIOR_FIELDS:
            raise ConfigError(f"unknown prior {prior!r}; choose from {', '.join(PRIORS)}")
        text = self.goal_texts.get(prior)
        if text is None and prior == "noisy":
            text = self.goal_texts.get("full")
        if text is None:
            raise ConfigError(f"{self.source or 'task ' + self.task_id}: no goal text for "
                              f"prior {prior!r} (field '{PRIOR_FIELDS[prior]}' must be a "
                              "string)")
        return text

    def hints(self, prior: str = "full", seed: int = 0) -> dict[str, list[int]]:
        """Return the rooms the goal text names per object class under a prior variant.

        full / no_appearance: the true rooms; no_location / none: nothing; noisy: the true
        rooms plus, for about 30% of classes, one false room (drawn from `seed`).
        """
        if prior in ("no_location", "none"):
            return {}
        hints = {c: list(r) for c, r in self.location_hints.items()}
        if prior == "noisy" and self.meta.get("noisy_hints"):
            return {c: list(r) for c, r in self.meta["noisy_hints"].items()}
        if prior == "noisy":
            import random

            rng = random.Random(f"{self.task_id}-{seed}")
            for cls in sorted(hints):
                others = [r for r in self.scene.rooms if r not in hints[cls]]
                if others and rng.random() < 0.3:
                    hints[cls].append(rng.choice(others))
        return hints

    def spots(self, prior: str = "full") -> dict[str, list[int]]:
        """Return {class: furniture ids} the goal text of `prior` names as start places
        (nothing for no_location and none)."""
        if prior in ("no_location", "none"):
            return {}
        return {c: list(f) for c, f in self.location_spots.items()}

    def described(self, prior: str = "full") -> dict[str, str]:
        """Return {goal class: appearance text} that the goal text of `prior` gives.

        full, no_location and noisy describe the goal classes; no_appearance and none do not.
        """
        if prior in ("no_appearance", "none"):
            return {}
        goal = {g.obj_class for g in self.subgoals}
        return {c: d for c, d in self.descriptions.items() if c in goal}

    def allowed_rooms(self, agent: int) -> list[int]:
        """Return the rooms agent `agent` may enter (every room in parallel tasks)."""
        if self.zones:
            return list(self.zones[agent])
        return list(self.scene.rooms)


def _field(task: dict, name: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if name not in task:
        raise ConfigError(f"{where}: missing field '{name}'")
    value = task[name]
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: field '{name}' has the wrong type ({type(value).__name__})")
    return value


def task_from_dict(task: dict, where: str) -> HouseholdTask:
    """Return a HouseholdTask from one MECoBench task object; ConfigError names the field."""
    if not isinstance(task, dict):
        raise ConfigError(f"{where}: a task must be a JSON object")
    tid = str(task.get("task_id", "?"))
    where = f"{where} (task_id {tid})"
    scene = load_scene(_field(task, "init_graph", where, dict), f"{where}: init_graph")
    goal = _field(task, "task_goal", where, dict)
    if "0" not in goal or not isinstance(goal["0"], dict) or (
            not goal["0"] and not task.get("coordbench_state_goals")):
        raise ConfigError(f"{where}: field 'task_goal' needs a non-empty entry \"0\"")
    options = task.get("goal_target_options") or {}
    subgoals = []
    for key, count in goal["0"].items():
        m = _KEY.match(str(key))
        if not m or not isinstance(count, int) or count < 1:
            raise ConfigError(
                f"{where}: field 'task_goal' has a malformed subgoal {key!r}: {count!r}")
        rel, cls, target = m.group(1), m.group(2), int(m.group(3))
        targets = tuple(int(t) for t in options.get(key, [])) or (target,)
        for t in targets:
            if t not in scene.nodes:
                raise ConfigError(f"{where}: subgoal {key!r} names node {t}, not in init_graph")
        subgoals.append(Subgoal(str(key), rel, cls, targets, count))  # type: ignore[arg-type]
    for k, item in enumerate(task.get("coordbench_state_goals") or []):
        try:
            state, node = str(item[0]).upper(), int(item[1])
        except (TypeError, ValueError, IndexError):
            raise ConfigError(f"{where}: field 'coordbench_state_goals[{k}]' must be "
                              f"[state, node id]") from None
        if node not in scene.nodes:
            raise ConfigError(f"{where}: state goal names node {node}, not in init_graph")
        subgoals.append(Subgoal(f"state_{state}_{node}", "state", state, (node,), 1))
    texts = {p: task[f] for p, f in PRIOR_FIELDS.items() if isinstance(task.get(f), str)}
    constraints = task.get("room_constraints") or {}
    structure: Structure = "sequential" if constraints.get("enabled") else "parallel"
    zones = None
    doors: list[int] = []
    required = 0
    if structure == "sequential":
        agents = constraints.get("agents")
        if not isinstance(agents, dict) or not agents:
            raise ConfigError(f"{where}: field 'room_constraints.agents' is missing")
        zones = []
        for k in sorted(agents, key=int):
            ids = agents[k].get("allowed_room_ids")
            if not ids or any(int(r) not in scene.rooms for r in ids):
                raise ConfigError(f"{where}: field 'room_constraints.agents.{k}.allowed_room_ids'"
                                  " names no room of the graph")
            zones.append([int(r) for r in ids])
        for link in constraints.get("handover_chain") or []:
            pair = [int(r) for r in link.get("room_pair_ids", [])]
            # the chain's door id can be a doorjamb of the same passage: accept every door of it
            found = scene.door_between(*pair) if len(pair) == 2 else []
            doors.extend(d for d in [int(link.get("door_id", -1)), *found]
                         if d in scene.nodes and d not in doors)
        if not doors and len(zones) > 1:
            # no usable chain: the doors joining two agents' zones are where they hand over
            doors = sorted({d for d, pair in scene.doors.items()
                            if any(set(pair) <= set(a) | set(b) and set(pair) & set(a)
                                   and set(pair) & set(b)
                                   for i, a in enumerate(zones) for b in zones[i + 1:])})
            if not doors:
                raise ConfigError(f"{where}: field 'room_constraints.handover_chain' names no "
                                  "door, and no door joins two agents' zones")
        count = constraints.get("required_handover_count")
        required = int(count) if count is not None else (len(doors) and 1)
        starts = [int(r) for r in _field(task, "init_room_ids", where, list)]
        for r in starts:
            if r not in scene.rooms:
                raise ConfigError(f"{where}: field 'init_room_ids' names {r}, not a room of "
                                  "init_graph")
    else:
        names = _field(task, "init_rooms", where, list)
        starts = []
        for name in names:
            rid = scene.room_id(name)
            if rid is None:
                raise ConfigError(f"{where}: field 'init_rooms' names unknown room {name!r}")
            starts.append(rid)
    if not starts:
        raise ConfigError(f"{where}: no start rooms")
    hints: dict[str, list[int]] = {}
    spots: dict[str, list[int]] = {}
    for obj in (task.get("task_locations") or {}).get("goal_objects") or []:
        if isinstance(obj, dict) and obj.get("room_id") in scene.rooms:
            rooms = hints.setdefault(str(obj.get("class_name")), [])
            if obj["room_id"] not in rooms:
                rooms.append(int(obj["room_id"]))
            placement = obj.get("placement")
            spot = placement.get("target_id") if isinstance(placement, dict) else None
            if isinstance(spot, int) and spot in scene.nodes:
                mine = spots.setdefault(str(obj.get("class_name")), [])
                if spot not in mine:
                    mine.append(spot)
    return HouseholdTask(
        task_id=tid, name=str(task.get("task_name", "")), structure=structure, scene=scene,
        subgoals=subgoals, goal_texts=texts, start_rooms=starts, zones=zones,
        handover_doors=doors, required_handovers=required,
        topology_text=str(task.get("department_topology", "")), location_hints=hints,
        location_spots=spots,
        descriptions={str(k): str(v) for k, v in
                      (task.get("coordbench_descriptions") or {}).items()},
        source=where,
        roles=task.get("coordbench_roles"),
        role_skills={str(k): list(v) for k, v in (task.get("coordbench_role_skills") or {}
                                                   ).items()},
        buffers={int(k): int(v) for k, v in (task.get("coordbench_buffers") or {}).items()},
        owners={int(k): int(v) for k, v in (task.get("coordbench_owners") or {}).items()},
        role_sources={str(k): [int(x) for x in v] for k, v in (
            task.get("coordbench_role_sources") or {}).items()},
        shared_nodes=[int(x) for x in task.get("coordbench_shared") or []],
        budget_override=task.get("coordbench_budget"),
        meta={"env_id": task.get("env_id"), "level": task.get("level"),
              "construct": task.get("coordbench_construct") or {},
              "noisy_hints": {str(c): [int(r) for r in rs] for c, rs in
                              (task.get("coordbench_noisy_hints") or {}).items()}})


def checked_task(task: Any, where: str) -> HouseholdTask:
    """Return the HouseholdTask of one task object read from a file, after checking it
    against the task file model (`schema.TaskModel`) and that every id it names exists;
    ConfigError (one line) names `where`, the task and the field."""
    from .schema import check_references, check_task

    tid = str(task.get("task_id", "?")) if isinstance(task, dict) else "?"
    model = check_task(task, f"{where} (task_id {tid})")
    built = task_from_dict(task, where)
    check_references(model, set(built.scene.nodes), set(built.scene.rooms), built.source)
    return built


def load_tasks(path: str | Path) -> list[HouseholdTask]:
    """Return every task of a MECoBench JSON file (a list of task objects, or one object);
    ConfigError names the file, the task and the field of the first problem."""
    from coordbench.core.files import read_json

    path = Path(path)
    data = read_json(path, "task file")
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ConfigError(f"{path}: the file holds no task")
    return [checked_task(t, f"{path.name}[{i}]") for i, t in enumerate(items)]
