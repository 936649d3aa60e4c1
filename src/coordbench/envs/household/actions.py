"""Household actions and their typed outcome codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACTIONS = ("walk", "walk_to_room", "walk_to_door", "grab", "open", "close", "put_on", "put_in",
           "handover", "receive", "wait", "done", "slice", "toggle", "drop")
# Actions on one object that conflict when several agents attempt them in the same step.
# "paper" is MECoBench's set (same-step grab/open); "with_close" also contends same-step
# closes, which the construct tasks use (their containers are shared resources, D2).
CONFLICT_SETS: dict[str, frozenset[str]] = {
    "paper": frozenset({"grab", "open"}),
    "with_close": frozenset({"grab", "open", "close"}),
}
CONFLICTING = CONFLICT_SETS["paper"]

OUTCOMES = {
    "ok": "the action succeeded",
    "invalid": "unknown action, wrong arguments, or an id that names nothing usable",
    "not_visible": "the target is not visible from where the agent stands",
    "out_of_zone": "the target lies in a room outside the agent's allowed rooms",
    "too_far": "the target (or the receiving agent) is out of reach",
    "hands_full": "both hands are full",
    "not_held": "the agent does not hold that object",
    "held_by_other": "a teammate holds that object",
    "not_grabbable": "the object cannot be picked up",
    "wrong_target": "put_on needs a surface, put_in a container, open/close an openable",
    "closed": "the container is closed",
    "already_open": "the container is already open",
    "already_closed": "the container is already closed",
    "protected": "the object already satisfies a subgoal",
    "conflict_lost": "another agent attempted the same grab/open/close this step and won",
    "receiver_not_ready": "the receiving agent did not receive (or wait) this step",
    "receiver_hands_full": "the receiving agent has no free hand",
    "protocol_failure": "the agent's reply could not be turned into an action; it idled",
    "illegal_skill": "the agent's role does not allow this action (or this object)",
    "no_tool": "slicing needs the knife in hand",
    "not_sliceable": "the object cannot be sliced",
    "already_sliced": "the object is already sliced",
    "no_switch": "the object has no switch",
    "buffer_full": "the buffer station is at capacity (an overflow event)",
}


@dataclass(frozen=True)
class Action:
    """One agent's action: `name` plus the arguments that name needs.

    walk(obj) walk_to_room(room) walk_to_door(door) grab(obj) open(obj) close(obj)
    put_on(obj, target) put_in(obj, target) handover(obj, to_agent) receive wait done
    slice(obj) toggle(obj) drop(obj); wait may name a place it waits at (obj, e.g. a buffer)
    """

    name: str
    obj: int | None = None
    target: int | None = None
    room: str | int | None = None
    to_agent: int | None = None

    def args(self) -> dict[str, Any]:
        """Return the non-empty arguments as a dict."""
        out = {"obj": self.obj, "target": self.target, "room": self.room,
               "to_agent": self.to_agent}
        return {k: v for k, v in out.items() if v is not None}

    def text(self) -> str:
        """Return a compact human-readable form, e.g. 'put_on(471, 380)'."""
        args = ", ".join(str(v) for v in self.args().values())
        return f"{self.name}({args})"


WAIT = Action("wait")


@dataclass(frozen=True)
class Outcome:
    """What happened to one action: an outcome code, a detail, subgoals it completed."""

    code: str
    detail: str = ""
    completed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Return whether the action succeeded."""
        return self.code == "ok"
