"""Planners for the construct suite: rule-based central (C0) and decentralized (with and
without broadcast), the oracle, and model-driven versions choosing from stable action menus.

Rule-based decentralized planners see the scene (every object, its place and state) but not
what teammates intend, unless teammates broadcast it: that is where their contention comes
from. The central planner picks one action for one agent per decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from coordbench.agents.team.claims import free_for
from coordbench.agents.team.dials import Dials, Faults
from coordbench.agents.team.protocols import Message
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import REACH, HouseholdEnv
from coordbench.envs.household.menu import catalog, construct_nodes


def _near(env: HouseholdEnv, i: int, nid: int) -> bool:
    return env.distance(env.pos[i], env.node_pos[nid]) <= REACH


def _go(env: HouseholdEnv, i: int, nid: int, then: Action) -> Action:
    return then if _near(env, i, nid) else Action("walk", obj=nid)


def _on(env: HouseholdEnv, item: int, base: int) -> bool:
    return any(p == base for _, p in env.parents.get(item, ()))


@dataclass
class RuleAgent:
    """One decentralized rule-based agent; `claims` holds teammates' broadcast intents."""

    agent: int
    info: dict[str, Any]
    comm: bool
    claims: dict[int, int] = field(default_factory=dict)  # object -> teammate
    intent: int | None = None
    convention: str = "lower"  # whose claim keeps an object (agents.team.claims.free_for)

    def read(self, messages: list[tuple[int, str]]) -> None:
        """Take teammates' last-round intents ("TAKE <id>") from the broadcast board."""
        self.claims = {}
        for sender, text in messages:
            if sender != self.agent:
                for m in re.findall(r"TAKE (\d+)", text):
                    self.claims[int(m)] = sender

    def message(self) -> str | None:
        """Return this round's broadcast: the object this agent is going for."""
        return f"TAKE {self.intent}" if self.intent is not None else None

    def decide(self, env: HouseholdEnv) -> Action | None:
        """Return this agent's action from the shared snapshot (None: nothing to do)."""
        self.intent = None
        c = self.info["construct"]
        return getattr(self, f"_{c.lower()}")(env)

    def _free(self, env: HouseholdEnv, obj: int) -> bool:
        return obj not in env.holder and (not self.comm or free_for(obj, self.claims,
                                                                    self.agent,
                                                                    self.convention))

    def _deliver(self, env: HouseholdEnv, items: list[int], targets: dict[int, int],
                 relation: str = "put_in") -> Action | None:
        i = self.agent
        held = [h for h in env.held[i] if h in targets]
        if held:
            t = targets[held[0]]
            if not env.open_state.get(t, True):
                return _go(env, i, t, Action("open", obj=t))
            return _go(env, i, t, Action(relation, obj=held[0], target=t))
        todo = [o for o in items if not env.protects(o) and self._free(env, o)]
        if not todo:
            return None
        o = min(todo, key=lambda o: (env.distance(env.pos[i], env.node_pos[o]), o))
        self.intent = o
        return _go(env, i, o, Action("grab", obj=o))

    def _d1(self, env: HouseholdEnv) -> Action | None:
        targets = {int(k): v for k, v in self.info["targets"].items()}
        return self._deliver(env, self.info["items"], targets)

    def _d2(self, env: HouseholdEnv) -> Action | None:
        i, info = self.agent, self.info
        targets = {int(k): v for k, v in info["targets"].items()}
        seq = info.get("container_order") or info["containers"]

        def inside(o: int) -> bool:
            return any(r == "INSIDE" and p == targets[o] for r, p in env.parents.get(o, ()))
        box = next((b for b in seq if not (all(inside(o) for o, t in targets.items() if t == b)
                                           and not env.open_state[b])), None)
        if box is None:
            return None
        mine = [o for o in (info.get("order") or info["items"]) if targets[o] == box]
        todo = [o for o in mine if not inside(o)]
        held = [h for h in env.held[i] if h in targets]
        if held:
            if not env.open_state[box]:
                return _go(env, i, box, Action("open", obj=box))
            return _go(env, i, box, Action("put_in", obj=held[0], target=box))
        if not todo:
            return _go(env, i, box, Action("close", obj=box))
        if not env.open_state[box] and (not self.comm or i == 0):
            self.intent = box
            return _go(env, i, box, Action("open", obj=box))
        if info.get("order"):
            todo = todo[:1]  # the next item in the required order
        free = [o for o in todo if self._free(env, o)]
        if not free:
            return None
        o = free[0]
        self.intent = o
        return _go(env, i, o, Action("grab", obj=o))

    def _d3(self, env: HouseholdEnv) -> Action | None:
        i, knife = self.agent, self.info["knife"]
        item = self.info["items"][i]
        holding = knife in env.held[i]
        if env.has_state(item, "SLICED"):
            return Action("drop", obj=knife) if holding else None
        if holding:
            return _go(env, i, item, Action("slice", obj=item))
        if knife in env.holder:
            return None  # someone has the knife: nothing useful to do this round
        if self.comm and knife in self.claims and self.claims[knife] < i:
            return None
        self.intent = knife
        return _go(env, i, knife, Action("grab", obj=knife))

    def _d4(self, env: HouseholdEnv) -> Action | None:
        i, info = self.agent, self.info
        role = info["roles"][i]
        buffers, target, cap = info["buffers"], info["target"], info["capacity"]
        src = {"producer": None, "carrier": buffers[0], "consumer": buffers[-1]}[role]
        dst = {"producer": buffers[0], "carrier": buffers[-1], "consumer": target}[role]
        held = env.held[i]
        if held:
            if dst == target:
                if not env.open_state.get(target, True):
                    return _go(env, i, target, Action("open", obj=target))
                return _go(env, i, target, Action("put_in", obj=held[0], target=target))
            if env.buffer_load(dst) >= cap:
                return Action("wait")
            return _go(env, i, dst, Action("put_on", obj=held[0], target=dst))
        if src is None:
            todo = [o for o in info["items"] if _on(env, o, info["source"])
                    and self._free(env, o)]
        else:
            todo = [o for o in info["items"] if _on(env, o, src) and self._free(env, o)]
        if todo:
            self.intent = todo[0]
            return _go(env, i, todo[0], Action("grab", obj=todo[0]))
        if any(not env.protects(o) and o not in env.holder for o in info["items"]):
            return _go(env, i, src if src is not None else dst, Action("wait", obj=src))
        return None


# the dials a construct rule planner can fail by (it sees the whole state each step, so there
# is nothing for a bounded memory to forget)
RULE_DIALS = ("perception", "hallucination", "message_loss", "protocol_violation",
              "message_cost", "fail_at")


def misperceived(action: Action | None, info: dict[str, Any], faults: Faults | None,
                 t: int) -> Action | None:
    """Return `action`, or where the perception dial strikes the same action on another of
    the instance's objects of the same kind (items, containers, buffers; the knife is taken
    for an item)."""
    if action is None or faults is None or action.obj is None \
            or not faults.hit("perception", t, action.name, action.obj):
        return action
    kinds = [list(info.get("items", [])), list(info.get("containers", [])),
             list(info.get("buffers", []))]
    same = next((k for k in kinds if action.obj in k), kinds[0])
    pool = sorted(set(same) - {action.obj})
    if not pool:
        return action
    return replace(action, obj=faults.pick(pool, "perception", t, action.obj))


# -- stable action menus (for model-driven planners): envs.household.menu over the instance's
# construct nodes
def menu_catalog(env: HouseholdEnv, info: dict[str, Any]) -> list[tuple[int, Action]]:
    """Return every (agent, action) an instance can ever offer, in a fixed order; an entry's
    index is its id for the whole episode."""
    return catalog(env, construct_nodes(info))


@dataclass
class StepChoice:
    """A construct team's choices for one step: an action or None per agent, why a
    model-driven planner produced none (an agent id -> reason), and the messages of the
    step's communicate phase (teams under a household protocol)."""

    chosen: list[Action | None]
    errors: dict[int, str] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)


class RulePlanners:
    """Rule-based construct team. Central (C0): one decision per step, agents asked in turn
    from after the last one that acted, the first with something to do acts. Decentralized:
    every agent decides from the same snapshot (under decentralized_comm it reads the notes
    its teammates broadcast last step)."""

    name = "rule"

    def __init__(self, planner: str, dials: Dials | None = None, key: str = "") -> None:
        self.planner, self.dials, self.key = planner, dials, key

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`."""
        self.env, self.info = env, info
        self.rules = [RuleAgent(i, info, self.planner == "decentralized_comm")
                      for i in range(env.n)]
        self.board: list[tuple[int, str]] = []
        self.turn = self.t = 0
        # one decision-maker per agent, or the central planner (agent 0's draws)
        self.faults = [Faults(self.dials, self.key, i) if self.dials else None
                       for i in range(env.n)]
        self.stopped = [False] * env.n

    def _believes_done(self, i: int) -> bool:
        """Return whether decision-maker `i` has (falsely) concluded the work is done."""
        f = self.faults[i]
        if not self.stopped[i] and f is not None and f.hit("hallucination", self.t):
            self.stopped[i] = True
        return self.stopped[i]

    def act(self, images: dict[int, str]) -> StepChoice:
        """Return this step's choices."""
        n, t = self.env.n, self.t
        self.t += 1
        chosen: list[Action | None] = [None] * n
        errors: dict[int, str] = {}
        if self.planner == "central":
            f = self.faults[0]
            if self._believes_done(0):
                return StepChoice(chosen)
            why = f.violation(t) if f is not None else None
            if why is not None:
                return StepChoice(chosen, {0: why})
            for k in range(n):
                i = (self.turn + k) % n
                pick = self.rules[i].decide(self.env)
                if pick is not None and pick.name != "wait":
                    chosen[i] = misperceived(pick, self.info, f, t)
                    self.turn = i + 1
                    break
            return StepChoice(chosen)
        for i, r in enumerate(self.rules):
            f = self.faults[i]
            board = self.board
            if f is not None and self.dials.message_loss:  # type: ignore[union-attr]
                board = [(m.sender, m.content) for m in f.heard(
                    [Message(s, None, c, "broadcast") for s, c in self.board], t)]
            r.read(board)
            if self._believes_done(i):
                r.intent = None  # it stopped: it no longer claims anything
                continue
            why = f.violation(t) if f is not None else None
            if why is not None:
                r.intent = None
                errors[i] = why
                continue
            chosen[i] = misperceived(r.decide(self.env), self.info, f, t)
        return StepChoice(chosen, errors)

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Return the notes the agents broadcast after this step (decentralized_comm); the
        rules read the environment, not the step's `records`."""
        if self.planner != "decentralized_comm":
            return []
        self.board = [(r.agent, r.message()) for r in self.rules if r.message()]
        return self.board
