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
from numba.core import types
from numba.extending import intrinsic

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

# x*x and the release's pow(x, 2.0) (Python's `**`) differ by at most one ULP per square, so a
# squared distance further than this (relative) from a decision edge decides the same way with
# either; only nearer ones are recomputed with pow, which is too slow to call everywhere
NEAR = 1e-12
# rows are split into chunks of at least MIN_CHUNK_ROWS (one for a small batch: its buffers
# are allocated once per call) and at most ROW_CHUNKS of them, each with its own buffers
MIN_CHUNK_ROWS = 32
ROW_CHUNKS = 256
# the exponent the kernels take as their `two` argument: a run-time 2.0 keeps math.pow a call
# of the C library's pow(), where a literal would be folded into x*x
TWO = 2.0


@intrinsic
def _fma(typingctx, a, b, c):
    """Return a*b + c rounded once (LLVM's fma: the instruction, or libm's exact fma)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@njit(cache=True, inline="always")
def _pow2(x: float, two: float) -> float:
    """Return the C library's pow(x, 2.0), calling it only where it can differ from x*x.

    x*x is the correctly rounded square; pow is within 0.52 ULP of the exact square (glibc's
    documented bound), so the two can differ only when the exact square lies within 0.02 ULP
    of a midpoint between neighbouring doubles. fma gives the exact rounding error lo of x*x;
    hi + 1.1*lo moves off hi exactly when |lo| exceeds about 0.455 ULP (sooner at a power of
    two, where the spacing below halves), and only then is pow called: about 9% of inputs.
    """
    hi = x * x
    lo = _fma(x, x, -hi)
    if hi + lo * 1.1 != hi or not (1e-290 < hi < 1e300):
        return math.pow(x, two)
    return hi


@njit(cache=True, inline="always")
def _sq(ax: float, ay: float, bx: float, by: float) -> float:
    """Return the squared distance with x*x (vectorizes; see NEAR)."""
    dx = bx - ax
    dy = by - ay
    return dx * dx + dy * dy


@njit(cache=True, inline="always")
def _sq_release(ax: float, ay: float, bx: float, by: float, two: float) -> float:
    """Return the released code's squared distance, (bx - ax)**2 + (by - ay)**2 with the C
    library's pow (`two` = 2.0 passed in at run time, which numba cannot fold into x*x)."""
    return math.pow(bx - ax, two) + math.pow(by - ay, two)


@njit(cache=True, inline="always")
def _within(ax: float, ay: float, bx: float, by: float, radius: float, two: float) -> bool:
    """Return whether the released code's distance sqrt(dx**2 + dy**2) is below `radius`."""
    s = _sq(ax, ay, bx, by)
    r2 = radius * radius
    if abs(s - r2) <= NEAR * r2:
        s = _sq_release(ax, ay, bx, by, two)
    return math.sqrt(s) < radius


@njit(cache=True, inline="always")
def _arrived(px: float, py: float, tx: float, ty: float, two: float) -> bool:
    """Return whether (px, py) lies within the arrival radius of (tx, ty)."""
    return _within(px, py, tx, ty, ARRIVAL_RADIUS, two)


@njit(cache=True, inline="always")
def _step_toward(x1: float, y1: float, tx: float, ty: float,
                 two: float) -> tuple[float, float, bool]:
    """Return (x, y, arrived): the position one unit step from (x1, y1) toward (tx, ty) by the
    released code's formula, snapped to (tx, ty) on overshoot, and whether it lies within the
    arrival radius of (tx, ty).

    The release computes sqrt(speed**2 / (ratio**2 + 1)) with Python's `**`, which calls the
    C library's pow(); x*x differs from pow(x, 2.0) by one ULP for about 0.08% of inputs, so
    ratio's square here is math.pow(ratio, two) with `two` = 2.0 passed in at run time (numba
    folds a literal 2.0 back to x*x) and the positions agree bit for bit. The speed is 1, whose
    square is exactly 1 either way.
    """
    dy = ty - y1
    dx = tx - x1
    if dy != 0.0:
        ratio = dx / dy
        ndy = math.sqrt(1.0 / (_pow2(ratio, two) + 1.0)) * (-1.0 if dy < 0 else 1.0)
        ndx = abs(ratio * ndy) * (-1.0 if dx < 0 else 1.0)
    else:
        ndy = 0.0
        ndx = -1.0 if dx < 0 else 1.0
    if abs(ndx) > abs(tx - x1) or abs(ndy) > abs(ty - y1):
        x, y = tx, ty
    else:
        x, y = x1 + ndx, y1 + ndy
    return x, y, _arrived(x, y, tx, ty, two)


@njit(cache=True)
def _py_floordiv(x: float, w: float) -> float:
    """Return Python's `x // w` (the floor of the exact quotient; fmod first, so slower)."""
    return x // w


def _step_observe_rows(idx, stepping, pos, target, mode, counter, task_pos, completed, selected,
                       assignee, t, n_done, active, actions, episode_limit,
                       final_actions, rewards, conflicts, forced_idle, unique_assigned, da_pre,
                       da_post, completed_task, terminated, truncated, team_reward, two,
                       masks, with_obs, bin_w, top, obs):
    """For each env b = idx[k]: if `stepping`, advance it by one joint step in place (when
    active); then refresh its masks and, if `with_obs`, its observation row while its state is
    still in cache. Inactive envs are left as they are, masks and observation included; a step
    gives them rewards 0.

    Step outputs (per env b): final_actions[b] after conflict resolution, per-agent rewards[b],
    conflicts[b] (tasks picked by > 1 agent before resolution), forced_idle[b], unique_assigned[b]
    (distinct tasks among final picks), da_pre[b] / da_post[b] (decision-active agents before and
    after the step: no target and >= 2 selectable tasks), completed_task[b, i] (task agent i
    completed, or -1), terminated[b] (all tasks completed), truncated[b] (step count reached
    episode_limit first) and team_reward[b] (the agents' rewards added in agent order from 0.0,
    as the release's sum does; numpy's pairwise sum differs by one ULP from 8 agents on). `two`
    is 2.0 (see `_step_toward`).

    Masks: masks[b, i, a] as in docs/stat.md. Observation: [bins(n*m), modes(n), completed(m),
    selected(m)] with the release's bins of its distance d = sqrt(dx**2 + dy**2): d < 0.5 -> 0;
    d < 1 -> 1; else min(d // w, top) with Python's `//`, which is the floor of the exact
    quotient. The fast pass takes the squares as x*x and floors q = d * (1 / w), which is
    within two ULPs of the exact quotient d / w. Both agree with the release except within a
    hair of an edge: x*x and pow(x, 2.0) differ by an ULP for about 0.08% of inputs, and q can
    land on the wrong side of a whole number only when the exact quotient lies within a few
    ULPs of it. So a distance within NEAR (relative, a thousand times those errors) of 0.5, 1
    or a whole quotient is redone with the release's arithmetic (pow's squares, Python's `//`).
    Such distances are not rare: an agent walking away from the task it completed stands at
    whole distances from it (about 0.2-0.3 redone per env step under random play). The fast
    pass is one branch-free loop the compiler vectorizes; it reads the task coordinates from
    two small per-chunk buffers (x and y apart, in cache) and marks what to redo in a third.
    Rows are split into ROW_CHUNKS chunks, each with its own buffers, because a buffer per
    thread would need numba's get_thread_id, whose cached code crashes when a new process
    loads it, and a buffer per env streams memory (B*n*m floats) where these stay in cache;
    a small batch is one chunk, so its buffers are allocated once per call.

    All of it is one loop body on purpose: a helper taking arrays, inlined or not, costs atomic
    reference-count updates per call and environment, more than the work of a small env. Short
    counting loops are written without branches, which mispredict at these lengths.
    """
    n = target.shape[1]
    m = task_pos.shape[1]
    nm = n * m
    n_rows = idx.shape[0]
    n_chunks = max(1, min(n_rows // MIN_CHUNK_ROWS, ROW_CHUNKS))
    inv_w = 1.0 / bin_w
    for c in prange(n_chunks):  # environments are independent: safe to split
        # the task coordinates of the env at hand, per chunk of rows: cache-resident
        task_x = np.empty(m)
        task_y = np.empty(m)
        redo_at = np.empty(nm, dtype=np.bool_)
        for kk in range(c * n_rows // n_chunks, (c + 1) * n_rows // n_chunks):
            b = idx[kk]
            if stepping:
                if not active[b]:
                    team_reward[b] = 0.0
                    for i in range(n):
                        rewards[b, i] = 0.0
                    continue
                # --- diagnostics before the step
                free = 0
                for j in range(m):
                    free += 1 - (completed[b, j] | selected[b, j])
                idle = 0
                for i in range(n):
                    idle += target[b, i] < 0
                da_pre[b] = idle if free >= 2 else 0
                # --- conflict resolution before anything moves: closest picker keeps it, ties to
                # the lower index
                n_pick = 0
                for i in range(n):
                    final_actions[b, i] = actions[b, i]
                    completed_task[b, i] = -1
                    n_pick += actions[b, i] >= SELECT0
                n_conf = 0
                n_forced = 0
                uniq = n_pick
                if n_pick >= 2:  # one pick or none cannot conflict
                    for i in range(n):
                        a = actions[b, i]
                        if a < SELECT0:
                            continue
                        j = a - SELECT0
                        tx = task_pos[b, j, 0]
                        ty = task_pos[b, j, 1]
                        si = _sq(pos[b, i, 0], pos[b, i, 1], tx, ty)
                        first = True
                        others = False
                        lose = False
                        for k in range(n):
                            if k == i or actions[b, k] != a:
                                continue
                            others = True
                            if k < i:
                                first = False
                            sk = _sq(pos[b, k, 0], pos[b, k, 1], tx, ty)
                            ri = si
                            if abs(sk - si) <= NEAR * max(si, sk):  # the release's squares decide
                                ri = _sq_release(pos[b, i, 0], pos[b, i, 1], tx, ty, two)
                                sk = _sq_release(pos[b, k, 0], pos[b, k, 1], tx, ty, two)
                            di = math.sqrt(ri)
                            dk = math.sqrt(sk)
                            if dk < di or (dk == di and k < i):
                                lose = True
                        if others and first:
                            n_conf += 1
                        if lose:
                            final_actions[b, i] = IDLE
                            n_forced += 1
                    uniq = 0  # distinct final picks
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
                conflicts[b] = n_conf
                forced_idle[b] = n_forced
                unique_assigned[b] = uniq

                n_sel = 0
                for j in range(m):
                    n_sel += selected[b, j]
                tb = t[b]
                decay = DECAY_PER_10_STEPS * (tb // 10)
                # --- agents act in index order
                for i in range(n):
                    a = final_actions[b, i]
                    tgt = target[b, i]
                    r = STEP_PENALTY
                    goal = -1
                    if a == IDLE:
                        if (n_done[b] == m or n_sel == m) and tgt < 0:
                            mode[b, i] = MODE_IDLE
                            r = 0.0
                    elif a == MOVE:
                        movable = tgt >= 0 and not completed[b, tgt]
                        if movable and mode[b, i] == MODE_MOVING and _arrived(
                                pos[b, i, 0], pos[b, i, 1], task_pos[b, tgt, 0],
                                task_pos[b, tgt, 1], two):
                            r = INVALID_MOVE_EXECUTE - decay
                        elif movable and (mode[b, i] == MODE_IDLE or mode[b, i] == MODE_MOVING):
                            goal = tgt
                        else:
                            r = INVALID_MOVE_EXECUTE - decay
                    elif a == EXECUTE:
                        at = tgt >= 0 and _arrived(pos[b, i, 0], pos[b, i, 1], task_pos[b, tgt, 0],
                                                   task_pos[b, tgt, 1], two)
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
                        elif ((mode[b, i] == MODE_IDLE or mode[b, i] == MODE_MOVING)
                              and not completed[b, j]):
                            if not selected[b, j]:
                                n_sel += 1
                            else:
                                # off-mask re-selection of an assigned task (the released code's
                                # legacy branch): the old assignee keeps its target if it is near
                                old = assignee[b, j]
                                if old >= 0 and not _within(pos[b, old, 0], pos[b, old, 1],
                                                            task_pos[b, j, 0], task_pos[b, j, 1],
                                                            STEAL_RADIUS, two):
                                    target[b, old] = -1
                                    mode[b, old] = MODE_IDLE
                                    counter[b, old] = EXECUTE_STEPS
                            # commit, mark selected, and move one step at once
                            # (research/stat.md 1.5)
                            target[b, i] = j
                            selected[b, j] = True
                            assignee[b, j] = i
                            goal = j
                        else:
                            r = INVALID_SELECT - decay
                    if goal >= 0:  # a valid MOVE or SELECT: one unit step toward the goal
                        mode[b, i] = MODE_MOVING
                        x, y, arrived = _step_toward(pos[b, i, 0], pos[b, i, 1],
                                                     task_pos[b, goal, 0], task_pos[b, goal, 1],
                                                     two)
                        pos[b, i, 0], pos[b, i, 1] = x, y
                        if arrived:
                            counter[b, i] = EXECUTE_STEPS - 1
                    rewards[b, i] = r
                total = 0.0
                for i in range(n):
                    total += rewards[b, i]
                team_reward[b] = total
                t[b] = tb + 1
                terminated[b] = n_done[b] == m
                truncated[b] = (not terminated[b]) and t[b] >= episode_limit

            # --- masks (and the decision-active count after the step)
            free = 0
            for j in range(m):
                free += 1 - (completed[b, j] | selected[b, j])
            idle = 0
            for i in range(n):
                tgt = target[b, i]
                idle += tgt < 0
                masks[b, i, IDLE] = tgt < 0 and free == 0
                if tgt >= 0:
                    at = _arrived(pos[b, i, 0], pos[b, i, 1], task_pos[b, tgt, 0],
                                  task_pos[b, tgt, 1], two)
                    masks[b, i, MOVE] = not at
                    masks[b, i, EXECUTE] = at
                    for j in range(m):
                        masks[b, i, SELECT0 + j] = False
                else:
                    masks[b, i, MOVE] = False
                    masks[b, i, EXECUTE] = False
                    for j in range(m):
                        masks[b, i, SELECT0 + j] = not (completed[b, j] | selected[b, j])
            if stepping:
                da_post[b] = idle if free >= 2 else 0

            # --- observation
            if with_obs:
                for j in range(m):  # x and y apart, so that the loop below vectorizes
                    task_x[j] = task_pos[b, j, 0]
                    task_y[j] = task_pos[b, j, 1]
                redo_any = 0
                for i in range(n):
                    px = pos[b, i, 0]
                    py = pos[b, i, 1]
                    for j in range(m):
                        dx = task_x[j] - px
                        dy = task_y[j] - py
                        d = math.sqrt(dx * dx + dy * dy)
                        q = d * inv_w
                        f = np.floor(q)
                        redo = ((abs(q - np.floor(q + 0.5)) <= NEAR * q) & (q >= 0.5)
                                | (abs(d - 1.0) <= NEAR) | (abs(d - 0.5) <= NEAR))
                        redo_any += 1 if redo else 0
                        redo_at[i * m + j] = redo
                        v = f if f < top else top
                        v = v if d >= 1.0 else 1.0
                        obs[b, i * m + j] = v if d >= 0.5 else 0.0
                if redo_any:  # the release's own arithmetic decides these
                    for e in range(nm):
                        if redo_at[e]:
                            i = e // m
                            j = e - i * m
                            d = math.sqrt(_sq_release(pos[b, i, 0], pos[b, i, 1], task_x[j],
                                                      task_y[j], two))
                            obs[b, e] = (0.0 if d < 0.5 else 1.0 if d < 1.0 else
                                         min(_py_floordiv(d, bin_w), top))
                for i in range(n):
                    obs[b, nm + i] = mode[b, i]
                for j in range(m):  # one array per loop: interleaved, these run 5x slower
                    obs[b, nm + n + j] = completed[b, j]
                for j in range(m):
                    obs[b, nm + n + m + j] = selected[b, j]


# Compiled twice: serially (small batches, where thread dispatch costs more than it saves) and
# split over numba's threads (large batches). Rows never share state.
step_kernel = njit(cache=True)(_step_observe_rows)
step_kernel_parallel = njit(cache=True, parallel=True)(_step_observe_rows)


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
def forced_actions_kernel(pos, target, task_pos, completed, selected, out, free_mask, two):
    """Fill out[B, n] with each agent's only valid action, or -1 for decision agents (no target,
    a task to pick); set free_mask[B, m] to the selectable tasks (`two` = 2.0, see _sq_release).
    Returns nothing."""
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
            tgt = target[b, i]
            if tgt >= 0:
                at = _arrived(pos[b, i, 0], pos[b, i, 1], task_pos[b, tgt, 0], task_pos[b, tgt, 1],
                              two)
                out[b, i] = EXECUTE if at else MOVE
            elif free == 0:
                out[b, i] = IDLE
            else:
                out[b, i] = -1


@njit(cache=True)
def random_valid_kernel(pos, target, task_pos, completed, selected, u, out, two):
    """Write a uniformly random valid action per agent into out[B, n], using uniforms u[B, n]."""
    B, n = target.shape
    m = task_pos.shape[1]
    free_mask = np.empty((B, m), dtype=np.bool_)
    forced_actions_kernel(pos, target, task_pos, completed, selected, out, free_mask, two)
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
