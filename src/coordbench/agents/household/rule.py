"""Rule-based household minds: see only their own observation and the messages they receive.

Each mind remembers what it has seen (object, class, room), which rooms it explored and which
containers it opened, and what teammates said. Its act phase: place what it holds (or, in a
sequential task, bring it to the handover door), else fetch the object it has claimed, else
claim the nearest needed object that no teammate is known to have claimed, else explore (rooms
named by the goal's location hints first, then closed containers), else wait.

What a prior gives, a mind uses: location hints send it to the hinted rooms first (a false
hint of the noisy prior costs it the walk), and appearance descriptions let it tell look-alike
classes apart. Without the goal class's description (no_appearance, none), a mind takes an
object of a look-alike class (`LOOKALIKES`: wine glass and water glass, juice and wine, ...)
for the goal class with probability `CONFUSION`, drawn once per (case seed, agent, object), as
an agent that sees images would. It learns the truth on picking the object up: it puts it back
where it was (a wrong grab, then a correction), says so ("CORRECTION 471 is waterglass"), and
looks on.

With `faults` (`agents.team.dials`), a mind fails as its dials say: it misreads a seen object's
class or room, believes its claimed object placed and declares the task done (saying DONE
about it), misses teammates' messages, forgets what it saw or heard more than k steps ago, or
produces a decision that cannot be parsed. Without faults (or with every dial at 0) nothing
is drawn and it plays exactly as described above.

Messages are short token lists ("CLAIM 471:pudding; AT kitchen"), so other rule minds can read
them. Without communication a mind cannot know its teammates' claims, which is what produces
duplicate grabs and conflicts; in sequential tasks it cannot know when the receiver is at the
door, so it tries the handover and fails until the receiver happens to be there.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from coordbench.envs.household.actions import WAIT, Action
from coordbench.envs.household.engine import REACH
from coordbench.envs.household.observe import GoalStatus, Observation

from ..team.dials import Faults
from ..team.protocols import Decision, Message

STORAGE = frozenset({"fridge", "stove", "dishwasher", "microwave", "cabinet", "kitchencabinet",
                     "bookshelf", "nightstand", "closet", "desk", "bathroomcabinet"})
_TOKEN = re.compile(r"(CLAIM|HOLD|SEEN|DONE|AT|DOOR|RECEIVING|ASSIGN|STANDING|CORRECTION|"
                    r"MISSING)"
                    r"\s+([^;]+)")
# classes that look alike in the renders (the catalog's appearance texts tell them apart)
_PAIRS = (("waterglass", "wineglass"), ("juice", "wine"), ("cupcake", "pudding"),
          ("pancake", "poundcake"), ("cellphone", "remotecontrol"), ("magazine", "book"),
          ("toothbrush", "toothpaste"), ("mug", "waterglass"), ("mug", "coffeepot"),
          ("mouse", "barsoap"), ("apple", "toy"), ("magazine", "plate"),
          ("cutleryfork", "toothbrush"), ("book", "boardgame"), ("keyboard", "towel"))
LOOKALIKES: dict[str, frozenset[str]] = {
    c: frozenset(b if a == c else a for a, b in _PAIRS if c in (a, b))
    for pair in _PAIRS for c in pair}
CONFUSION = 0.5  # chance an undescribed look-alike is taken for the goal class


@dataclass
class RuleMind:
    """A rule-based team member (see the module docstring)."""

    agent: int
    comm: bool = True
    seed: int = 0  # the case seed: which look-alikes fool this mind
    known: dict[int, tuple[str, int]] = field(default_factory=dict)  # obj -> (class, room)
    explored: set[int] = field(default_factory=set)
    searched: set[int] = field(default_factory=set)  # rooms whose storage we have opened
    opened: set[int] = field(default_factory=set)
    gone: set[int] = field(default_factory=set)  # objects no longer available
    claim: int | None = None
    claims_of: dict[int, set[int]] = field(default_factory=dict)  # agent -> its latest claims
    order: str | None = None  # the leader's instruction for this step
    receiver_ready: bool = False
    giver_waiting: int | None = None  # door where a giver waits with an object
    idle_at_door: bool = False
    revealed: set[int] = field(default_factory=set)  # misidentified objects, seen up close
    origin: dict[int, tuple[str, int]] = field(default_factory=dict)  # obj -> (relation, on)
    corrections: list[str] = field(default_factory=list)  # to say in the next message
    faults: Faults | None = None  # injected failures (agents.team.dials); None: none
    _last_step: int = -1
    _last_action: Action | None = None
    _stamps: dict[str, dict[Any, int]] = field(default_factory=dict)

    @property
    def others(self) -> dict[int, int]:
        """Return {object: teammate} for what teammates last said they claim or hold."""
        return {o: who for who, objs in self.claims_of.items() for o in objs if who != self.agent}

    # -- perception and messages --------------------------------------------------------------
    def _hear(self, obs: Observation, inbox: list[Message]) -> list[Message]:
        """Return the messages that reach this mind (all of them without message loss)."""
        return inbox if self.faults is None else self.faults.heard(inbox, obs.t)

    def _absorb(self, obs: Observation, inbox: list[Message]) -> None:
        inbox = self._hear(obs, inbox)
        if obs.t != self._last_step:
            self._last_step = obs.t
            self.receiver_ready = False
            self.giver_waiting = None
            self.order = None
        self.explored.add(obs.room)
        needed = {g.obj_class for g in obs.goals}
        placed = {(g.obj_class, t) for g in obs.goals for t in g.targets}
        for o, cls in obs.held:  # up close, an object shows what it really is
            if o in self.known and self.known[o][0] != cls:
                self.revealed.add(o)
                if self.comm:
                    self.corrections.append(f"CORRECTION {o} is {cls}")
                del self.known[o]
                if self.claim == o:
                    self.claim = None
        for s in obs.visible:
            cls, room = self._perceived(obs, s, needed)
            if s.grabbable and s.on is not None:
                self.origin.setdefault(s.id, (s.relation or "ON", s.on))
            if s.grabbable and cls in needed:
                self.known[s.id] = (cls, room)
                if (cls, s.on) in placed:
                    self.gone.add(s.id)  # already counts toward its subgoal
                else:
                    self.gone.discard(s.id)
            if s.is_open:
                self.opened.add(s.id)
        last, out = self._last_action, obs.last_outcome
        if last is not None and out is not None and last.name == "grab" and out.code in (
                "protected", "held_by_other", "not_grabbable", "conflict_lost"):
            self.gone.add(last.obj)  # type: ignore[arg-type]
            if self.claim == last.obj:
                self.claim = None
        # objects we remember here but no longer see are gone (taken or placed)
        here = {s.id for s in obs.visible}
        for obj, (_, room) in list(self.known.items()):
            if room == obs.room and obj not in here and obj not in dict(obs.held):
                near = any(s.container and not s.is_open for s in obs.visible)
                if not near:
                    self.gone.add(obj)
        for msg in inbox:
            if msg.sender == self.agent:
                continue
            self._read(msg)
        if self.faults is not None and self.faults.dials.memory:
            self._forget(obs, inbox)

    def _perceived(self, obs: Observation, s, needed: set[str]) -> tuple[str, int]:
        """Return the (class, room) this mind takes visible object `s` for (see the module
        docstring: an undescribed look-alike of a needed class may fool it, and a
        perception dial misreads an object's class or room)."""
        f = self.faults
        if f is not None and s.grabbable and s.id not in self.revealed \
                and f.hit("perception", obs.t, s.id):
            if f.uniform("perception/room", obs.t, s.id) < 0.5:
                rooms = sorted(r for r in obs.room_names if r != obs.room)
                if rooms:
                    return s.class_name, f.pick(rooms, "perception/room", obs.t, s.id)
            classes = sorted((needed | {s.class_name}) - {s.class_name})
            if classes:
                return f.pick(classes, "perception/class", obs.t, s.id), obs.room
        if s.class_name in needed or s.id in self.revealed or not s.grabbable:
            return s.class_name, obs.room
        for cls in sorted(LOOKALIKES.get(s.class_name, ())):
            if cls in needed and cls not in obs.described and self._fooled(s.id, cls):
                return cls, obs.room
        return s.class_name, obs.room

    def _forget(self, obs: Observation, inbox: list[Message]) -> None:
        """Drop what was last seen or heard more than `memory` steps ago: remembered
        objects, explored, searched and opened places, objects known to be gone, and
        teammates' claims (seeing or hearing of it again refreshes an entry)."""
        k, t = self.faults.dials.memory, obs.t  # type: ignore[union-attr]
        here = {s.id for s in obs.visible}
        senders = {m.sender for m in inbox}
        held = dict(obs.held)
        parts: dict[str, Any] = {"known": self.known, "explored": self.explored,
                                 "searched": self.searched, "opened": self.opened,
                                 "gone": self.gone, "claims": self.claims_of}
        fresh = {"known": here | set(held), "explored": {obs.room}, "opened": here,
                 "gone": here, "claims": senders, "searched": {obs.room}}
        for name, part in parts.items():
            stamps = self._stamps.setdefault(name, {})
            for key in list(part):
                if key not in stamps or key in fresh[name]:
                    stamps[key] = t
                elif t - stamps[key] > k:
                    part.pop(key) if isinstance(part, dict) else part.discard(key)
                    del stamps[key]
            for key in [key for key in stamps if key not in part]:
                del stamps[key]
        if self.claim is not None and self.claim not in self.known:
            self.claim = None

    def _fooled(self, obj: int, cls: str) -> bool:
        draw = zlib.crc32(f"{self.seed}/{self.agent}/{obj}/{cls}".encode()) / 2**32
        return draw < CONFUSION

    def _read(self, msg: Message) -> None:
        if msg.phase == "memory":
            return
        tokens = _TOKEN.findall(msg.content)
        if msg.phase != "assignment":  # a status message replaces the sender's earlier claims
            self.claims_of[msg.sender] = set()
        for kind, arg in tokens:
            arg = arg.strip()
            if kind in ("CLAIM", "HOLD"):
                obj = _int(arg.split(":")[0])
                if obj is not None:
                    self.claims_of.setdefault(msg.sender, set()).add(obj)
            elif kind == "SEEN":
                m = re.match(r"(\d+):(\w+)@(\d+)", arg)
                if m:
                    self.known.setdefault(int(m.group(1)), (m.group(2), int(m.group(3))))
            elif kind == "DONE":
                obj = _int(arg)
                if obj is not None:
                    self.gone.add(obj)
            elif kind == "MISSING":
                obj = _int(arg)
                if obj is not None:
                    self.gone.add(obj)
            elif kind == "CORRECTION":
                obj = _int(arg.split()[0])
                if obj is not None:
                    self.revealed.add(obj)
                    self.known.pop(obj, None)
            elif kind == "DOOR":
                door = _int(arg.split()[0])
                if door is not None and "WAIT" in arg:
                    self.giver_waiting = door
            elif kind == "RECEIVING":
                self.receiver_ready = True
            elif kind == "ASSIGN":
                parts = arg.split()
                if parts and _int(parts[0]) == self.agent:
                    self.order = " ".join(parts[1:])

    # -- communicate phase --------------------------------------------------------------------
    def _status(self, obs: Observation) -> list[str]:
        out = [f"AT {obs.room}"] + self.corrections
        self.corrections = []
        if obs.at_door is not None:
            out.append(f"STANDING {obs.at_door}")
        out += [f"HOLD {o}:{c}" for o, c in obs.held]
        if self.claim is not None and self.claim not in dict(obs.held):
            out.append(f"CLAIM {self.claim}:{self.known.get(self.claim, ('?',))[0]}")
        if obs.held and obs.at_door is not None and self._giving(obs):
            out.append(f"DOOR {obs.at_door} WAIT")
        if obs.at_door is not None and self._wants_to_receive(obs):
            out.append(f"RECEIVING {obs.at_door}")
        held = dict(obs.held)
        for obj, (cls, room) in sorted(self.known.items()):
            if obj not in self.gone and obj not in self.others and obj not in held:
                out.append(f"SEEN {obj}:{cls}@{room}")
        return out

    def speak(self, obs: Observation, phase: str, inbox: list[Message], rnd: int) -> str | None:
        """Return a status message; in discuss, READY unless a claim just had to change."""
        self._absorb(obs, inbox)
        changed = self._choose_claim(obs)
        body = "; ".join(self._status(obs))
        if phase == "discuss":
            return ("CONTINUE; " if changed and rnd == 0 else "READY; ") + body
        return body

    def assign(self, obs: Observation, inbox: list[Message],
               views: dict[int, Observation] | None) -> dict[int, str]:
        """Return one instruction per agent: FETCH an object, EXPLORE a room, or WAIT."""
        inbox = self._hear(obs, inbox)
        self._absorb(obs, inbox)
        if views:  # leader_vision: what every agent sees counts as seen by the leader
            for v in views.values():
                for s in v.visible:
                    if s.grabbable and s.class_name in {g.obj_class for g in obs.goals}:
                        self.known[s.id] = (s.class_name, v.room)
        rooms: dict[int, int] = {self.agent: obs.room}
        standing: dict[int, int] = {}
        busy: set[int] = set()
        need = self._needed(obs)
        held_any = set(dict(obs.held))
        for msg in inbox:
            for kind, arg in _TOKEN.findall(msg.content):
                if kind == "AT":
                    r = _int(arg)
                    if r is not None:
                        rooms[msg.sender] = r
                if kind == "STANDING":
                    door = _int(arg)
                    if door is not None:
                        standing[msg.sender] = door
                if kind == "HOLD":
                    busy.add(msg.sender)
                    obj = _int(arg.split(":")[0])
                    if obj is not None:
                        held_any.add(obj)
                        cls = arg.split(":")[1].strip() if ":" in arg else ""
                        need[cls] = need.get(cls, 0) - 1
        if views:
            rooms.update({j: v.room for j, v in views.items()})
            busy |= {j for j, v in views.items() if len(v.held) == 2}
        free = [o for o, (c, _) in self.known.items()
                if o not in self.gone and o not in held_any and need.get(c, 0) > 0]
        orders: dict[int, str] = {}
        taken: set[int] = set()
        for j in range(obs.n_agents):
            if j in busy:
                orders[j] = f"ASSIGN {j} CONTINUE"
                continue
            options = [o for o in free if o not in taken
                       and need.get(self.known[o][0], 0) > 0]
            if options:
                o = min(options, key=lambda o: (self.known[o][1] != rooms.get(j), o))
                taken.add(o)
                need[self.known[o][0]] -= 1
                orders[j] = f"ASSIGN {j} FETCH {o}"
            else:
                unexplored = [r for r in obs.room_names if r not in self.explored]
                orders[j] = (f"ASSIGN {j} EXPLORE {unexplored[j % len(unexplored)]}"
                             if unexplored else f"ASSIGN {j} WAIT")
        if obs.structure == "sequential" and obs.held and self._giving(obs):
            door = self._door(obs)
            for j in range(obs.n_agents):
                if j != self.agent:
                    orders[j] = f"ASSIGN {j} RECEIVE {door}"
                    # a receiver already at the door follows the order this very step
                    full = sum(1 for m in inbox if m.sender == j for k, _ in
                               _TOKEN.findall(m.content) if k == "HOLD") >= 2
                    if standing.get(j) == door and not full:
                        self.receiver_ready = True
        for j, text in orders.items():
            if j == self.agent:
                self._read(Message(self.agent, (j,), text, "assignment"))
        return orders

    def update_memory(self, obs: Observation, board: dict[str, Any]) -> dict[str, Any]:
        """Read teammates' claims and sightings from the board; write this agent's own."""
        self._absorb(obs, [])
        self.claims_of = {}
        for key, who in board.get("claims", {}).items():
            if who != self.agent:
                self.claims_of.setdefault(who, set()).add(int(key))
        for key, (cls, room) in board.get("seen", {}).items():
            self.known.setdefault(int(key), (cls, room))
        self.gone |= {int(k) for k in board.get("done", [])}
        handover = board.get("handover", {})
        if handover.get("giver_at_door") is not None and handover.get("giver") != self.agent:
            self.giver_waiting = handover["giver_at_door"]
        if handover.get("receiver_ready") and handover.get("receiver") != self.agent:
            self.receiver_ready = True
        self._choose_claim(obs)
        claims = {k: v for k, v in board.get("claims", {}).items() if v != self.agent}
        if self.claim is not None:
            claims[str(self.claim)] = self.agent
        for o, _ in obs.held:
            claims[str(o)] = self.agent
        board["claims"] = claims
        seen = board.setdefault("seen", {})
        for o, (cls, room) in self.known.items():
            if o not in self.gone:
                seen[str(o)] = [cls, room]
        board["done"] = sorted(set(board.get("done", [])) | self.gone)
        board.setdefault("agents", {})[str(self.agent)] = {
            "room": obs.room, "holding": [o for o, _ in obs.held], "door": obs.at_door}
        ho = board.setdefault("handover", {})
        if obs.held and obs.at_door is not None and self._giving(obs):
            ho.update(giver=self.agent, giver_at_door=obs.at_door)
        elif ho.get("giver") == self.agent:
            ho["giver_at_door"] = None
        if self._receiving_role(obs):
            ready = obs.at_door is not None and self._wants_to_receive(obs)
            ho.update(receiver=self.agent, receiver_ready=ready)
        return board

    # -- act phase ----------------------------------------------------------------------------
    def act(self, obs: Observation, inbox: list[Message]) -> Decision:
        """Return this step's action (see the module docstring for the priorities), or,
        where a dial strikes, a decision that cannot be parsed or a false `done`."""
        self._absorb(obs, inbox)
        f = self.faults
        if f is not None:
            why = f.violation(obs.t)
            if why is not None:
                self._last_action = None
                return Decision(None, "", why)
            if not obs.complete and f.hit("hallucination", obs.t):
                if self.claim is not None:  # it believes its object placed, and says so
                    self.gone.add(self.claim)
                    if self.comm:
                        self.corrections.append(f"DONE {self.claim}")
                    self.claim = None
                self._last_action = Action("done")
                return Decision(self._last_action)
        action = self._decide(obs)
        self._last_action = action
        return Decision(action)

    def _decide(self, obs: Observation) -> Action:
        if obs.complete:
            return WAIT
        # 0. put back what turned out to be the wrong object (it blocks a hand)
        for obj, cls in obs.held:
            if obj in self.revealed and self._goal(obs, cls) is None:
                return self._put_back(obs, obj)
        # 1. receive objects coming our way (before placing: the giver is waiting)
        if self._wants_to_receive(obs):
            door = self._door(obs)
            if obs.at_door != door:
                return Action("walk_to_door", target=door)
            return Action("receive")
        # 2. place (or hand over) what we hold
        for obj, cls in obs.held:
            goal = self._goal(obs, cls)
            if goal is None:
                continue
            if goal.target_room in obs.allowed_rooms:
                if len(obs.held) < 2 and self._want_second(obs):
                    break
                step = self._goto(obs, goal.targets[0], goal.target_room)
                if step:
                    return step
                tgt = goal.targets[0]
                if goal.relation == "inside" and not self._is_open(obs, tgt):
                    return Action("open", obj=tgt)
                return Action("put_in" if goal.relation == "inside" else "put_on", obj=obj,
                              target=tgt)
            if not self._want_second(obs) or len(obs.held) == 2:
                return self._hand_over(obs, obj)
        # 3. follow the leader's instruction
        if self.order and self.order.startswith("FETCH"):
            obj = _int(self.order.split()[1])
            if obj is not None and obj in self.known and obj not in self.gone:
                self.claim = obj
        elif self.order and self.order.startswith("EXPLORE") and self.claim is None:
            room = _int(self.order.split()[1])
            if room is not None and room in obs.allowed_rooms and room != obs.room:
                return Action("walk_to_room", room=room)
        # 4. fetch the claimed object
        if self.claim is None:
            self._choose_claim(obs)
        if self.claim is not None and len(obs.held) < 2:
            step = self._fetch(obs, self.claim)
            if step is not None:
                return step
            if self.comm:  # a negative report: it is not where we saw it (or were told)
                self.corrections.append(f"MISSING {self.claim}")
            self.gone.add(self.claim)
            self.claim = None
            self._choose_claim(obs)
            if self.claim is not None:
                step = self._fetch(obs, self.claim)
                if step is not None:
                    return step
        # 5. explore
        step = self._explore(obs)
        if step is not None:
            return step
        if obs.held and self._giving(obs):
            return self._hand_over(obs, obs.held[0][0])
        if self._receiving_role(obs):
            if not self.comm:  # wait where the objects must go, watching for a giver
                goal = next((g for g in obs.goals if g.target_room in obs.allowed_rooms), None)
                step = self._goto(obs, goal.targets[0], goal.target_room) if goal else None
                return step or WAIT
            self.idle_at_door = True
            door = self._door(obs)
            if obs.at_door != door:
                return Action("walk_to_door", target=door)
            return Action("receive")
        return WAIT

    # -- helpers ------------------------------------------------------------------------------
    def _needed(self, obs: Observation) -> dict[str, int]:
        need: dict[str, int] = {}
        for g in obs.goals:
            need[g.obj_class] = need.get(g.obj_class, 0) + g.count - g.done
        for _, cls in obs.held:
            need[cls] = need.get(cls, 0) - 1
        return need

    def _choose_claim(self, obs: Observation) -> bool:
        """Claim the nearest available needed object; return whether the claim changed."""
        before = self.claim
        need = self._needed(obs)
        for o, who in self.others.items():
            if who != self.agent and o in self.known:
                need[self.known[o][0]] = need.get(self.known[o][0], 0) - 1
        if self.claim is not None:
            cls = self.known.get(self.claim, ("?", 0))[0]
            contested = self.others.get(self.claim, self.agent) < self.agent
            if self.claim in self.gone or contested or need.get(cls, 0) + 1 <= 0:
                self.claim = None
        if self.claim is None and len(obs.held) < 2:
            options = [o for o, (cls, room) in self.known.items()
                       if o not in self.gone and o not in self.others and need.get(cls, 0) > 0
                       and room in obs.allowed_rooms and o not in dict(obs.held)]
            if options:
                self.claim = min(options, key=lambda o: (self.known[o][1] != obs.room, o))
        return self.claim != before

    def _goal(self, obs: Observation, cls: str) -> GoalStatus | None:
        for g in obs.goals:
            if g.obj_class == cls and g.done < g.count:
                return g
        return None

    def _want_second(self, obs: Observation) -> bool:
        """Return whether a second needed object is right here to pick up first."""
        if len(obs.held) != 1:
            return False
        need = self._needed(obs)
        return any(s.grabbable and need.get(s.class_name, 0) > 0 and s.id not in self.others
                   and s.id not in self.gone and s.distance <= 6.0 for s in obs.visible
                   if self.claim == s.id)

    def _visible(self, obs: Observation, nid: int):
        return next((s for s in obs.visible if s.id == nid), None)

    def _is_open(self, obs: Observation, nid: int) -> bool:
        s = self._visible(obs, nid)
        return bool(s and s.is_open)

    def _goto(self, obs: Observation, nid: int, room: int | None) -> Action | None:
        seen = self._visible(obs, nid)
        if room is not None and (room != obs.room or seen is None):
            if room == obs.room and seen is None and obs.at_door is None:
                return None  # in the room's centre and still unseen: not here
            return Action("walk_to_room", room=room)
        if seen is None:
            return None
        if seen.distance > REACH:
            return Action("walk", obj=nid)
        return None

    def _fetch(self, obs: Observation, obj: int) -> Action | None:
        cls, room = self.known[obj]
        if room not in obs.allowed_rooms:
            return None
        seen = self._visible(obs, obj)
        if room != obs.room or (seen is None and obs.at_door is not None):
            return Action("walk_to_room", room=room)
        if seen is None:
            return None
        if seen.distance > REACH:
            return Action("walk", obj=obj)
        return Action("grab", obj=obj)

    def _explore(self, obs: Observation) -> Action | None:
        need = self._needed(obs)
        if not any(v > 0 for v in need.values()):
            return None
        hinted = [r for c, rooms in obs.hints.items() if need.get(c, 0) > 0 for r in rooms]
        for r in hinted:
            if r in obs.allowed_rooms and r not in self.explored:
                return Action("walk_to_room", room=r)
        # the furniture the goal text names: open it before searching anywhere else
        spots = {f for c, fs in obs.spots.items() if need.get(c, 0) > 0 for f in fs}
        step = self._open_nearest(obs, lambda s: s.id in spots)
        if step is not None:
            return step
        for r in sorted(obs.allowed_rooms):
            if r not in self.explored:
                return Action("walk_to_room", room=r)
        step = self._open_nearest(obs, lambda s: s.class_name in STORAGE)
        if step is not None:
            return step
        # this room is searched: move on to another room with unopened storage
        self.searched.add(obs.room)
        for r in sorted(obs.allowed_rooms):
            if r not in self.searched:
                return Action("walk_to_room", room=r)
        return None

    def _put_back(self, obs: Observation, obj: int) -> Action:
        """Return the action that puts a misidentified object back where it was found."""
        relation, where = self.origin.get(obj, ("", -1))
        spot = self._visible(obs, where)
        if spot is None or spot.distance > REACH or (relation == "INSIDE" and not spot.is_open):
            return Action("drop", obj=obj)
        return Action("put_in" if relation == "INSIDE" else "put_on", obj=obj, target=where)

    def _open_nearest(self, obs: Observation, which) -> Action | None:
        """Return the walk to, or the opening of, the nearest closed container not opened yet
        for which `which(seen object)` holds (None if none, or no free hand)."""
        boxes = [s for s in obs.visible if s.container and s.is_open is False
                 and s.id not in self.opened and which(s)]
        if not boxes or len(obs.held) >= 2:
            return None
        box = min(boxes, key=lambda s: s.distance)
        if box.distance > REACH:
            return Action("walk", obj=box.id)
        self.opened.add(box.id)
        return Action("open", obj=box.id)

    def _sequential(self, obs: Observation) -> bool:
        return obs.structure == "sequential"

    def _receiving_role(self, obs: Observation) -> bool:
        if not self._sequential(obs):
            return False
        return any(g.target_room in obs.allowed_rooms for g in obs.goals)

    def _giving(self, obs: Observation) -> bool:
        return self._sequential(obs) and any(
            (g := self._goal(obs, c)) is not None and g.target_room not in obs.allowed_rooms
            for _, c in obs.held)

    def _wants_to_receive(self, obs: Observation) -> bool:
        """Return whether this agent should be at the handover door receiving this step."""
        if not self._receiving_role(obs) or len(obs.held) >= 2:
            return False
        if self.order and self.order.startswith("RECEIVE"):
            return True
        if not self.comm:  # no one says when a giver comes: react to seeing one at the door
            return self._door(obs) in obs.mates_at_door.values()
        return self.giver_waiting is not None or (not obs.held and self.idle_at_door)

    def _door(self, obs: Observation) -> int:
        for d in obs.handover_doors:
            for door, a, b in obs.doors:
                if door == d and (a in obs.allowed_rooms or b in obs.allowed_rooms):
                    return d
        return obs.handover_doors[0]

    def _hand_over(self, obs: Observation, obj: int) -> Action:
        door = self._door(obs)
        if obs.at_door != door:
            return Action("walk_to_door", target=door)
        receiver = next(j for j in range(obs.n_agents) if j != self.agent)
        if self.comm and not self.receiver_ready:
            return WAIT  # told the team we wait at the door; hand over once it receives
        return Action("handover", obj=obj, to_agent=receiver)


def _int(text: str) -> int | None:
    try:
        return int(str(text).strip())
    except ValueError:
        return None
