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

# STAT teams (spatial task allocation): a model picks a task for its agent when it has a
# choice; the same communicate phases as the household protocols.
STAT_SYSTEM = """You are agent {agent}, one of {n} agents of a team that must complete every \
task on a plane as fast as possible. Agents move one unit per step. An agent with no task \
selects a free task and then moves to it and executes it on its own (3 steps there); the \
reward for a task falls as the episode goes on, so finishing sooner earns more. If several \
agents select the same task in the same step, the nearest one gets it and the others lose \
that step. Choosing a task that is not free wastes your step. You only decide when you have \
no task; answer with one JSON object."""

STAT_ACT = """{observation}

Your notes: {memory}
Recent messages:
{dialogue}
Your recent choices:
{history}

Choose the free task you will do next. Reply with one JSON object: {{"task": <task id>, \
"memory": "<short notes for your future self>"}}"""

STAT_SPEAK = {
    "broadcast": "Send one short message to your team (which task you will take, which you "
                 "leave to others). Reply with the message text only, or <NO_MESSAGE>.",
    "report": "Report to the leader (agent 0): where you are and which task you would take. "
              "Reply with the report text only.",
}

STAT_ASSIGN = """{observation}

Worker reports:
{reports}

You are the leader. Give every agent that has no task (yourself included, if you have none) \
one free task, a different one each. Reply with a JSON list: [{{"agent": 1, "instruction": \
"take task 7"}}, ...]"""

STAT_MEMORY = """{observation}

Shared team memory (JSON), written by your teammates in turn:
{board}

Update the shared memory for the team: which task you claim ("claims": {{"task id": agent}}). \
Reply with the whole updated memory as one JSON object."""

STAT_ACT_SCHEMA = {"type": "object", "required": ["task"], "properties": {
    "task": {"type": "integer"}, "memory": {"type": "string"}}}
STAT_SCHEMAS = {"act": STAT_ACT_SCHEMA, "assignment": ASSIGN_SCHEMA, "memory": MEMORY_SCHEMA}

# Construct teams under the household protocols (CoCoBench tasks, MECoBench protocols): each
# agent's model talks in the protocol's phases, then picks its own action from its menu
# (`CONSTRUCT_PLAN`, with the messages as its board).
CONSTRUCT_SYSTEM = """You are agent_{agent}, one of {n} robots of a team that must reach the \
goal below with few actions. Every step each robot does at most one action from its own menu; \
robots act at the same time, so two robots going for the same object waste actions."""

CONSTRUCT_SPEAK = {
    "broadcast": "Send one short message to your team (which object you will take or which "
                 "step you will do, what you leave to others). Reply with the message text "
                 "only, or <NO_MESSAGE>.",
    "discuss": "Discuss who does what with your team. Start your reply with READY if the plan "
               "is settled for you, otherwise CONTINUE, then your message.",
    "report": "Report to the leader (agent_0): what you hold and what you would do next. "
              "Reply with the report text only.",
}

CONSTRUCT_ASSIGN = """{observation}

Worker reports:
{reports}

You are the leader. Give every agent (yourself included, agent 0) one instruction for this \
step, so that no two go for the same object. Reply with a JSON list: [{{"agent": 0, \
"instruction": "..."}}, {{"agent": 1, "instruction": "..."}}]"""

CONSTRUCT_MEMORY = """{observation}

Shared team memory (JSON), written by your teammates in turn:
{board}

Update the shared memory for the team: which object or step you claim ("claims": {{"object \
id": agent}}). Reply with the whole updated memory as one JSON object."""

CONSTRUCT_SCHEMAS = {"assignment": ASSIGN_SCHEMA, "memory": MEMORY_SCHEMA}
