"""coordbench's own prompts for household team members (model-driven minds)."""

from __future__ import annotations

SYSTEM = """You are agent {agent}, one of {n} household robots working as a team in a home \
with several rooms. Together you must complete the goal below within a limited number of \
steps. Each step every robot does exactly one action.

Actions (answer with one JSON object):
- {{"action": "walk", "object": {{"name": "plate", "id": 12}}}}  walk to a visible object
- {{"action": "walk_to_room", "room": "kitchen"}}
- {{"action": "walk_to_door", "door_id": 371}}
- {{"action": "grab", "object": {{"name": "apple", "id": 40}}}}  it must be visible and near
- {{"action": "open", "object": {{"name": "fridge", "id": 9}}}}  (also "close")
- {{"action": "put_on", "object": {{"name": "apple", "id": 40}}, "target": {{"name": \
"kitchentable", "id": 20}}}}  (or "put_in" for containers; open them first)
- {{"action": "handover", "object": {{"name": "apple", "id": 40}}, "agent": 1}}  both at the \
same door, the other robot must "receive" in the same step
- {{"action": "receive"}}, {{"action": "wait"}}, {{"action": "done"}} (only when the goal is met)
Rules: at most 2 objects in hand; nothing can be grabbed or opened with both hands full; \
walk to an object before grabbing or using it; stay inside your allowed rooms.
Add a "memory" field with short notes for your future self (what you found, your plan)."""

ACT = """{observation}

Your notes: {memory}
Recent messages:
{dialogue}
Your recent actions:
{history}

Reply with one JSON object: your action and a "memory" field."""

SPEAK = {
    "broadcast": "Send one short message to your team (your plan, what you found, what you "
                 "will take). Reply with the message text only, or <NO_MESSAGE>.",
    "discuss": "Discuss the plan with your team. Start your reply with READY if the plan is "
               "settled for you, otherwise CONTINUE, then your message.",
    "report": "Report to the leader (agent 0): where you are, what you see and hold, your "
              "plan. Reply with the report text only.",
}

SPEAK_USER = """{observation}

Your notes: {memory}
Messages so far:
{dialogue}

{instruction}"""

ASSIGN = """{observation}

Worker reports:
{reports}

You are the leader. Give every agent (including yourself, agent 0) one instruction. Reply with \
a JSON list: [{{"agent": 0, "instruction": "..."}}, {{"agent": 1, "instruction": "..."}}]"""

MEMORY = """{observation}

Shared team memory (JSON), written by your teammates in turn:
{board}

Update the shared memory for the team: your location, what you hold, objects you found and \
where, which object you claim ("claims": {{"object id": agent}}). Reply with the whole updated \
memory as one JSON object."""

# JSON schemas sent as `response_format` (json_schema) to servers that support structured
# output, for the replies that must be JSON. They are loose on purpose: they fix the shape the
# parser reads, not the values, so a constrained reply can still be a wrong action.
_REF = {"anyOf": [{"type": "object"}, {"type": "string"}, {"type": "integer"}]}
ACT_SCHEMA = {"type": "object", "required": ["action"], "properties": {
    "action": {"type": "string"}, "object": _REF, "target": _REF, "room": {"type": "string"},
    "door_id": {"type": "integer"}, "agent": {"type": "integer"},
    "memory": {"type": "string"}}}
ASSIGN_SCHEMA = {"type": "object", "required": ["assignments"], "properties": {
    "assignments": {"type": "array", "items": {
        "type": "object", "required": ["agent", "instruction"],
        "properties": {"agent": {"type": "integer"}, "instruction": {"type": "string"}}}}}}
MEMORY_SCHEMA = {"type": "object"}
SCHEMAS = {"act": ACT_SCHEMA, "assignment": ASSIGN_SCHEMA, "memory": MEMORY_SCHEMA}

# The construct planners (CoCoBench): one menu choice per decision.
CONSTRUCT_PLAN = """You are {who}. Coordinate the team to reach the goal with few actions; \
avoid contention for shared objects.
Step {step}: {left} of {budget} actions left.
Last step: {last}
{state}
{board}
ACTION MENU (id: agent: action):
{menu}

Reply with two lines: REASON: ... and ACTION: <id>"""
