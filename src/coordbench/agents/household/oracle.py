"""The oracle team: privileged, centralized, near-optimal; validates tasks and sets references.

It reads the true state. Each goal object still needed is assigned to the agent that will fetch
it (nearest free agent whose zone holds the object), and the agent whose zone holds the target
places it; in sequential tasks the fetcher brings it to a handover door, where the placer
receives it. Agents carry two objects per trip when they can, and open a closed target
container before fetching for it (opening needs a free hand).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordbench.envs.household.actions import WAIT, Action
from coordbench.envs.household.engine import REACH, HouseholdEnv
from coordbench.envs.household.task import Subgoal


@dataclass
class _Job:
    obj: int
    subgoal: Subgoal
    target: int
    fetcher: int
    placer: int


@dataclass
class OracleTeam:
    """Plans every agent's next action from the true state, one team step at a time."""

    env: HouseholdEnv
    jobs: dict[int, _Job] = field(default_factory=dict)

    def _zone_agent(self, room: int | None, prefer: int | None = None) -> list[int]:
        agents = [i for i in range(self.env.n) if room in self.env.allowed[i]]
        return sorted(agents, key=lambda i: (i != prefer, i))

    def _assign(self) -> None:
        env = self.env
        sat = env.satisfied()
        for obj in [o for o, j in self.jobs.items() if env.protects(o)]:
            del self.jobs[obj]
        for sg in env.task.subgoals:
            open_jobs = sum(1 for j in self.jobs.values() if j.subgoal.key == sg.key)
            missing = sg.count - sat[sg.key] - open_jobs
            if missing <= 0:
                continue
            target = sg.targets[0]
            t_room = env.node_room.get(target)
            placers = self._zone_agent(t_room)
            taken = set(self.jobs)
            candidates = [o for o in env.by_class.get(sg.obj_class, ())
                          if o not in taken and not env.protects(o)
                          and (o in env.holder or self._zone_agent(env.node_room.get(o)))]
            for _ in range(missing):
                best = None
                for o in candidates:
                    if o in env.holder:
                        who, cost = env.holder[o], 0.0
                    else:
                        fetchers = self._zone_agent(env.node_room.get(o))
                        load = {i: sum(1 for j in self.jobs.values() if j.fetcher == i)
                                for i in fetchers}
                        who = min(fetchers, key=lambda i: (load[i], self._cost(i, o)))
                        cost = load[who] * 100 + self._cost(who, o)
                    if best is None or cost < best[0]:
                        best = (cost, o, who)
                if best is None or not placers:
                    break
                _, o, who = best
                candidates.remove(o)
                placer = who if who in placers else placers[0]
                self.jobs[o] = _Job(o, sg, target, who, placer)

    def _cost(self, agent: int, obj: int) -> float:
        env = self.env
        room_change = 0.0 if env.node_room.get(obj) == env.room[agent] else 10.0
        return room_change + env.distance(env.pos[agent], env.node_pos[obj])

    def act(self) -> list[Action]:
        """Return one action per agent for the current step."""
        self._assign()
        actions = [self._next(i) for i in range(self.env.n)]
        # one agent per contended target and step: two agents opening one container (both
        # fetching from it) would be a same-step conflict; the later one waits a step
        claimed: set[int] = set()
        for i, a in enumerate(actions):
            if a.name in self.env.conflicting and isinstance(a.obj, int):
                if a.obj in claimed:
                    actions[i] = WAIT
                claimed.add(a.obj)
        # a giver at the door hands over only when the placer receives this step
        for i, a in enumerate(actions):
            if a.name == "handover" and actions[a.to_agent].name not in ("receive", "wait"):
                actions[i] = WAIT
        return actions

    def _goto(self, i: int, nid: int) -> Action | None:
        """Return the move that brings agent i within reach of node nid, or None if there."""
        env = self.env
        room = env.node_room.get(nid)
        if room is not None and (room != env.room[i] or not env.is_visible(i, nid)):
            return Action("walk_to_room", room=room)  # the room's centre sees the whole room
        if env.distance(env.pos[i], env.node_pos[nid]) > REACH:
            return Action("walk", obj=nid)
        return None

    def _enclosing_closed(self, nid: int) -> int | None:
        env = self.env
        for rel, parent in env.parents.get(nid, ()):
            if rel == "INSIDE" and not env.open_state.get(parent, True):
                return parent
            up = self._enclosing_closed(parent)
            if up is not None:
                return up
        return None

    def _next(self, i: int) -> Action:
        env = self.env
        held = env.held[i]
        mine_to_place = [o for o in held if o in self.jobs and self.jobs[o].placer == i]
        to_hand = [o for o in held if o in self.jobs and self.jobs[o].placer != i]
        pending = [j for j in self.jobs.values() if j.fetcher == i and j.obj not in env.holder]
        # open closed target containers first (a free hand is needed to open)
        for j in self.jobs.values():
            if j.placer == i and j.subgoal.relation == "inside" and not env.open_state.get(
                    j.target, True) and len(held) < 2:
                return self._goto(i, j.target) or Action("open", obj=j.target)
        # fetch a second object on the same trip when it is in this room
        if len(held) == 1 and pending and not to_hand:
            near = [j for j in pending if env.node_room.get(j.obj) == env.room[i]]
            if near:
                return self._fetch(i, near[0].obj)
        if to_hand and (len(held) == 2 or not pending):
            job = self.jobs[to_hand[0]]
            door = self._handover_door(i, job.placer)
            if env.distance(env.pos[i], env.node_pos[door]) > 0.01:
                return Action("walk_to_door", target=door)
            return Action("handover", obj=to_hand[0], to_agent=job.placer)
        if mine_to_place and (len(held) == 2 or not pending):
            job = self.jobs[mine_to_place[0]]
            step = self._goto(i, job.target)
            if step:
                return step
            return Action("put_in" if job.subgoal.relation == "inside" else "put_on",
                          obj=job.obj, target=job.target)
        if pending and len(held) < 2:
            pending.sort(key=lambda j: self._cost(i, j.obj))
            return self._fetch(i, pending[0].obj)
        # a placer waits at the handover door for objects coming its way
        incoming = [j for j in self.jobs.values() if j.placer == i and j.fetcher != i]
        if incoming and len(held) < 2:
            door = self._handover_door(incoming[0].fetcher, i)
            if env.distance(env.pos[i], env.node_pos[door]) > 0.01:
                return Action("walk_to_door", target=door)
            return Action("receive")
        return WAIT

    def _fetch(self, i: int, obj: int) -> Action:
        box = self._enclosing_closed(obj)
        if box is not None:
            return self._goto(i, box) or Action("open", obj=box)
        return self._goto(i, obj) or Action("grab", obj=obj)

    def _handover_door(self, giver: int, receiver: int) -> int:
        env = self.env
        for d in env.task.handover_doors:
            pair = env.scene.doors.get(d)
            if pair and set(pair) & env.allowed[giver] and set(pair) & env.allowed[receiver]:
                return d
        for d, pair in env.scene.doors.items():
            if set(pair) & env.allowed[giver] and set(pair) & env.allowed[receiver]:
                return d
        raise ValueError(f"no door joins the zones of agents {giver} and {receiver}")
