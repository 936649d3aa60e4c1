"""Numba kernels of the STAT dynamics: one joint step of B environments, masks, observations.

Every kernel loops over environments and, inside one environment, over agents in index order,
because the released code processes agents sequentially and later agents see earlier agents'
effects within the same step (an IDLE agent's reward depends on whether a lower-index agent has
just selected the last free task; simultaneous completions are numbered in index order). The
rules are documented one by one in docs/stat.md; comments here point at them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

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
)


@njit(cache=True, inline="always")
def _dist(ax: float, ay: float, bx: float, by: float) -> float:
    return math.sqrt((bx - ax) ** 2 + (by - ay) ** 2)


@njit(cache=True)
def _move_toward(pos, b, i, tx, ty, speed, two):
    """Move agent i one step toward (tx, ty) by the released code's formula; snap on overshoot.

    The release squares with Python's `**`, which calls the C library's pow(); x*x differs
    from pow(x, 2.0) by one ULP for about 0.08% of inputs, so the squares here are
    math.pow(x, two) with `two` = 2.0 passed in at run time (numba folds a literal 2.0 back
    to x*x) and the positions agree bit for bit.
    """
    x1 = pos[b, i, 0]
    y1 = pos[b, i, 1]
    dy = ty - y1
    dx = tx - x1
    if dy != 0.0:
        ratio = dx / dy
        ndy = math.sqrt(math.pow(speed, two) / (math.pow(ratio, two) + 1.0)) * (
            -1.0 if dy < 0 else 1.0)
        ndx = abs(ratio * ndy) * (-1.0 if dx < 0 else 1.0)
    else:
        ndy = 0.0
        ndx = speed * (-1.0 if dx < 0 else 1.0)
    if abs(ndx) > abs(tx - x1) or abs(ndy) > abs(ty - y1):
        pos[b, i, 0] = tx
        pos[b, i, 1] = ty
    else:
        pos[b, i, 0] = x1 + ndx
        pos[b, i, 1] = y1 + ndy


@njit(cache=True, inline="always")
def _at_target(pos, task_pos, target, b, i):
    j = target[b, i]
    if j < 0:
        return False
    return _dist(pos[b, i, 0], pos[b, i, 1], task_pos[b, j, 0], task_pos[b, j, 1]) < ARRIVAL_RADIUS


@njit(cache=True)
def _choose_target(pos, target, mode, counter, task_pos, selected, assignee, b, i, j, two):
    """SELECT(j): commit, mark selected, and move one step immediately (research/stat.md 1.5)."""
    target[b, i] = j
    selected[b, j] = True
    assignee[b, j] = i
    mode[b, i] = MODE_MOVING
    _move_toward(pos, b, i, task_pos[b, j, 0], task_pos[b, j, 1], 1.0, two)
    if _at_target(pos, task_pos, target, b, i):
        counter[b, i] = EXECUTE_STEPS - 1


@njit(cache=True)
def _decision_active(target, completed, selected, b):
    """Return how many agents have more than one valid action (no target, >= 2 selectable tasks)."""
    m = completed.shape[1]
    free = 0
    for j in range(m):
        if not (completed[b, j] or selected[b, j]):
            free += 1
    if free < 2:
        return 0
    count = 0
    for i in range(target.shape[1]):
        if target[b, i] < 0:
            count += 1
    return count


def _step_rows(pos, target, mode, counter, task_pos, completed, selected, assignee, t, n_done,
                active, actions, episode_limit,
                final_actions, rewards, conflicts, forced_idle, unique_assigned, da_pre, da_post,
                completed_task, terminated, truncated, team_reward, two):
    """Advance every active environment by one joint step, in place.

    Outputs (per env b): final_actions[b] after conflict resolution, per-agent rewards[b],
    conflicts[b] (tasks picked by > 1 agent before resolution), forced_idle[b], unique_assigned[b]
    (distinct tasks among final picks), da_pre[b] / da_post[b] (decision-active agents before and
    after the step), completed_task[b, i] (task agent i completed, or -1), terminated[b] (all
    tasks completed), truncated[b] (step count reached episode_limit first) and team_reward[b]
    (the agents' rewards added in agent order from 0.0, as the release's sum does; numpy's
    pairwise sum differs by one ULP from 8 agents on). `two` is 2.0 (see `_move_toward`).
    """
    B, n = actions.shape
    m = task_pos.shape[1]
    for b in prange(B):  # environments are independent: safe to split across threads
        if not active[b]:
            continue
        # --- diagnostics before the step
        da_pre[b] = _decision_active(target, completed, selected, b)
        # --- conflict resolution before anything moves: closest picker keeps it, ties to low index
        n_conf = 0
        n_forced = 0
        for i in range(n):
            a = actions[b, i]
            final_actions[b, i] = a
            completed_task[b, i] = -1
            if a < SELECT0:
                continue
            j = a - SELECT0
            di = _dist(pos[b, i, 0], pos[b, i, 1], task_pos[b, j, 0], task_pos[b, j, 1])
            first = True
            others = False
            lose = False
            for k in range(n):
                if k == i or actions[b, k] != a:
                    continue
                others = True
                if k < i:
                    first = False
                dk = _dist(pos[b, k, 0], pos[b, k, 1], task_pos[b, j, 0], task_pos[b, j, 1])
                if dk < di or (dk == di and k < i):
                    lose = True
            if others and first:
                n_conf += 1
            if lose:
                final_actions[b, i] = IDLE
                n_forced += 1
        conflicts[b] = n_conf
        forced_idle[b] = n_forced
        # distinct final picks
        uniq = 0
        for i in range(n):
            a = final_actions[b, i]
            if a < SELECT0:
                continue
            seen = False
            for k in range(i):
                if final_actions[b, k] == a:
                    seen = True
            if not seen:
                uniq += 1
        unique_assigned[b] = uniq

        n_sel = 0
        for j in range(m):
            if selected[b, j]:
                n_sel += 1
        tb = t[b]
        decay = DECAY_PER_10_STEPS * (tb // 10)
        # --- agents act in index order
        for i in range(n):
            a = final_actions[b, i]
            tgt = target[b, i]
            r = STEP_PENALTY
            if a == IDLE:
                if (n_done[b] == m or n_sel == m) and tgt < 0:
                    mode[b, i] = MODE_IDLE
                    r = 0.0
            elif a == MOVE:
                if mode[b, i] == MODE_IDLE and tgt >= 0 and not completed[b, tgt]:
                    mode[b, i] = MODE_MOVING
                    _move_toward(pos, b, i, task_pos[b, tgt, 0], task_pos[b, tgt, 1], 1.0, two)
                    if _at_target(pos, task_pos, target, b, i):
                        counter[b, i] = EXECUTE_STEPS - 1
                elif mode[b, i] == MODE_MOVING and tgt >= 0 and not completed[b, tgt]:
                    if _at_target(pos, task_pos, target, b, i):
                        r = INVALID_MOVE_EXECUTE - decay
                    else:
                        _move_toward(pos, b, i, task_pos[b, tgt, 0], task_pos[b, tgt, 1], 1.0,
                                     two)
                        if _at_target(pos, task_pos, target, b, i):
                            counter[b, i] = EXECUTE_STEPS - 1
                else:
                    r = INVALID_MOVE_EXECUTE - decay
            elif a == EXECUTE:
                at = _at_target(pos, task_pos, target, b, i)
                if mode[b, i] == MODE_MOVING and at and not completed[b, tgt]:
                    mode[b, i] = MODE_EXECUTING
                    counter[b, i] -= 1
                elif mode[b, i] == MODE_EXECUTING and at and not completed[b, tgt]:
                    if counter[b, i] == 0:
                        completed[b, tgt] = True
                        n_done[b] += 1
                        completed_task[b, i] = tgt
                        target[b, i] = -1
                        mode[b, i] = MODE_IDLE
                        counter[b, i] = EXECUTE_STEPS
                        r = (BASE_REWARD - decay) * (1.0 + COMPLETION_BONUS * n_done[b])
                    else:
                        counter[b, i] -= 1
                else:
                    r = INVALID_MOVE_EXECUTE - decay
            else:  # SELECT(j)
                j = a - SELECT0
                if mode[b, i] == MODE_EXECUTING and tgt >= 0 and not completed[b, tgt]:
                    r = INVALID_SELECT - decay
                elif (mode[b, i] == MODE_IDLE or mode[b, i] == MODE_MOVING) and not completed[b, j]:
                    if not selected[b, j]:
                        n_sel += 1
                    else:
                        # off-mask re-selection of an assigned task (the released code's legacy
                        # branch): the old assignee keeps its target if it is near the task
                        old = assignee[b, j]
                        if old >= 0 and _dist(pos[b, old, 0], pos[b, old, 1], task_pos[b, j, 0],
                                              task_pos[b, j, 1]) >= STEAL_RADIUS:
                            target[b, old] = -1
                            mode[b, old] = MODE_IDLE
                            counter[b, old] = EXECUTE_STEPS
                    _choose_target(pos, target, mode, counter, task_pos, selected, assignee,
                                   b, i, j, two)
                else:
                    r = INVALID_SELECT - decay
            rewards[b, i] = r
        total = 0.0
        for i in range(n):
            total += rewards[b, i]
        team_reward[b] = total
        t[b] = tb + 1
        terminated[b] = n_done[b] == m
        truncated[b] = (not terminated[b]) and t[b] >= episode_limit
        da_post[b] = _decision_active(target, completed, selected, b)


def _mask_rows(idx, pos, target, task_pos, completed, selected, out):
    """Write the valid-action masks of envs idx[k] into out[b, n, 3 + m] (docs/stat.md, Masks)."""
    n = target.shape[1]
    m = task_pos.shape[1]
    for kk in prange(idx.shape[0]):
        b = idx[kk]
        free = 0
        for j in range(m):
            if not (completed[b, j] or selected[b, j]):
                free += 1
        for i in range(n):
            for a in range(SELECT0 + m):
                out[b, i, a] = False
            if target[b, i] >= 0:
                if _at_target(pos, task_pos, target, b, i):
                    out[b, i, EXECUTE] = True
                else:
                    out[b, i, MOVE] = True
            elif free == 0:
                out[b, i, IDLE] = True
            else:
                for j in range(m):
                    if not (completed[b, j] or selected[b, j]):
                        out[b, i, SELECT0 + j] = True


@njit(cache=True, inline="always")
def _py_floordiv(x: float, w: float) -> int:
    """Return Python's `x // w` for x, w > 0, fast away from bin boundaries and exact near them."""
    q = x / w
    f = math.floor(q)
    if q - f > 1e-9 and f + 1.0 - q > 1e-9:
        return int(f)
    return int(x // w)  # Python semantics (exact remainder first); slow, so only near edges


def _obs_rows(idx, pos, mode, task_pos, completed, selected, width, num_bins, out, scratch):
    """Write the global state [bins(n*m), modes(n), completed(m), selected(m)] of envs idx[k].

    Distance bins: d < 0.5 -> 0; d < 1 -> 1; else min(floor(d / (W / num_bins)), num_bins - 1).
    Each agent's row is built in three branch-free passes the compiler vectorizes (distances;
    bins from d * (1 / w) in place of d / w; the distance of each quotient to the nearest bin
    edge). Only where a quotient lies within 1e-9 of an edge can the two floor differently,
    so only such a row is recomputed with Python's exact `//` (`_py_floordiv`). scratch
    (B, 2, m) float64 holds an env's distances and quotient fractions between passes.
    """
    n = mode.shape[1]
    m = task_pos.shape[1]
    bin_w = width / num_bins
    inv_w = 1.0 / bin_w
    top = float(num_bins - 1)
    for kk in prange(idx.shape[0]):  # rows are independent: safe to split across threads
        b = idx[kk]
        dist = scratch[b, 0]
        frac = scratch[b, 1]
        k = 0
        for i in range(n):
            px = pos[b, i, 0]
            py = pos[b, i, 1]
            for j in range(m):
                dist[j] = _dist(px, py, task_pos[b, j, 0], task_pos[b, j, 1])
            for j in range(m):
                d = dist[j]
                q = d * inv_w
                f = math.floor(q)
                v = f if f < top else top
                v = v if d >= 1.0 else 1.0
                out[b, k + j] = v if d >= 0.5 else 0.0
                frac[j] = q - f if d >= 1.0 else 0.5  # below 1 the quotient is not used
            near_edge = 0
            for j in range(m):
                near_edge += (frac[j] <= 1e-9) | (frac[j] >= 1.0 - 1e-9)
            if near_edge:
                for j in range(m):
                    if dist[j] >= 1.0:
                        out[b, k + j] = min(_py_floordiv(dist[j], bin_w), num_bins - 1)
            k += m
        for i in range(n):
            out[b, k] = mode[b, i]
            k += 1
        for j in range(m):
            out[b, k] = 1.0 if completed[b, j] else 0.0
            k += 1
        for j in range(m):
            out[b, k] = 1.0 if selected[b, j] else 0.0
            k += 1


# Each kernel is compiled twice: serially (small batches, where thread dispatch costs more than
# it saves) and split over numba's threads (large batches). Rows never share state.
step_kernel = njit(cache=True)(_step_rows)
step_kernel_parallel = njit(cache=True, parallel=True)(_step_rows)
masks_kernel = njit(cache=True)(_mask_rows)
masks_kernel_parallel = njit(cache=True, parallel=True)(_mask_rows)
obs_kernel = njit(cache=True)(_obs_rows)
obs_kernel_parallel = njit(cache=True, parallel=True)(_obs_rows)


@njit(cache=True)
def reset_kernel(idx, new_task_pos, pos, target, mode, counter, task_pos, completed, selected,
                 assignee, t, n_done):
    """Reset environments idx[k] to layout new_task_pos[k]: agents at (0, 0), nothing selected."""
    n = target.shape[1]
    m = task_pos.shape[1]
    for k in range(idx.shape[0]):
        b = idx[k]
        for i in range(n):
            pos[b, i, 0] = 0.0
            pos[b, i, 1] = 0.0
            target[b, i] = -1
            mode[b, i] = MODE_IDLE
            counter[b, i] = EXECUTE_STEPS
        for j in range(m):
            task_pos[b, j, 0] = new_task_pos[k, j, 0]
            task_pos[b, j, 1] = new_task_pos[k, j, 1]
            completed[b, j] = False
            selected[b, j] = False
            assignee[b, j] = -1
        t[b] = 0
        n_done[b] = 0


@njit(cache=True)
def forced_actions_kernel(pos, target, task_pos, completed, selected, out, free_mask):
    """Fill out[B, n] with each agent's only valid action, or -1 for decision agents (no target,
    a task to pick); set free_mask[B, m] to the selectable tasks. Returns nothing."""
    B, n = target.shape
    m = task_pos.shape[1]
    for b in range(B):
        free = 0
        for j in range(m):
            f = not (completed[b, j] or selected[b, j])
            free_mask[b, j] = f
            if f:
                free += 1
        for i in range(n):
            if target[b, i] >= 0:
                out[b, i] = EXECUTE if _at_target(pos, task_pos, target, b, i) else MOVE
            elif free == 0:
                out[b, i] = IDLE
            else:
                out[b, i] = -1


@njit(cache=True)
def random_valid_kernel(pos, target, task_pos, completed, selected, u, out):
    """Write a uniformly random valid action per agent into out[B, n], using uniforms u[B, n]."""
    B, n = target.shape
    m = task_pos.shape[1]
    free_mask = np.empty((B, m), dtype=np.bool_)
    forced_actions_kernel(pos, target, task_pos, completed, selected, out, free_mask)
    for b in range(B):
        free = 0
        for j in range(m):
            free += free_mask[b, j]
        for i in range(n):
            if out[b, i] != -1:
                continue
            pick = min(int(u[b, i] * free), free - 1)
            for j in range(m):
                if free_mask[b, j]:
                    if pick == 0:
                        out[b, i] = SELECT0 + j
                        break
                    pick -= 1
