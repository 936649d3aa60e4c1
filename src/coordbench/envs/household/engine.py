"""The household engine: state, legality rules, conflicts, one team step at a time.

Rules (docs/household.md has the full list):
- An agent stands at what it last walked to (a room's centre, a door, an object) and is in one
  room. It holds at most 2 objects; with both hands full it cannot grab or open.
- Visibility: a node is visible to an agent when it is in the agent's room, is not held, is not
  (transitively) inside a closed container, and lies within VIEW_RANGE metres of the agent.
  Rooms and doors need no visibility.
- grab/open/close/put_* need the target visible and within REACH metres; walking to it first
  puts it in reach. Targets must lie in the agent's allowed rooms (sequential zones).
- handover(obj, r) needs the giver to hold obj, agent r to `receive` (or `wait`) in the same
  step, the two within HANDOVER_RANGE metres, and a free hand at r.
- Same-step grab/open of one object by several agents (MECoBench's conflict set; the
  "with_close" set adds close): one winner drawn with the episode's seeded RNG; the others get
  `conflict_lost` and do nothing.
- Execution order in a step: conflicts are resolved first, then actions run in agent index
  order, each seeing the effects of the lower-index agents' actions.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .actions import ACTIONS, CONFLICT_SETS, Action, Outcome
from .scene import NON_OBJECT_CATEGORIES
from .task import HouseholdTask

VIEW_RANGE = 6.0
REACH = 1.5
HANDOVER_RANGE = 2.0
MAX_HELD = 2


def conflict_groups(actions: Sequence[Action], conflicting: frozenset[str]
                    ) -> dict[int, list[int]]:
    """Return, per object id, the agents whose actions contend for it this step (a
    conflicting verb naming that id), objects in the order of their first agent; a group of
    two or more draws one winner."""
    groups: dict[int, list[int]] = {}
    for i, a in enumerate(actions):
        if a.name in conflicting and isinstance(a.obj, int):
            groups.setdefault(a.obj, []).append(i)
    return groups


class HouseholdEnv:
    """A team of n agents in one household task."""

    def __init__(self, task: HouseholdTask, n_agents: int, seed: int = 0,
                 conflict_set: str = "paper") -> None:
        if n_agents < 1:
            raise ValueError(f"a team needs at least one agent, got {n_agents}")
        if task.zones and n_agents != len(task.zones):
            raise ValueError(f"sequential task {task.task_id} needs {len(task.zones)} agents")
        if conflict_set not in CONFLICT_SETS:
            raise ValueError(f"unknown conflict set {conflict_set!r}; choose from "
                             f"{', '.join(CONFLICT_SETS)}")
        self.task = task
        self.scene = task.scene
        self.n = n_agents
        self.conflicting = CONFLICT_SETS[conflict_set]
        self.rng = random.Random(seed)
        sc = self.scene
        self.allowed = [set(task.allowed_rooms(i)) for i in range(n_agents)]
        # teams larger than the task's start-room list reuse its rooms in turn
        self.room = [task.start_rooms[i % len(task.start_rooms)] for i in range(n_agents)]
        self.pos = [sc.room_center(r) for r in self.room]
        self.at_door: list[int | None] = [None] * n_agents  # the door an agent walked to
        self.held: list[list[int]] = [[] for _ in range(n_agents)]
        self.holder: dict[int, int] = {}
        self.node_room = dict(sc.room_of)
        self.parents: dict[int, tuple[tuple[str, int], ...]] = dict(sc.parents)
        self.open_state = {nid: ("CLOSED" not in n.states) for nid, n in sc.nodes.items()
                           if n.can_open}
        self.node_pos = {nid: (n.x, n.z) for nid, n in sc.nodes.items()}
        self.by_class: dict[str, list[int]] = {}
        for nid, n in sc.nodes.items():
            if n.grabbable:
                self.by_class.setdefault(n.class_name, []).append(nid)
        self.goal_classes = {s.obj_class for s in task.subgoals}
        # node states beyond open/closed (SLICED, ON/OFF), starting from the scene's states
        self.states = {nid: {st for st in n.states if st in ("ON", "OFF", "SLICED")}
                       for nid, n in sc.nodes.items()}
        self.roles = task.roles
        self.shared = set(task.shared_nodes)
        self.t = 0
        self._hidden_cache: dict[int, bool] = {}
        self.last_conflicts: list[tuple[int, list[int], int]] = []  # (object, agents, winner)

    # -- geometry and visibility --------------------------------------------------------------
    def distance(self, p: tuple[float, float], q: tuple[float, float]) -> float:
        """Return the horizontal distance in metres."""
        return math.hypot(p[0] - q[0], p[1] - q[1])

    def hidden(self, nid: int) -> bool:
        """Return whether node `nid` is (transitively) inside a closed container."""
        cached = self._hidden_cache.get(nid)
        if cached is not None:
            return cached
        result = False
        stack, seen = [nid], set()
        while stack and not result:
            cur = stack.pop()
            for rel, parent in self.parents.get(cur, ()):
                if parent in seen:
                    continue
                seen.add(parent)
                if rel == "INSIDE" and not self.open_state.get(parent, True):
                    result = True
                    break
                stack.append(parent)
        self._hidden_cache[nid] = result
        return result

    def is_visible(self, agent: int, nid: int) -> bool:
        """Return whether node `nid` is visible to `agent` (see the module docstring)."""
        node = self.scene.nodes.get(nid)
        if node is None or node.category in NON_OBJECT_CATEGORIES or nid in self.holder:
            return False
        if self.hidden(nid):
            return False
        room = self.node_room.get(nid)
        if room != self.room[agent] and not self._shared(nid):
            return False
        return self.distance(self.pos[agent], self.node_pos[nid]) <= VIEW_RANGE

    def visible(self, agent: int) -> list[int]:
        """Return the ids of every node visible to `agent`, in id order."""
        return [nid for nid in sorted(self.node_room) if self.is_visible(agent, nid)]

    # -- goals --------------------------------------------------------------------------------
    def satisfied(self) -> dict[str, int]:
        """Return, per subgoal key, how many of its required objects are in place (capped)."""
        out = {}
        for sg in self.task.subgoals:
            if sg.relation == "state":
                out[sg.key] = int(self.has_state(sg.targets[0], sg.obj_class))
                continue
            rel = sg.relation.upper()
            k = 0
            for nid in self.by_class.get(sg.obj_class, ()):
                if any(r == rel and p in sg.targets for r, p in self.parents.get(nid, ())):
                    k += 1
            out[sg.key] = min(k, sg.count)
        return out

    def has_state(self, nid: int, state: str) -> bool:
        """Return whether node `nid` is in `state` (OPEN/CLOSED, ON/OFF, SLICED)."""
        if state in ("OPEN", "CLOSED"):
            return nid in self.open_state and self.open_state[nid] == (state == "OPEN")
        return state in self.states.get(nid, ())

    def buffer_load(self, nid: int) -> int:
        """Return how many objects rest on buffer station `nid`."""
        return sum(1 for ps in self.parents.values() if any(p == nid for _, p in ps))

    def completion_rate(self) -> float:
        """Return CR: satisfied object instances / required object instances."""
        sat = self.satisfied()
        need = sum(sg.count for sg in self.task.subgoals)
        return sum(sat.values()) / need

    def success(self) -> bool:
        """Return whether every subgoal is satisfied."""
        return self.completion_rate() == 1.0

    def protects(self, nid: int) -> bool:
        """Return whether object `nid` currently counts toward a subgoal."""
        cls = self.scene.nodes[nid].class_name
        return any(sg.relation != "state" and sg.obj_class == cls
                   and any(r == sg.relation.upper() and p in sg.targets
                           for r, p in self.parents.get(nid, ()))
                   for sg in self.task.subgoals)

    # -- one team step ------------------------------------------------------------------------
    def step(self, actions: Sequence[Action], order: Sequence[int] | None = None
             ) -> list[Outcome]:
        """Execute one joint action (one per agent); return each agent's outcome.

        `order` lists the agents in landing order (default: index order).
        """
        if len(actions) != self.n:
            raise ValueError(f"expected {self.n} actions, got {len(actions)}")
        outcomes: list[Outcome | None] = [None] * self.n
        self.last_conflicts: list[tuple[int, list[int], int]] = []
        for obj, members in conflict_groups(actions, self.conflicting).items():
            if len(members) > 1:
                winner = self.rng.choice(members)
                self.last_conflicts.append((obj, members, winner))
                for i in members:
                    if i != winner:
                        outcomes[i] = Outcome("conflict_lost",
                                              f"agent {winner} also tried to {actions[i].name} "
                                              f"{obj} and won")
        for i in (order if order is not None else range(self.n)):
            if outcomes[i] is None:
                outcomes[i] = self._execute(i, actions[i], actions)
        self.t += 1
        return outcomes  # type: ignore[return-value]

    def _execute(self, i: int, a: Action, actions: Sequence[Action]) -> Outcome:
        name = a.name
        if name not in ACTIONS:
            return Outcome("invalid", f"unknown action {name!r}")
        if self.roles is not None:
            allowed = self.task.role_skills.get(self.roles[i])
            if allowed is not None and name not in allowed:
                return Outcome("illegal_skill", f"a {self.roles[i]} cannot {name}")
        if name in ("wait", "receive", "done"):
            return Outcome("ok")
        if name == "walk_to_room":
            rid = self.scene.room_id(a.room) if a.room is not None else None
            if rid is None:
                return Outcome("invalid", f"no room {a.room!r}")
            if rid not in self.allowed[i]:
                return Outcome("out_of_zone", f"room {self.scene.rooms[rid]} is not allowed")
            self.room[i] = rid
            self.pos[i] = self.scene.room_center(rid)
            self.at_door[i] = None
            return Outcome("ok")
        if name == "walk_to_door":
            door = a.target if a.target is not None else a.obj
            pair = self.scene.doors.get(door) if isinstance(door, int) else None
            if pair is None:
                return Outcome("invalid", f"{door!r} is not a door between two rooms")
            if not (set(pair) & self.allowed[i]):
                return Outcome("out_of_zone", f"door {door} joins no allowed room")
            if self.room[i] not in pair:
                self.room[i] = pair[0] if pair[0] in self.allowed[i] else pair[1]
            self.pos[i] = self.node_pos[door]
            self.at_door[i] = door
            return Outcome("ok")
        obj = a.obj
        node = self.scene.nodes.get(obj) if isinstance(obj, int) else None
        if node is None:
            return Outcome("invalid", f"{name} needs an object id that exists, got {obj!r}")
        if name == "handover":
            return self._handover(i, obj, a.to_agent, actions)
        if name in ("put_on", "put_in"):
            return self._put(i, obj, a.target, name)
        if name == "drop":
            if obj not in self.held[i]:
                return Outcome("not_held", f"agent {i} does not hold {obj}")
            self.held[i].remove(obj)
            del self.holder[obj]
            self.parents[obj] = ()
            self.node_room[obj] = self.room[i]
            self.node_pos[obj] = self.pos[i]
            self._hidden_cache.clear()
            return Outcome("ok")
        # walk, grab, open, close target a node in the world
        room = self.node_room.get(obj)
        if room is not None and room not in self.allowed[i] and not self._shared(obj):
            return Outcome("out_of_zone", f"{node.class_name} {obj} is in "
                                          f"{self.scene.rooms[room]}, outside the allowed rooms")
        if obj in self.holder:
            who = self.holder[obj]
            return Outcome("held_by_other" if who != i else "invalid",
                           f"{node.class_name} {obj} is held by agent {who}")
        if not self.is_visible(i, obj):
            return Outcome("not_visible", f"{node.class_name} {obj} is not visible")
        if name == "walk":
            self.pos[i] = self.node_pos[obj]
            self.at_door[i] = None
            return Outcome("ok")
        if self.distance(self.pos[i], self.node_pos[obj]) > REACH:
            return Outcome("too_far", f"{node.class_name} {obj} is out of reach; walk to it")
        if name == "slice":
            if not any(self.scene.nodes[h].class_name == "knife" for h in self.held[i]):
                return Outcome("no_tool", "slicing needs the knife in hand")
            if "CUTTABLE" not in node.properties:
                return Outcome("not_sliceable", f"{node.class_name} {obj} cannot be sliced")
            owner = self.task.owners.get(obj)
            if owner is not None and owner != i:
                return Outcome("illegal_skill", f"{node.class_name} {obj} is agent {owner}'s")
            if "SLICED" in self.states[obj]:
                return Outcome("already_sliced")
            before = self.satisfied()
            self.states[obj].add("SLICED")
            return Outcome("ok", completed=self._newly_met(before))
        if name == "toggle":
            if "HAS_SWITCH" not in node.properties:
                return Outcome("no_switch", f"{node.class_name} {obj} has no switch")
            before = self.satisfied()
            st = self.states[obj]
            on = "ON" in st
            st.discard("ON" if on else "OFF")
            st.add("OFF" if on else "ON")
            return Outcome("ok", completed=self._newly_met(before))
        if name == "grab":
            if not node.grabbable:
                return Outcome("not_grabbable", f"{node.class_name} {obj} cannot be picked up")
            if len(self.held[i]) >= 2:
                return Outcome("hands_full")
            if self.protects(obj):
                return Outcome("protected", f"{node.class_name} {obj} already satisfies a goal")
            if self.roles is not None and self.roles[i] in self.task.role_sources:
                sources = self.task.role_sources[self.roles[i]]
                if not any(p in sources for _, p in self.parents.get(obj, ())):
                    return Outcome("illegal_skill", f"a {self.roles[i]} may only take objects "
                                                    f"from {sources}")
            self.held[i].append(obj)
            self.holder[obj] = i
            self.parents[obj] = ()
            self.node_room.pop(obj, None)
            self._hidden_cache.clear()
            return Outcome("ok")
        # open / close
        if not node.can_open:
            return Outcome("wrong_target", f"{node.class_name} {obj} does not open")
        if len(self.held[i]) >= 2:
            return Outcome("hands_full")
        is_open = self.open_state[obj]
        if name == "open" and is_open:
            return Outcome("already_open")
        if name == "close" and not is_open:
            return Outcome("already_closed")
        before = self.satisfied()
        self.open_state[obj] = name == "open"
        self._hidden_cache.clear()
        return Outcome("ok", completed=self._newly_met(before))

    def _put(self, i: int, obj: int, target: int | None, name: str) -> Outcome:
        tnode = self.scene.nodes.get(target) if isinstance(target, int) else None
        if tnode is None:
            return Outcome("invalid", f"{name} needs a target id that exists, got {target!r}")
        if obj not in self.held[i]:
            return Outcome("not_held", f"agent {i} does not hold {obj}")
        room = self.node_room.get(target)
        if room is not None and room not in self.allowed[i] and not self._shared(target):
            return Outcome("out_of_zone", f"{tnode.class_name} {target} is outside the zone")
        if not self.is_visible(i, target):
            return Outcome("not_visible", f"{tnode.class_name} {target} is not visible")
        if self.distance(self.pos[i], self.node_pos[target]) > REACH:
            return Outcome("too_far", f"{tnode.class_name} {target} is out of reach")
        if name == "put_on" and not tnode.is_surface:
            return Outcome("wrong_target", f"{tnode.class_name} {target} is not a surface")
        if name == "put_in":
            if not tnode.is_container:
                return Outcome("wrong_target", f"{tnode.class_name} {target} is no container")
            if not self.open_state.get(target, True):
                return Outcome("closed", f"{tnode.class_name} {target} is closed")
        cap = self.task.buffers.get(target)
        if cap is not None and self.buffer_load(target) >= cap:
            return Outcome("buffer_full", f"buffer {target} holds {cap} already")
        before = self.satisfied()
        self.held[i].remove(obj)
        del self.holder[obj]
        self.parents[obj] = (("ON" if name == "put_on" else "INSIDE", target),)
        self.node_room[obj] = self.node_room.get(target, self.room[i])
        self.node_pos[obj] = self.node_pos[target]
        self._hidden_cache.clear()
        return Outcome("ok", completed=self._newly_met(before))

    def _shared(self, nid: int) -> bool:
        """Return whether a node is a shared station (or rests on one): reachable from zones."""
        return nid in self.shared or any(p in self.shared for _, p in self.parents.get(nid, ()))

    def _newly_met(self, before: dict[str, int]) -> tuple[str, ...]:
        """Return the subgoals whose count rose since `before` (credited to the actor)."""
        after = self.satisfied()
        return tuple(k for k in after if after[k] > before[k])

    def _handover(self, i: int, obj: int, to: int | None, actions: Sequence[Action]) -> Outcome:
        if not isinstance(to, int) or not 0 <= to < self.n or to == i:
            return Outcome("invalid", f"handover needs another agent's index, got {to!r}")
        if obj not in self.held[i]:
            return Outcome("not_held", f"agent {i} does not hold {obj}")
        if actions[to].name not in ("receive", "wait"):
            return Outcome("receiver_not_ready", f"agent {to} did not receive this step")
        if self.distance(self.pos[i], self.pos[to]) > HANDOVER_RANGE:
            return Outcome("too_far", f"agent {to} is more than {HANDOVER_RANGE} m away")
        if len(self.held[to]) >= MAX_HELD:
            return Outcome("receiver_hands_full")
        self.held[i].remove(obj)
        self.held[to].append(obj)
        self.holder[obj] = to
        return Outcome("ok", f"handed {obj} to agent {to}")
