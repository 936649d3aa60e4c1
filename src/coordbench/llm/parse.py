"""Tolerant parsing of model replies and grounding of described objects to scene ids.

Model output is data: it is parsed, never executed. Every failure returns a reason string, so
the caller can record a protocol failure with the raw reply and let the agent idle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from coordbench.envs.household.actions import ACTIONS, Action
from coordbench.envs.household.observe import Observation

MAX_REPLY = 20_000  # characters considered; longer replies are cut before parsing
ALIASES = {
    "put_inside": "put_in", "putin": "put_in", "put_into": "put_in", "place_in": "put_in",
    "put": "put_on", "puton": "put_on", "putback": "put_on", "place": "put_on",
    "place_on": "put_on", "hand_over": "handover", "give": "handover", "handoff": "handover",
    "pick": "grab", "pick_up": "grab", "pickup": "grab", "take": "grab",
    "go_to_room": "walk_to_room", "walk_room": "walk_to_room", "goto_room": "walk_to_room",
    "go_to_door": "walk_to_door", "walk_door": "walk_to_door", "go_to": "walk", "goto": "walk",
    "move_to": "walk", "walk_to": "walk", "wait_and_receive": "receive", "idle": "wait",
    "finish": "done", "stop": "done", "task_complete": "done",
}
NEEDS_OBJECT = {"walk", "grab", "open", "close", "put_on", "put_in", "handover"}


def extract_json(text: str) -> tuple[Any | None, str | None]:
    """Return (the first parsable JSON object or list in `text`, None) or (None, the reason).

    One linear scan finds balanced top-level {...} / [...] spans (string-aware); each is tried
    with json.loads, then with single quotes read as double quotes.
    """
    if not isinstance(text, str) or not text.strip():
        return None, "empty reply"
    text = text[:MAX_REPLY]
    fence = re.search(r"```(?:json)?\s*(.+?)```", text, re.S)
    unclosed = False
    for chunk in ([fence.group(1)] if fence else []) + [text]:
        depth, in_str, esc, start = 0, False, False, -1
        for i, ch in enumerate(chunk):
            if depth and in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
                continue
            if ch in "{[":
                if depth == 0:
                    start = i
                depth += 1
            elif ch in "}]" and depth:
                depth -= 1
                if depth == 0:
                    blob = chunk[start:i + 1]
                    for attempt in (blob, blob.replace("'", '"')):
                        try:
                            return json.loads(attempt), None
                        except (ValueError, RecursionError):
                            # ValueError also covers integers past Python's digit limit
                            continue
            elif ch == '"' and depth:
                in_str = True
        unclosed = unclosed or depth > 0
    if unclosed:  # a reply cut at the token limit reads like this
        return None, "the reply's JSON is not closed (cut off?)"
    return None, "no JSON object in the reply"


GENERIC = frozenset({"", "object", "item", "thing", "it", "the", "a", "an", "obj"})


def _names(name: str, class_name: str) -> bool:
    """Return whether `name` can be a reference to an object of `class_name`: no name (or a
    generic word), the class itself, or the class as one of its words ("red apple" is an
    apple, "pineapple" and "cup" (for a cupboard) are not)."""
    words = [_norm(w) for w in re.findall(r"[a-z0-9]+", str(name).lower())]
    if all(w in GENERIC for w in words):
        return True
    have = _norm(class_name)
    return _norm(name) == have or have in words


def _norm(name: Any) -> str:
    s = re.sub(r"[^a-z0-9]", "", str(name).lower())
    return s[:-1] if s.endswith("s") and len(s) > 3 else s


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        m = re.search(r"\d+", v)
        return int(m.group()) if m and len(m.group()) < 12 else None
    return None


def _ref(value: Any) -> tuple[int | None, str, str]:
    """Return (id, class name, description) from an object reference in any common form."""
    if isinstance(value, dict):
        ident = _as_int(value.get("id", value.get("object_id")))
        name = value.get("name", value.get("class", value.get("class_name", "")))
        return ident, str(name or ""), str(value.get("description", "") or "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _as_int(value), "", ""
    if isinstance(value, str):
        ident = re.search(r"\((\d+)\)|#(\d+)|\bid\s*[:=]?\s*(\d+)", value)
        num = next((int(g) for g in ident.groups() if g), None) if ident else None
        name = re.sub(r"\(.*?\)|#\d+|\bid\s*[:=]?\s*\d+", "", value, flags=re.I).strip()
        return num, name, ""
    return None, "", ""


@dataclass(frozen=True)
class Grounded:
    """A parsed action, or the reason it could not be grounded."""

    action: Action | None
    error: str | None = None
    memory: str | None = None


def ground(obj: Any, obs: Observation, *, held_only: bool = False,
           containers: bool = False) -> tuple[int | None, str | None]:
    """Return (scene id, None) for an object reference, or (None, reason)."""
    ident, name, desc = _ref(obj)
    held = {o: c for o, c in obs.held}
    pool = {} if held_only else {s.id: s.class_name for s in obs.visible}
    pool.update(held)
    want = _norm(name)
    if ident is not None and ident in pool:
        if not _names(name, pool[ident]):
            # the id names another object than the name: neither is taken on trust
            return None, f"object {ident} is a {pool[ident]}, not a {name}"
        return ident, None
    if not want:
        if ident is not None:
            return None, f"object {ident} is not visible or held"
        return None, "the action names no object"
    matches = [i for i, c in pool.items() if _norm(c) == want]
    if not matches:
        matches = [i for i, c in pool.items() if want in _norm(c) or _norm(c) in want]
    if not matches:
        where = "held" if held_only else "visible or held"
        return None, f"no {name!r} is {where}"
    if len(matches) > 1:
        dist = {s.id: s.distance for s in obs.visible}
        words = set(re.findall(r"[a-z]+", desc.lower()))
        descs = {s.id: set(re.findall(r"[a-z]+", s.description.lower())) for s in obs.visible}
        matches.sort(key=lambda i: (i not in held, -len(words & descs.get(i, set())),
                                    dist.get(i, 0.0), i))
    return matches[0], None


def parse_action(text: str, obs: Observation) -> Grounded:
    """Return the grounded action of a reply (JSON with at least an "action" field)."""
    data, err = extract_json(text)
    if isinstance(data, list):
        data = next((d for d in data if isinstance(d, dict)), None)
        err = err or (None if data else "no JSON object in the reply")
    if not isinstance(data, dict):
        return Grounded(None, err or "the reply's JSON is not an object")
    lowered = {str(k).lower(): v for k, v in data.items()}
    memory = lowered.get("memory")
    memory = json.dumps(memory)[:4000] if isinstance(memory, dict | list) else (
        str(memory)[:4000] if memory is not None else None)
    raw_name = lowered.get("action")
    if not isinstance(raw_name, str):
        return Grounded(None, "no 'action' field", memory)
    name = re.sub(r"[\s\-]+", "_", raw_name.strip().lower())
    name = ALIASES.get(name, name)
    if name not in ACTIONS:
        return Grounded(None, f"unknown action {raw_name[:40]!r}", memory)
    if name in ("wait", "receive", "done"):
        return Grounded(Action(name), None, memory)
    if name == "walk_to_room":
        room = lowered.get("room") or lowered.get("object") or lowered.get("target")
        room = room.get("name") if isinstance(room, dict) else room
        if not isinstance(room, str | int) or isinstance(room, bool):
            return Grounded(None, "walk_to_room needs a room", memory)
        rid = next((r for r, n in obs.room_names.items()
                    if _norm(n) == _norm(room) or str(r) == str(room)), None)
        if rid is None:
            return Grounded(None, f"no room {str(room)[:40]!r}", memory)
        return Grounded(Action(name, room=rid), None, memory)
    if name == "walk_to_door":
        door = _as_int(lowered.get("door_id", lowered.get("door", lowered.get("object"))))
        if door is None or door not in {d for d, _, _ in obs.doors}:
            return Grounded(None, f"no door {door!r} in the topology", memory)
        return Grounded(Action(name, target=door), None, memory)
    obj_ref = lowered.get("object", lowered.get("parameter_1", lowered.get("obj")))
    if obj_ref is None:
        return Grounded(None, f"{name} needs an object", memory)
    if name in ("put_on", "put_in", "handover"):
        obj, why = ground(obj_ref, obs, held_only=True)
        if obj is None:
            return Grounded(None, why, memory)
        if name == "handover":
            agent = _as_int(lowered.get("agent", lowered.get("to_agent",
                                                            lowered.get("parameter_2"))))
            if agent is None or not 0 <= agent < obs.n_agents or agent == obs.agent:
                return Grounded(None, "handover needs another agent's number", memory)
            return Grounded(Action(name, obj=obj, to_agent=agent), None, memory)
        target_ref = lowered.get("target", lowered.get("parameter_2"))
        if target_ref is None:
            return Grounded(None, f"{name} needs a target", memory)
        target, why = ground(target_ref, obs)
        if target is None:
            return Grounded(None, why, memory)
        return Grounded(Action(name, obj=obj, target=target), None, memory)
    obj, why = ground(obj_ref, obs)
    if obj is None:
        return Grounded(None, why, memory)
    return Grounded(Action(name, obj=obj), None, memory)


def parse_menu_id(text: str) -> str | None:
    """Return the digits of the menu id a planner's reply names (`ACTION: <id>`, else its
    first integer), or None if it names none."""
    text = text[:MAX_REPLY]
    m = re.search(r"ACTION:\s*(\d+)", text) or re.search(r"\b(\d+)\b", text)
    return m.group(1) if m else None


@dataclass
class TaskChoice:
    """A STAT reply read as a task choice: the task named (None if none could be read),
    whether it may be selected now, why not, and the notes the reply carried."""

    task: int | None
    valid: bool
    error: str | None = None
    memory: str | None = None


def parse_task_choice(text: str, choices: list[int], n_tasks: int) -> TaskChoice:
    """Return the task a reply chooses: JSON {"task": j} (or a "task j" phrase when the reply
    has no JSON); valid only if j is among `choices` (the free tasks)."""
    data, err = extract_json(text)
    if isinstance(data, list):
        data = next((d for d in data if isinstance(d, dict)), None)
    memory = None
    raw: Any = None
    if isinstance(data, dict):
        lowered = {str(k).lower(): v for k, v in data.items()}
        raw = lowered.get("task", lowered.get("task_id"))
        note = lowered.get("memory")
        memory = None if note is None else (
            json.dumps(note) if isinstance(note, dict | list) else str(note))[:4000]
    elif isinstance(text, str):
        found = re.search(r"\btask\D{0,3}(\d{1,6})\b", text[:MAX_REPLY], re.I)
        raw = found.group(1) if found else None
    task = _task_number(raw)
    if task is None:
        reason = err if raw is None and err else "the reply names no task"
        return TaskChoice(None, False, reason, memory)
    if not 0 <= task < n_tasks:
        return TaskChoice(None, False, f"task {task} does not exist (0..{n_tasks - 1})", memory)
    if task not in choices:
        return TaskChoice(task, False, f"task {task} is not free", memory)
    return TaskChoice(task, True, None, memory)


def _task_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,6}\s*", value):
        return int(value)
    return None
