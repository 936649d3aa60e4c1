"""Pydantic models of MECoBench task files and their scene graphs, checked on load.

A task file is checked here before `task_from_dict` builds the task, so a bad file is refused
with one line naming the file, the task and the field instead of failing deep in a planner or
a metric. Only the fields coordbench reads are modelled; MECoBench's other fields (and any
extra ones) pass through. Ids are strict integers (a JSON `true` is not node 1); the keys of
JSON objects that map ids (agents, buffers, owners) must be digit strings.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from coordbench.core.files import validation_line
from coordbench.errors import ConfigError

from .actions import ACTIONS

# episode budgets beyond this many actions would only make a rule team run for hours
MAX_BUDGET = 10_000


def _finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def _digits(k: str) -> str:
    if not k.isdigit():
        raise ValueError(f"key {k!r} must be a non-negative integer id")
    return k


Number = Annotated[StrictInt | float, AfterValidator(_finite)]
Vec3 = Annotated[list[Number], Field(min_length=3, max_length=3)]
Id = StrictInt
IdKey = Annotated[str, AfterValidator(_digits)]


class _Open(BaseModel):
    """A file object: the fields coordbench reads are checked, others pass through."""

    model_config = ConfigDict(extra="allow")


class Transform(_Open):
    """A node's pose: only its position is read."""

    position: Vec3


class BoundingBox(_Open):
    """A node's box; a missing centre falls back to the position, a missing size is 0."""

    center: Vec3 | None = None
    size: Vec3 | None = None


class SceneNode(_Open):
    """One node of a VirtualHome-format scene graph."""

    id: Id
    class_name: StrictStr
    category: StrictStr = ""
    obj_transform: Transform | None = None
    bounding_box: BoundingBox | None = None
    properties: list[StrictStr] | None = None
    states: list[StrictStr] | None = None


class SceneEdge(_Open):
    """One relation of a scene graph."""

    from_id: Id
    to_id: Id
    relation_type: StrictStr


class SceneGraph(_Open):
    """A scene graph: nodes and edges."""

    nodes: list[SceneNode] = Field(min_length=1)
    edges: list[SceneEdge]


class ZoneAgent(_Open):
    """One agent's zone of a sequential task."""

    allowed_room_ids: list[Id] = Field(min_length=1)


class HandoverLink(_Open):
    """One link of a sequential task's handover chain."""

    door_id: Id = -1
    room_pair_ids: list[Id] = Field(default_factory=list)


class RoomConstraints(_Open):
    """Sequential tasks: each agent's zone and the handover chain."""

    enabled: StrictBool | None = False
    agents: dict[IdKey, ZoneAgent] | None = None
    handover_chain: list[HandoverLink] | None = None
    required_handover_count: Annotated[StrictInt, Field(ge=0)] | None = None


class GoalObject(_Open):
    """Where a goal object starts (location hints)."""

    class_name: StrictStr | None = None
    room_id: Id | None = None


class TaskLocations(_Open):
    """Where the goal objects start."""

    goal_objects: list[GoalObject] | None = None


class TaskModel(_Open):
    """One MECoBench task (with coordbench's optional construct extensions)."""

    task_id: StrictInt | StrictStr | None = None
    task_name: Any = None
    init_graph: SceneGraph
    task_goal: dict[StrictStr, dict[StrictStr, Annotated[StrictInt, Field(ge=1)]]]
    goal_target_options: dict[StrictStr, list[Id]] | None = None
    init_rooms: list[StrictStr | StrictInt] | None = None
    init_room_ids: list[Id] | None = None
    room_constraints: RoomConstraints | None = None
    task_locations: TaskLocations | None = None
    department_topology: Any = None
    coordbench_descriptions: dict[StrictStr, StrictStr] | None = None
    coordbench_state_goals: list[tuple[StrictStr, Id]] | None = None
    coordbench_roles: list[StrictStr] | None = None
    coordbench_role_skills: dict[StrictStr, list[Literal[ACTIONS]]] | None = None  # type: ignore[valid-type]
    coordbench_buffers: dict[IdKey, Annotated[StrictInt, Field(ge=1)]] | None = None
    coordbench_owners: dict[IdKey, Annotated[StrictInt, Field(ge=0)]] | None = None
    coordbench_role_sources: dict[StrictStr, list[Id]] | None = None
    coordbench_shared: list[Id] | None = None
    coordbench_budget: Annotated[StrictInt, Field(ge=1, le=MAX_BUDGET)] | None = None
    coordbench_noisy_hints: dict[StrictStr, list[Id]] | None = None
    coordbench_construct: dict[StrictStr, Any] | None = None


def check_task(task: Any, where: str) -> TaskModel:
    """Return the validated model of one task object; ConfigError (one line) names `where`
    and the first bad field."""
    if not isinstance(task, dict):
        raise ConfigError(f"{where}: a task must be a JSON object")
    try:
        return TaskModel.model_validate(task)
    except ValidationError as e:
        raise ConfigError(validation_line(e, where)) from None


def check_references(model: TaskModel, nodes: set[int], rooms: set[int], where: str) -> None:
    """Raise ConfigError unless every id the task's extensions name is a node (or room) of
    its graph, and the roles cover every start room's agent."""
    def need(ids: Any, field: str, pool: set[int], what: str = "node") -> None:
        for i in ids:
            if int(i) not in pool:
                raise ConfigError(f"{where}: field '{field}' names {what} {i}, not in init_graph")

    need(model.coordbench_buffers or {}, "coordbench_buffers", nodes)
    need(model.coordbench_owners or {}, "coordbench_owners", nodes)
    need(model.coordbench_shared or [], "coordbench_shared", nodes)
    for role, ids in (model.coordbench_role_sources or {}).items():
        need(ids, f"coordbench_role_sources.{role}", nodes)
    for cls, ids in (model.coordbench_noisy_hints or {}).items():
        need(ids, f"coordbench_noisy_hints.{cls}", rooms, "room")
    for key, ids in (model.goal_target_options or {}).items():
        need(ids, f"goal_target_options.{key}", nodes)
    roles = model.coordbench_roles
    if roles is not None:
        starts = model.init_room_ids if (model.room_constraints and
                                         model.room_constraints.enabled) else model.init_rooms
        if not roles or len(roles) < len(starts or []):
            raise ConfigError(f"{where}: field 'coordbench_roles' needs one role per agent "
                              f"({len(starts or [])}), got {len(roles)}")
