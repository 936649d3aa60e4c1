"""The task registry."""

from __future__ import annotations

from coordbench.errors import ConfigError

from .base import Phase, Task
from .carry import BigTable, CoCarry, TableAlign
from .cart_service import CartService
from .co_pouring import CoPouring
from .frame_hang import FrameHang
from .handover import Handover
from .move_house import MoveHouse
from .pouring import Pouring
from .trash_collection import TrashCollection

# the paper's order: low movement (low, high coupling), high movement (low, high), 3 robots
TASKS = {cls().name: cls for cls in (Handover, Pouring, FrameHang, CoPouring, TrashCollection,
                                     CartService, CoCarry, TableAlign, MoveHouse,
                                     BigTable)}


def get_task(name: str) -> Task:
    """Return a new task object by name, or raise ConfigError listing the names."""
    if name not in TASKS:
        raise ConfigError(f"unknown physical task {name!r}; available: {', '.join(TASKS)}")
    return TASKS[name]()


__all__ = ["TASKS", "Phase", "Task", "get_task"]
