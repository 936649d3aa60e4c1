"""A scripted household team member for loopback-server tests."""

from __future__ import annotations

import json
from typing import Any


def household_reply(body: dict[str, Any]) -> str:
    """A scripted team member: walks, grabs what it sees, talks, leads, writes memory.

    It reads only the prompt text, like a model would, and sometimes answers badly on purpose.
    """
    import re

    text = " ".join(str(m.get("content", "")) for m in body["messages"])
    user = str(body["messages"][-1]["content"])
    if "JSON list" in user:
        return '[{"agent": 0, "instruction": "search the kitchen"}, ' \
               '{"agent": 1, "instruction": "search the bedroom"}]'
    if "Shared team memory" in user:
        return '{"claims": {}, "notes": "searching"}'
    if "Start your reply with READY" in user:
        return "READY I will search the kitchen."
    if "Send one short message" in user or "Report to the leader" in user:
        return "I will search the kitchen. I am in the bedroom."
    n = len(body["messages"][-1]["content"]) % 7
    if n == 0:
        return "I think I should grab something."  # no JSON: a protocol failure
    if n == 1:
        return '{"action": "fly", "memory": "x"}'  # unknown action
    seen = re.findall(r"(\w+) \((\d+)\)", user.split("You see:")[-1]) if "You see:" in user \
        else []
    if n == 2 and seen:
        name, ident = seen[0]
        return json.dumps({"action": "walk", "object": {"name": name, "id": int(ident)},
                           "memory": "walked"})
    if n == 3 and seen:
        name, ident = seen[-1]
        return f'```json\n{{"action": "grab", "object": {{"name": "{name}"}}}}\n```'
    rooms = re.findall(r"(\w+)--door", text)
    room = rooms[n % len(rooms)] if rooms else "kitchen"
    return json.dumps({"action": "walk_to_room", "room": room, "memory": {"plan": "explore"}})
