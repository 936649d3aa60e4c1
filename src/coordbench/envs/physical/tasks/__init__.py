"""The task registry."""

from __future__ import annotations

from coordbench.errors import ConfigError

from .base import Phase, Task
from .carry import BigTable, BigTableG1, CoCarry, CoCarryG1, TableAlign, TableAlignG1
from .cart_service import CartService, CartServiceG1
from .co_pouring import CoPouring
from .frame_hang import FrameHang
from .handover import Handover, HandoverG1
from .move_house import MoveHouse, MoveHouseG1
from .pouring import Pouring
from .trash_collection import TrashCollection

# the paper's order: low movement (low, high coupling), high movement (low, high), 3 robots
TASKS = {cls().name: cls for cls in (Handover, Pouring, FrameHang, CoPouring, TrashCollection,
                                     CartService, CoCarry, TableAlign, MoveHouse,
                                     BigTable)}


# the tasks the G1 humanoids play so far (the same names, phases and criteria)
G1_TASKS = {cls().name: cls for cls in (HandoverG1, CartServiceG1, CoCarryG1, TableAlignG1,
                                        MoveHouseG1, BigTableG1)}
EMBODIMENTS = ("cobot", "g1")


def get_task(name: str, embodiment: str = "cobot") -> Task:
    """Return a new task object by name for `embodiment` (cobot | g1), or raise ConfigError
    listing the names."""
    if name not in TASKS:
        raise ConfigError(f"unknown physical task {name!r}; available: {', '.join(TASKS)}")
    if embodiment == "cobot":
        return TASKS[name]()
    if embodiment != "g1":
        raise ConfigError(f"unknown embodiment {embodiment!r}; choose from "
                          f"{', '.join(EMBODIMENTS)}")
    if name not in G1_TASKS:
        raise ConfigError(f"{name} has no G1 version yet; the G1 plays "
                          f"{', '.join(G1_TASKS)}")
    return G1_TASKS[name]()


__all__ = ["EMBODIMENTS", "G1_TASKS", "TASKS", "Phase", "Task", "get_task"]
