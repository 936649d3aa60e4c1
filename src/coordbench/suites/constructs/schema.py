"""Pydantic model of a construct instance file's `coordbench_construct` entry, and the checks
that tie it to the instance's scene and team, so that a bad instance file is refused on load
(one line naming the file, the instance and the field) instead of failing in a planner, the
oracle or a metric.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from coordbench.core.files import validation_line
from coordbench.envs.household.task import HouseholdTask
from coordbench.errors import ConfigError

Id = StrictInt
Count = Annotated[StrictInt, Field(ge=1)]
TEAM_SIZES = (2, 3, 4)
# the oracle's D1 reference is an exact search over team ** items assignments
MAX_D1_ITEMS = 8
MAX_ITEMS = 16


class ConstructInfo(BaseModel):
    """What an instance says about its construct: the objects, targets and references."""

    model_config = ConfigDict(extra="allow")
    # `construct` would shadow BaseModel.construct
    kind: Literal["D1", "D2", "D3", "D4"] = Field(alias="construct")
    items: list[Id] = Field(min_length=1, max_length=MAX_ITEMS)
    # optional, but never null: the metrics read them with info.get(name, default)
    targets: dict[StrictStr, Id] = None  # type: ignore[assignment]
    containers: list[Id] = None  # type: ignore[assignment]
    container_order: list[Id] = None  # type: ignore[assignment]
    order: list[Id] = None  # type: ignore[assignment]
    knife: Id = None  # type: ignore[assignment]
    buffers: list[Id] = None  # type: ignore[assignment]
    source: Id = None  # type: ignore[assignment]
    target: Id = None  # type: ignore[assignment]
    roles: list[Literal["producer", "carrier", "consumer"]] = None  # type: ignore[assignment]
    capacity: Count = None  # type: ignore[assignment]
    oracle_actions: Count = None  # type: ignore[assignment]
    oracle_steps: Count = None  # type: ignore[assignment]
    oracle_makespan: Count = None  # type: ignore[assignment]
    m_star: Count = None  # type: ignore[assignment]

class InstanceModel(BaseModel):
    """The fields of an instance the construct runner reads besides the task's own."""

    model_config = ConfigDict(extra="allow")
    task_id: StrictInt | StrictStr
    task_name: StrictStr
    coordbench_construct: ConstructInfo


def check_instance(raw: dict[str, Any], task: HouseholdTask, where: str) -> None:
    """Raise ConfigError (one line naming `where` and the field) unless the instance's
    construct entry is well formed and consistent with its scene and team."""
    try:
        info = InstanceModel.model_validate(raw).coordbench_construct
    except ValidationError as e:
        raise ConfigError(validation_line(e, where)) from None
    nodes = task.scene.nodes
    c = info.kind
    field = "coordbench_construct"

    def bad(name: str, why: str) -> ConfigError:
        return ConfigError(f"{where}: field '{field}.{name}' {why}")

    def need(ids: list[int], name: str, test: Any = None, what: str = "") -> None:
        for i in ids:
            if i not in nodes:
                raise bad(name, f"names node {i}, not in init_graph")
            if test is not None and not test(nodes[i]):
                raise bad(name, f"names node {i}, which is not {what}")

    n = len(task.roles) if task.roles else len(task.start_rooms)
    if n not in TEAM_SIZES:
        raise ConfigError(f"{where}: a construct team has 2 to 4 agents (start rooms or "
                          f"roles), got {n}")
    if len(set(info.items)) != len(info.items):
        raise bad("items", "lists an object twice")
    need(info.items, "items", lambda nd: nd.grabbable, "grabbable")
    if c in ("D1", "D2"):
        if c == "D1" and len(info.items) > MAX_D1_ITEMS:
            raise bad("items", f"may hold at most {MAX_D1_ITEMS} objects for D1")
        targets = info.targets or {}
        if set(targets) != {str(i) for i in info.items}:
            raise bad("targets", "must map every item (and only the items) to a target")
        need(list(targets.values()), "targets", lambda nd: nd.is_container or nd.is_surface,
             "a container or surface")
    if c == "D2":
        boxes = info.containers or []
        if not boxes:
            raise bad("containers", "must list at least one container")
        need(boxes, "containers", lambda nd: nd.is_container and nd.can_open,
             "a container that opens")
        if not set((info.targets or {}).values()) <= set(boxes):
            raise bad("targets", "must name only the listed containers")
        if not set(info.container_order or []) <= set(boxes):
            raise bad("container_order", "must name only the listed containers")
        if not set(info.order or []) <= set(info.items):
            raise bad("order", "must name only the listed items")
    if c == "D3":
        if info.knife is None:
            raise bad("knife", "is required for D3")
        need([info.knife], "knife", lambda nd: nd.grabbable, "grabbable")
        need(info.items, "items", lambda nd: "CUTTABLE" in nd.properties, "sliceable")
        if len(info.items) != n:
            raise bad("items", f"must give one item per agent ({n}), got {len(info.items)}")
    if c == "D4":
        roles, buffers = info.roles, info.buffers or []
        if roles is None or roles != task.roles:
            raise bad("roles", "must equal the instance's coordbench_roles")
        if "consumer" not in roles:
            raise bad("roles", "needs a consumer")
        if not buffers or len(buffers) > 2 or ("carrier" in roles and len(buffers) < 2):
            raise bad("buffers", "must list 1 or 2 buffer stations (2 with a carrier)")
        need(buffers, "buffers", lambda nd: nd.is_surface, "a surface")
        for b in buffers:
            if b not in task.buffers:
                raise bad("buffers", f"names {b}, not a station of coordbench_buffers")
        for name in ("source", "target", "capacity"):
            if getattr(info, name) is None:
                raise bad(name, "is required for D4")
        need([info.source], "source", lambda nd: nd.is_surface or nd.is_container,
             "a surface or container")  # type: ignore[list-item]
        need([info.target], "target", lambda nd: nd.is_container and nd.can_open,
             "a container that opens")  # type: ignore[list-item]
