"""A plain-Python, one-environment STAT, written rule by rule from docs/stat.md.

It is the executable specification the numba kernels are tested against (same layouts, same
actions, on-mask and off-mask, must give identical states, rewards and diagnostics), and the
per-episode baseline of the speed benchmark: a pure-Python O(n*m) step of the same kind as the
released environment's. It is not used on any fast path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .config import (
    ARRIVAL_RADIUS,
    BASE_REWARD,
    COMPLETION_BONUS,
    DECAY_PER_10_STEPS,
    EXECUTE,
    EXECUTE_STEPS,
    IDLE,
    INVALID_MOVE_EXECUTE,
    INVALID_SELECT,
    MODE_EXECUTING,
    MODE_IDLE,
    MODE_MOVING,
    MOVE,
    SELECT0,
    STEAL_RADIUS,
    STEP_PENALTY,
    StatConfig,
)


class ReferenceStatEnv:
    """One STAT environment with state in Python lists."""

    def __init__(self, cfg: StatConfig) -> None:
        self.cfg = cfg

    def reset(self, task_pos: Sequence[Sequence[float]]) -> None:
        """Start an episode on the given (m, 2) layout, all agents at the origin."""
        n = self.cfg.agents
        self.tasks = [(float(x), float(y)) for x, y in task_pos]
        self.pos = [(0.0, 0.0)] * n
        self.target: list[int | None] = [None] * n
        self.mode = [MODE_IDLE] * n
        self.counter = [EXECUTE_STEPS] * n
        self.completed = [False] * len(self.tasks)
        self.selected = [False] * len(self.tasks)
        self.assignee: list[int | None] = [None] * len(self.tasks)
        self.t = 0
        self.n_done = 0

    # -- geometry -----------------------------------------------------------------------------
    @staticmethod
    def dist(p: tuple[float, float], q: tuple[float, float]) -> float:
        """Return the Euclidean distance."""
        return math.sqrt((q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2)

    def at_target(self, i: int) -> bool:
        """Return whether agent i has a target closer than the arrival radius."""
        j = self.target[i]
        return j is not None and self.dist(self.pos[i], self.tasks[j]) < ARRIVAL_RADIUS

    def move(self, i: int) -> None:
        """Move agent i one unit toward its target by the released code's formula."""
        (x1, y1), (x2, y2) = self.pos[i], self.tasks[self.target[i]]
        dy, dx = y2 - y1, x2 - x1
        if dy != 0:
            ratio = dx / dy
            ndy = math.sqrt(1.0 / (ratio**2 + 1)) * (-1 if dy < 0 else 1)
            ndx = abs(ratio * ndy) * (-1 if dx < 0 else 1)
        else:
            ndy, ndx = 0.0, 1.0 * (-1 if dx < 0 else 1)
        if abs(ndx) > abs(x2 - x1) or abs(ndy) > abs(y2 - y1):
            self.pos[i] = (x2, y2)
        else:
            self.pos[i] = (x1 + ndx, y1 + ndy)

    # -- masks and observation ----------------------------------------------------------------
    def valid_actions(self, i: int) -> list[int]:
        """Return agent i's valid actions: EXECUTE, MOVE, the selectable tasks, or IDLE."""
        if self.target[i] is not None:
            return [EXECUTE] if self.at_target(i) else [MOVE]
        free = [SELECT0 + j for j in range(len(self.tasks))
                if not self.completed[j] and not self.selected[j]]
        return free or [IDLE]

    def observation(self) -> list[float]:
        """Return the global state vector (binned distances, modes, completed, selected)."""
        w = self.cfg.width / self.cfg.num_bins
        bins = []
        for p in self.pos:
            for q in self.tasks:
                d = self.dist(p, q)
                bins.append(0 if d < 0.5 else 1 if d < 1.0 else min(int(d // w),
                                                                     self.cfg.num_bins - 1))
        return ([float(b) for b in bins] + [float(x) for x in self.mode]
                + [float(c) for c in self.completed] + [float(s) for s in self.selected])

    def decision_active(self) -> int:
        """Return the number of agents with more than one valid action."""
        return sum(len(self.valid_actions(i)) > 1 for i in range(self.cfg.agents))

    # -- one joint step -----------------------------------------------------------------------
    def step(self, actions: Sequence[int]) -> dict:
        """Apply the joint action; return rewards, final actions and the step diagnostics."""
        n, m = self.cfg.agents, len(self.tasks)
        info = {"decision_pre": self.decision_active()}
        final = list(actions)
        picks: dict[int, list[tuple[int, float]]] = {}
        for i, a in enumerate(actions):
            if a >= SELECT0:
                picks.setdefault(a - SELECT0, []).append((i, self.dist(self.pos[i],
                                                                       self.tasks[a - SELECT0])))
        for choices in picks.values():
            if len(choices) > 1:
                winner = min(choices, key=lambda c: c[1])[0]
                for i, _ in choices:
                    if i != winner:
                        final[i] = IDLE
        info["conflicts"] = sum(len(c) > 1 for c in picks.values())
        info["forced_idle"] = sum(a != f and f == IDLE for a, f in zip(actions, final, strict=True))
        info["unique_assigned"] = len({a for a in final if a >= SELECT0})
        decay = DECAY_PER_10_STEPS * (self.t // 10)
        rewards = []
        completed_task = [-1] * n
        for i, a in enumerate(final):
            r = STEP_PENALTY
            tgt = self.target[i]
            if a == IDLE:
                if (self.n_done == m or all(self.selected)) and tgt is None:
                    self.mode[i] = MODE_IDLE
                    r = 0.0
            elif a == MOVE:
                live = tgt is not None and not self.completed[tgt]
                if self.mode[i] == MODE_IDLE and live:
                    self.mode[i] = MODE_MOVING
                    self.move(i)
                    if self.at_target(i):
                        self.counter[i] = EXECUTE_STEPS - 1
                elif self.mode[i] == MODE_MOVING and live:
                    if self.at_target(i):
                        r = INVALID_MOVE_EXECUTE - decay
                    else:
                        self.move(i)
                        if self.at_target(i):
                            self.counter[i] = EXECUTE_STEPS - 1
                else:
                    r = INVALID_MOVE_EXECUTE - decay
            elif a == EXECUTE:
                ok = self.at_target(i) and not self.completed[tgt]
                if self.mode[i] == MODE_MOVING and ok:
                    self.mode[i] = MODE_EXECUTING
                    self.counter[i] -= 1
                elif self.mode[i] == MODE_EXECUTING and ok:
                    if self.counter[i] == 0:
                        self.completed[tgt] = True
                        self.n_done += 1
                        completed_task[i] = tgt
                        self.target[i] = None
                        self.mode[i] = MODE_IDLE
                        self.counter[i] = EXECUTE_STEPS
                        r = (BASE_REWARD - decay) * (1 + COMPLETION_BONUS * self.n_done)
                    else:
                        self.counter[i] -= 1
                else:
                    r = INVALID_MOVE_EXECUTE - decay
            else:
                j = a - SELECT0
                if self.mode[i] == MODE_EXECUTING and tgt is not None and not self.completed[tgt]:
                    r = INVALID_SELECT - decay
                elif self.mode[i] in (MODE_IDLE, MODE_MOVING) and not self.completed[j]:
                    old = self.assignee[j]
                    if self.selected[j] and old is not None and self.dist(
                            self.pos[old], self.tasks[j]) >= STEAL_RADIUS:
                        self.target[old] = None
                        self.mode[old] = MODE_IDLE
                        self.counter[old] = EXECUTE_STEPS
                    self.target[i] = j
                    self.selected[j] = True
                    self.assignee[j] = i
                    self.mode[i] = MODE_MOVING
                    self.move(i)
                    if self.at_target(i):
                        self.counter[i] = EXECUTE_STEPS - 1
                else:
                    r = INVALID_SELECT - decay
            rewards.append(r)
        self.t += 1
        info.update(rewards=rewards, final_actions=final, completed_task=completed_task,
                    terminated=self.n_done == m,
                    truncated=self.n_done < m and self.t >= self.cfg.episode_limit,
                    decision_post=self.decision_active())
        return info
