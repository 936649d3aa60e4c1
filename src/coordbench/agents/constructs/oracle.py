"""Oracle reference plans for the construct families, and the reference numbers they give.

Privileged, reactive controllers (they read the true state each step): D1 balanced delivery
lines from an exact min-max assignment, D2 open-load-close (in order where required), D3
serialized ownership of the one knife, D4 a paced producer-buffer-consumer relay that never
overfills the buffer and never waits at an empty one (an idle consumer repositions instead).
`None` for an agent means it does nothing that step (no action is recorded).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import REACH, HouseholdEnv

from .planners import StepChoice

PAIR, SINGLE = 7, 4  # D1 skill abstraction: walk-grab-walk-grab-walk-put-put / walk-grab-walk-put


def delivery_cost(items_by_target: dict[int, int]) -> int:
    """Return the D1 abstraction's steps for one agent: 7 per pair, 4 per single, per target."""
    return sum(PAIR * (k // 2) + SINGLE * (k % 2) for k in items_by_target.values())


def optimal_assignment(targets: list[int], n_agents: int) -> tuple[int, list[int]]:
    """Return (M*, agent of each item) minimising the largest per-agent cost (exact search)."""
    best: tuple[int, list[int]] | None = None
    for combo in itertools.product(range(n_agents), repeat=len(targets)):
        if combo and combo[0] != 0:  # agents are interchangeable: fix the first item's agent
            break
        loads: list[dict[int, int]] = [{} for _ in range(n_agents)]
        for item_target, agent in zip(targets, combo, strict=True):
            loads[agent][item_target] = loads[agent].get(item_target, 0) + 1
        cost = max(delivery_cost(ld) for ld in loads)
        if best is None or cost < best[0]:
            best = (cost, list(combo))
    assert best is not None
    return best


@dataclass
class ConstructOracle:
    """Chooses every agent's next action for a construct instance."""

    env: HouseholdEnv
    info: dict[str, Any]
    serial: bool = False  # central mode: only one proposed action runs per step
    scripts: dict[int, list[Action]] = field(default_factory=dict)
    m_star: int | None = None

    def __post_init__(self) -> None:
        c = self.info["construct"]
        if c == "D1":
            items = self.info["items"]
            targets = [self.info["targets"][str(i)] for i in items]
            self.m_star, who = optimal_assignment(targets, self.env.n)
            for agent in range(self.env.n):
                mine = [(i, t) for i, t, a in zip(items, targets, who, strict=True) if a == agent]
                script: list[Action] = []
                by_target: dict[int, list[int]] = {}
                for i, t in mine:
                    by_target.setdefault(t, []).append(i)
                for t, its in by_target.items():
                    for k in range(0, len(its), 2):
                        batch = its[k:k + 2]
                        for i in batch:
                            script += [Action("walk", obj=i), Action("grab", obj=i)]
                        script.append(Action("walk", obj=t))
                        script += [Action("put_in", obj=i, target=t) for i in batch]
                self.scripts[agent] = script

    # -- helpers ------------------------------------------------------------------------------
    def _near(self, i: int, nid: int) -> bool:
        env = self.env
        return env.distance(env.pos[i], env.node_pos[nid]) <= REACH

    def _go(self, i: int, nid: int, then: Action) -> Action:
        return then if self._near(i, nid) else Action("walk", obj=nid)

    def act(self) -> list[Action | None]:
        """Return each agent's action for this step (None: the agent does nothing)."""
        c = self.info["construct"]
        if c == "D1":  # scripted lines: peek now, `executed` advances them
            return [self.scripts[i][0] if self.scripts[i] else None for i in range(self.env.n)]
        return getattr(self, f"_{c.lower()}")()

    def executed(self, agent: int) -> None:
        """Record that `agent`'s proposed action was executed (advances scripted lines)."""
        if self.scripts.get(agent):
            self.scripts[agent].pop(0)

    # -- D2: open, load (in order), close -----------------------------------------------------
    def _d2(self) -> list[Action | None]:
        env, info = self.env, self.info
        boxes = info["containers"]
        seq = info.get("container_order") or boxes
        # the container being worked on: the first whose items are not all inside and closed
        def inside(i: int) -> bool:
            return any(r == "INSIDE" and p == info["targets"][str(i)]
                       for r, p in env.parents.get(i, ()))
        active = next((b for b in seq if not (all(inside(i) for i in info["items"]
                                                  if info["targets"][str(i)] == b)
                                              and not env.open_state[b])), None)
        out: list[Action | None] = [None] * env.n
        if active is None:
            return out
        items = [i for i in info["items"] if info["targets"][str(i)] == active]
        if info.get("order"):
            items = [i for i in info["order"] if i in items]
        todo = [i for i in items if not inside(i)]
        if not env.open_state[active]:
            if not todo:
                return out
            out[0] = self._go(0, active, Action("open", obj=active))
            return out
        if not todo:
            closer = max(range(env.n), key=lambda a: (self._near(a, active), -a))
            out[closer] = self._go(closer, active, Action("close", obj=active))
            return out
        ordered = bool(info.get("order"))
        for k, item in enumerate(todo):
            agent = (items.index(item)) % env.n
            if out[agent] is not None:
                continue
            if item in env.held[agent]:
                if ordered and k > 0:
                    out[agent] = None  # the earlier item goes in first
                else:
                    out[agent] = self._go(agent, active,
                                          Action("put_in", obj=item, target=active))
            elif item not in env.holder:
                out[agent] = self._go(agent, item, Action("grab", obj=item))
        return out

    # -- D3: serialized knife -----------------------------------------------------------------
    def _d3(self) -> list[Action | None]:
        env, info = self.env, self.info
        knife, items = info["knife"], info["items"]
        out: list[Action | None] = [None] * env.n
        turn = next((k for k, it in enumerate(items) if not env.has_state(it, "SLICED")), None)
        holder = env.holder.get(knife)
        if holder is not None and (turn is None or holder != turn):
            out[holder] = Action("drop", obj=knife)  # done: free the knife for the next agent
            return out
        if turn is None:
            return out
        if holder is None:
            out[turn] = self._go(turn, knife, Action("grab", obj=knife))
        else:
            out[turn] = self._go(turn, items[turn], Action("slice", obj=items[turn]))
        return out

    # -- D4: paced relay through buffers --------------------------------------------------------
    def _d4(self) -> list[Action | None]:
        env, info = self.env, self.info
        roles, buffers, target = info["roles"], info["buffers"], info["target"]
        cap = info["capacity"]
        out: list[Action | None] = [None] * env.n
        load = {b: env.buffer_load(b) for b in buffers}
        on = {b: [i for i in info["items"] if any(p == b for _, p in env.parents.get(i, ()))]
              for b in buffers}
        taken: set[int] = set()
        first_consumer = roles.index("consumer")
        for a, role in enumerate(roles):
            held = env.held[a]
            if role == "consumer" and not env.open_state[target] and a == first_consumer:
                out[a] = self._go(a, target, Action("open", obj=target))
                continue
            if role == "consumer":
                src, dst = buffers[-1], target
            elif role == "carrier":
                src, dst = buffers[0], buffers[1]
            else:
                src, dst = None, buffers[0]
            if held:
                if dst == target:
                    out[a] = self._go(a, target, Action("put_in", obj=held[0], target=target))
                elif load[dst] < cap:
                    out[a] = self._go(a, dst, Action("put_on", obj=held[0], target=dst))
                    if out[a].name == "put_on":
                        load[dst] += 1
                else:
                    out[a] = self._reposition(a, dst)
                continue
            if src is None:
                pending = [i for i in info["items"] if i not in env.holder and i not in taken
                           and any(p == info["source"] for _, p in env.parents.get(i, ()))]
            else:
                pending = [i for i in on[src] if i not in taken]
            if pending:
                taken.add(pending[0])
                out[a] = self._go(a, pending[0], Action("grab", obj=pending[0]))
                if src is not None and out[a].name == "grab" and not self.serial:
                    load[src] -= 1  # frees a slot for a later agent in this same step
            elif any(i not in env.holder and not env.protects(i) for i in info["items"]):
                out[a] = self._reposition(a, src if src is not None else dst)
        return out

    def _reposition(self, a: int, nid: int) -> Action:
        """Move to (or stay at) a buffer instead of waiting: the paced relay never idles there."""
        return Action("walk", obj=nid)


class OraclePlanners:
    """The privileged reference team (M*): the oracle's plan, one action per step in turn
    under the central planner, every planned action at once otherwise."""

    name = "oracle"

    def __init__(self, planner: str) -> None:
        self.planner = planner

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`."""
        self.oracle = ConstructOracle(env, info, serial=self.planner == "central")
        self.n = env.n
        self.turn = 0

    def act(self, images: dict[int, str]) -> StepChoice:
        """Return this step's choices."""
        plan = self.oracle.act()
        if self.planner != "central":
            return StepChoice(plan)
        chosen: list[Action | None] = [None] * self.n
        order = [(self.turn + k) % self.n for k in range(self.n)]
        pick = next((i for i in order if plan[i] is not None), None)
        if pick is not None:
            chosen[pick] = plan[pick]
            self.turn = pick + 1
        return StepChoice(chosen)

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Tell the oracle which planned actions ran; the oracle broadcasts nothing."""
        for i in acting:
            self.oracle.executed(i)
        return []
