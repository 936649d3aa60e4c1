"""Numba kernels of the household engine: one joint step of B environments, masks, features.

The rules are `engine.HouseholdEnv`'s, one for one (its docstring and docs/household.md list
them); `vec.py` compiles tasks into the integer tables these kernels read and checks that both
engines agree (tests/test_household_vec.py steps them side by side). Inside one environment the
agents act in index order and each sees the effects of the lower-index agents' actions, exactly
as `HouseholdEnv.step` runs them. Node, room and agent references are dense indices into a
task's tables (`vec.HouseholdTables`); -1 means none.

Tables (leading axis: task) and state (leading axis: environment) are passed as the two
namedtuples `vec.Tables` and `vec.State`; a kernel reads the rows of one environment's task.

Every helper that allocates nothing is compiled with `_nrt=False`: without it numba wraps
each call in atomic reference-count updates of every array of the two namedtuples (about
fifty), which made a visibility test cost 1.3 us instead of 12 ns and the masks 50x slower.
Only the per-chunk bodies, which allocate their scratch arrays, keep reference counting.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .hypot import py_hypot

# node flags (`vec.HouseholdTables.flags`)
GRAB, CAN_OPEN, CONTAINER, SURFACE, CUTTABLE, SWITCH, NON_OBJECT, KNIFE, SHARED, EXISTS = (
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# node state bits
ON_BIT, OFF_BIT, SLICED_BIT = 1, 2, 4
# parent relations
REL_ON, REL_INSIDE = 1, 2
# subgoal kinds, and the states a state subgoal asks for
SG_ON, SG_INSIDE, SG_STATE = 1, 2, 3
ST_OPEN, ST_CLOSED, ST_ON, ST_OFF, ST_SLICED = 1, 2, 3, 4, 5
# verbs: the index in actions.ACTIONS (vec.py checks the order); -1 is an unknown verb
WALK, WALK_TO_ROOM, WALK_TO_DOOR, GRAB_V, OPEN_V, CLOSE_V, PUT_ON, PUT_IN, HANDOVER, RECEIVE, \
    WAIT, DONE, SLICE, TOGGLE, DROP = range(15)
# outcome codes: the index in actions.OUTCOMES (vec.py checks the order)
(OK, INVALID, NOT_VISIBLE, OUT_OF_ZONE, TOO_FAR, HANDS_FULL, NOT_HELD, HELD_BY_OTHER,
 NOT_GRABBABLE, WRONG_TARGET, CLOSED, ALREADY_OPEN, ALREADY_CLOSED, PROTECTED, CONFLICT_LOST,
 RECEIVER_NOT_READY, RECEIVER_HANDS_FULL, PROTOCOL_FAILURE, ILLEGAL_SKILL, NO_TOOL,
 NOT_SLICEABLE, ALREADY_SLICED, NO_SWITCH, BUFFER_FULL) = range(24)
# an entry whose object argument names no scene node at all (None or not an int); an int that
# names no node is kept as itself in `raw`, which is what same-step conflicts group by
NO_ID = np.iinfo(np.int64).min

VIEW_RANGE = 6.0
REACH = 1.5
HANDOVER_RANGE = 2.0
MAX_HELD = 2


@njit(cache=True, inline="always")
def _dist(ax: float, ay: float, bx: float, by: float) -> float:
    return py_hypot(ax - bx, ay - by)


@njit(cache=True, _nrt=False)
def hidden(st, b: int, nid: int, stack: np.ndarray, seen: np.ndarray) -> bool:
    """Return whether node `nid` of env `b` is (transitively) inside a closed container.

    The same depth-first walk as `HouseholdEnv.hidden` (a parent already seen is skipped, so
    the answer can depend on the order of a node's relations, and both engines keep it)."""
    top, nseen = 1, 0
    stack[0] = nid
    while top > 0:
        top -= 1
        cur = stack[top]
        for k in range(st.npar[b, cur]):
            parent = st.ppar[b, cur, k]
            dup = False
            for s in range(nseen):
                if seen[s] == parent:
                    dup = True
                    break
            if dup:
                continue
            seen[nseen] = parent
            nseen += 1
            if st.prel[b, cur, k] == REL_INSIDE and st.opened[b, parent] == 0:
                return True
            stack[top] = parent
            top += 1
    return False


@njit(cache=True, _nrt=False)
def shared(tb, st, t: int, b: int, nid: int) -> bool:
    """Return whether node `nid` is a shared station or rests on one."""
    if tb.flags[t, nid] & SHARED:
        return True
    for k in range(st.npar[b, nid]):
        if tb.flags[t, st.ppar[b, nid, k]] & SHARED:
            return True
    return False


@njit(cache=True, _nrt=False)
def visible(tb, st, t: int, b: int, i: int, nid: int, stack, seen) -> bool:
    """Return whether node `nid` is visible to agent `i` of env `b` (`HouseholdEnv.is_visible`)."""
    if tb.flags[t, nid] & NON_OBJECT or st.holder[b, nid] >= 0:
        return False
    if hidden(st, b, nid, stack, seen):
        return False
    if st.node_room[b, nid] != st.room[b, i] and not shared(tb, st, t, b, nid):
        return False
    return _dist(st.pos[b, i, 0], st.pos[b, i, 1], st.npos[b, nid, 0],
                 st.npos[b, nid, 1]) <= VIEW_RANGE


@njit(cache=True, _nrt=False)
def satisfied(tb, st, t: int, b: int, out: np.ndarray) -> int:
    """Fill `out[s]` with how many of subgoal s's objects are in place (capped at its count);
    return the sum over subgoals (`HouseholdEnv.satisfied`)."""
    total = 0
    for s in range(tb.sg_kind.shape[1]):
        kind = tb.sg_kind[t, s]
        k = 0
        if kind == SG_STATE:
            nid = tb.sg_node[t, s]
            want = tb.sg_state[t, s]
            if nid < 0:
                k = 0
            elif want == ST_OPEN or want == ST_CLOSED:
                k = int((tb.flags[t, nid] & CAN_OPEN) != 0
                        and st.opened[b, nid] == (1 if want == ST_OPEN else 0))
            elif want == ST_ON:
                k = int((st.nstate[b, nid] & ON_BIT) != 0)
            elif want == ST_OFF:
                k = int((st.nstate[b, nid] & OFF_BIT) != 0)
            elif want == ST_SLICED:
                k = int((st.nstate[b, nid] & SLICED_BIT) != 0)
        elif kind != 0:
            rel = REL_ON if kind == SG_ON else REL_INSIDE
            for c in range(tb.sg_cand.shape[2]):
                nid = tb.sg_cand[t, s, c]
                if nid < 0:
                    break
                for q in range(st.npar[b, nid]):
                    if st.prel[b, nid, q] == rel and tb.sg_tmask[t, s, st.ppar[b, nid, q]]:
                        k += 1
                        break
            if k > tb.sg_count[t, s]:
                k = tb.sg_count[t, s]
        out[s] = k
        total += k
    return total


@njit(cache=True, _nrt=False)
def _newly_met(tb, st, t: int, b: int, before: np.ndarray, after: np.ndarray) -> np.int64:
    """Return the bitmask of subgoals whose count rose since `before`."""
    satisfied(tb, st, t, b, after)
    bits = np.int64(0)
    for s in range(tb.sg_kind.shape[1]):
        if after[s] > before[s]:
            bits |= np.int64(1) << s
    return bits


@njit(cache=True, _nrt=False)
def _protects(tb, st, t: int, b: int, nid: int) -> bool:
    """Return whether object `nid` currently counts toward an ON/INSIDE subgoal of its class."""
    for s in range(tb.sg_kind.shape[1]):
        kind = tb.sg_kind[t, s]
        if kind != SG_ON and kind != SG_INSIDE or tb.sg_class[t, s] != tb.ncls[t, nid]:
            continue
        rel = REL_ON if kind == SG_ON else REL_INSIDE
        for q in range(st.npar[b, nid]):
            if st.prel[b, nid, q] == rel and tb.sg_tmask[t, s, st.ppar[b, nid, q]]:
                return True
    return False


@njit(cache=True, _nrt=False)
def _buffer_load(st, b: int, nid: int) -> int:
    n = 0
    for x in range(st.npar.shape[1]):
        for q in range(st.npar[b, x]):
            if st.ppar[b, x, q] == nid:
                n += 1
                break
    return n


@njit(cache=True, _nrt=False)
def _from_sources(tb, st, t: int, b: int, i: int, obj: int) -> bool:
    """Return whether agent i's role may take `obj` from where it rests (no sources: yes)."""
    if not tb.has_sources[t, i]:
        return True
    for q in range(st.npar[b, obj]):
        if tb.sources[t, i, st.ppar[b, obj, q]]:
            return True
    return False


@njit(cache=True, _nrt=False)
def _release(st, b: int, i: int, obj: int) -> None:
    """Take `obj` out of agent i's hands, keeping the order of what it still holds."""
    h = st.nheld[b, i]
    for k in range(h):
        if st.held[b, i, k] == obj:
            for m in range(k, h - 1):
                st.held[b, i, m] = st.held[b, i, m + 1]
            st.held[b, i, h - 1] = -1
            st.nheld[b, i] = h - 1
            return


@njit(cache=True, _nrt=False)
def _holds(st, b: int, i: int, obj: int) -> bool:
    for k in range(st.nheld[b, i]):
        if st.held[b, i, k] == obj:
            return True
    return False


@njit(cache=True, _nrt=False)
def _execute(tb, st, t: int, b: int, i: int, e: int, acts: np.ndarray,
             stack, seen, before, after) -> tuple[int, np.int64]:
    """Run agent i's entry e in env b; return (outcome code, subgoals it completed)."""
    none = np.int64(0)
    v = tb.e_verb[t, i, e]
    if v < 0:
        return INVALID, none
    if not tb.role_verbs[t, i, v]:
        return ILLEGAL_SKILL, none
    if v == WAIT or v == RECEIVE or v == DONE:
        return OK, none
    if v == WALK_TO_ROOM:
        r = tb.e_room[t, i, e]
        if r < 0:
            return INVALID, none
        if not tb.allowed[t, i, r]:
            return OUT_OF_ZONE, none
        st.room[b, i] = r
        st.pos[b, i, 0] = tb.room_center[t, r, 0]
        st.pos[b, i, 1] = tb.room_center[t, r, 1]
        st.at_door[b, i] = -1
        return OK, none
    if v == WALK_TO_DOOR:
        door = tb.e_door[t, i, e]
        if door < 0:
            return INVALID, none
        ra, rb = tb.door_a[t, door], tb.door_b[t, door]  # e_door is a door node
        if not (tb.allowed[t, i, ra] or tb.allowed[t, i, rb]):
            return OUT_OF_ZONE, none
        if st.room[b, i] != ra and st.room[b, i] != rb:
            st.room[b, i] = ra if tb.allowed[t, i, ra] else rb
        st.pos[b, i, 0] = st.npos[b, door, 0]
        st.pos[b, i, 1] = st.npos[b, door, 1]
        st.at_door[b, i] = door
        return OK, none
    obj = tb.e_obj[t, i, e]
    if obj < 0:
        return INVALID, none
    if v == HANDOVER:
        to = tb.e_to[t, i, e]
        if to < 0 or to >= st.room.shape[1] or to == i:
            return INVALID, none
        if not _holds(st, b, i, obj):
            return NOT_HELD, none
        tv = tb.e_verb[t, to, acts[to]]
        if tv != RECEIVE and tv != WAIT:
            return RECEIVER_NOT_READY, none
        if _dist(st.pos[b, i, 0], st.pos[b, i, 1], st.pos[b, to, 0],
                 st.pos[b, to, 1]) > HANDOVER_RANGE:
            return TOO_FAR, none
        if st.nheld[b, to] >= MAX_HELD:
            return RECEIVER_HANDS_FULL, none
        _release(st, b, i, obj)
        st.held[b, to, st.nheld[b, to]] = obj
        st.nheld[b, to] += 1
        st.holder[b, obj] = to
        return OK, none
    if v == PUT_ON or v == PUT_IN:
        tgt = tb.e_target[t, i, e]
        if tgt < 0:
            return INVALID, none
        if not _holds(st, b, i, obj):
            return NOT_HELD, none
        room = st.node_room[b, tgt]
        if room >= 0 and not tb.allowed[t, i, room] and not shared(tb, st, t, b, tgt):
            return OUT_OF_ZONE, none
        if not visible(tb, st, t, b, i, tgt, stack, seen):
            return NOT_VISIBLE, none
        if _dist(st.pos[b, i, 0], st.pos[b, i, 1], st.npos[b, tgt, 0],
                 st.npos[b, tgt, 1]) > REACH:
            return TOO_FAR, none
        f = tb.flags[t, tgt]
        if v == PUT_ON and not f & SURFACE:
            return WRONG_TARGET, none
        if v == PUT_IN:
            if not f & CONTAINER:
                return WRONG_TARGET, none
            if st.opened[b, tgt] == 0:
                return CLOSED, none
        cap = tb.cap[t, tgt]
        if cap >= 0 and _buffer_load(st, b, tgt) >= cap:
            return BUFFER_FULL, none
        satisfied(tb, st, t, b, before)
        _release(st, b, i, obj)
        st.holder[b, obj] = -1
        st.npar[b, obj] = 1
        st.prel[b, obj, 0] = REL_ON if v == PUT_ON else REL_INSIDE
        st.ppar[b, obj, 0] = tgt
        st.node_room[b, obj] = st.node_room[b, tgt] if st.node_room[b, tgt] >= 0 \
            else st.room[b, i]
        st.npos[b, obj, 0] = st.npos[b, tgt, 0]
        st.npos[b, obj, 1] = st.npos[b, tgt, 1]
        return OK, _newly_met(tb, st, t, b, before, after)
    if v == DROP:
        if not _holds(st, b, i, obj):
            return NOT_HELD, none
        _release(st, b, i, obj)
        st.holder[b, obj] = -1
        st.npar[b, obj] = 0
        st.node_room[b, obj] = st.room[b, i]
        st.npos[b, obj, 0] = st.pos[b, i, 0]
        st.npos[b, obj, 1] = st.pos[b, i, 1]
        return OK, none
    # walk, grab, open, close, slice, toggle target a node in the world
    room = st.node_room[b, obj]
    if room >= 0 and not tb.allowed[t, i, room] and not shared(tb, st, t, b, obj):
        return OUT_OF_ZONE, none
    who = st.holder[b, obj]
    if who >= 0:
        return (HELD_BY_OTHER if who != i else INVALID), none
    if not visible(tb, st, t, b, i, obj, stack, seen):
        return NOT_VISIBLE, none
    if v == WALK:
        st.pos[b, i, 0] = st.npos[b, obj, 0]
        st.pos[b, i, 1] = st.npos[b, obj, 1]
        st.at_door[b, i] = -1
        return OK, none
    if _dist(st.pos[b, i, 0], st.pos[b, i, 1], st.npos[b, obj, 0],
             st.npos[b, obj, 1]) > REACH:
        return TOO_FAR, none
    f = tb.flags[t, obj]
    if v == SLICE:
        knife = False
        for k in range(st.nheld[b, i]):
            if tb.flags[t, st.held[b, i, k]] & KNIFE:
                knife = True
        if not knife:
            return NO_TOOL, none
        if not f & CUTTABLE:
            return NOT_SLICEABLE, none
        owner = tb.owner[t, obj]
        if owner >= 0 and owner != i:
            return ILLEGAL_SKILL, none
        if st.nstate[b, obj] & SLICED_BIT:
            return ALREADY_SLICED, none
        satisfied(tb, st, t, b, before)
        st.nstate[b, obj] |= SLICED_BIT
        return OK, _newly_met(tb, st, t, b, before, after)
    if v == TOGGLE:
        if not f & SWITCH:
            return NO_SWITCH, none
        satisfied(tb, st, t, b, before)
        if st.nstate[b, obj] & ON_BIT:
            st.nstate[b, obj] = (st.nstate[b, obj] & ~ON_BIT) | OFF_BIT
        else:
            st.nstate[b, obj] = (st.nstate[b, obj] & ~OFF_BIT) | ON_BIT
        return OK, _newly_met(tb, st, t, b, before, after)
    if v == GRAB_V:
        if not f & GRAB:
            return NOT_GRABBABLE, none
        if st.nheld[b, i] >= MAX_HELD:
            return HANDS_FULL, none
        if _protects(tb, st, t, b, obj):
            return PROTECTED, none
        if not _from_sources(tb, st, t, b, i, obj):
            return ILLEGAL_SKILL, none
        st.held[b, i, st.nheld[b, i]] = obj
        st.nheld[b, i] += 1
        st.holder[b, obj] = i
        st.npar[b, obj] = 0
        st.node_room[b, obj] = -1
        return OK, none
    # open / close
    if not f & CAN_OPEN:
        return WRONG_TARGET, none
    if st.nheld[b, i] >= MAX_HELD:
        return HANDS_FULL, none
    is_open = st.opened[b, obj] == 1
    if v == OPEN_V and is_open:
        return ALREADY_OPEN, none
    if v == CLOSE_V and not is_open:
        return ALREADY_CLOSED, none
    satisfied(tb, st, t, b, before)
    st.opened[b, obj] = 1 if v == OPEN_V else 0
    return OK, _newly_met(tb, st, t, b, before, after)


@njit(cache=True, _nrt=False)
def step_one(tb, st, b: int, acts: np.ndarray, draws: np.ndarray, outcome: np.ndarray,
             completed: np.ndarray, stack, seen, before, after) -> int:
    """Step env b by its agents' entries `acts`; fill its outcome codes and completed
    subgoal bitmasks; return the number of same-step conflicts resolved.

    Conflicts (`HouseholdEnv.step`): agents whose entries are conflicting verbs on one object id
    form a group, groups in the order of their first member; each group of two or more draws
    its winner as members[floor(u * len)] with the next of `draws`, and the others lose."""
    t = st.task[b]
    n = acts.shape[0]
    for i in range(n):
        outcome[i] = -1
        completed[i] = 0
    conflicts = 0
    for i in range(n):
        ei = acts[i]
        vi = tb.e_verb[t, i, ei]
        raw = tb.e_raw[t, i, ei]
        if vi < 0 or not tb.conflicting[vi] or raw == NO_ID:
            continue
        first = True  # is i the group's first member?
        for j in range(i):
            ej = acts[j]
            vj = tb.e_verb[t, j, ej]
            if vj >= 0 and tb.conflicting[vj] and tb.e_raw[t, j, ej] == raw:
                first = False
                break
        if not first:
            continue
        size = 1
        for j in range(i + 1, n):
            ej = acts[j]
            vj = tb.e_verb[t, j, ej]
            if vj >= 0 and tb.conflicting[vj] and tb.e_raw[t, j, ej] == raw:
                size += 1
        if size < 2:
            continue
        pick = int(draws[conflicts] * size)
        conflicts += 1
        k = 0
        for j in range(i, n):
            ej = acts[j]
            vj = tb.e_verb[t, j, ej]
            if vj >= 0 and tb.conflicting[vj] and tb.e_raw[t, j, ej] == raw:
                if k != pick:
                    outcome[j] = CONFLICT_LOST
                k += 1
    for i in range(n):
        if outcome[i] < 0:
            code, bits = _execute(tb, st, t, b, i, acts[i], acts, stack, seen, before, after)
            outcome[i] = code
            completed[i] = bits
    return conflicts


@njit(cache=True, _nrt=False)
def _potential(tb, st, t: int, b: int, sat: int, shaping: float) -> float:
    cr = sat / tb.need[t]
    if shaping == 0.0:
        return cr
    carried = 0
    for i in range(st.nheld.shape[1]):
        for k in range(st.nheld[b, i]):
            obj = st.held[b, i, k]
            g = tb.gidx[t, obj]
            if g >= 0 and not _in_place(tb, st, t, b, obj, g):
                carried += 1
    return cr + shaping * carried / max(1, tb.need[t])


@njit(cache=True, _nrt=False)
def _in_place(tb, st, t: int, b: int, obj: int, g: int) -> bool:
    for q in range(st.npar[b, obj]):
        if tb.gtargets[t, g, st.ppar[b, obj, q]]:
            return True
    return False


# Numba drops writes to a namedtuple's arrays made directly in a prange body (they land in a
# copy), so each parallel loop body below is a function of its own. The bodies take chunks of
# CHUNK environments, so that their scratch arrays are allocated once per chunk.
CHUNK = 64


@njit(cache=True)
def _step_chunk(tb, st, lo: int, hi: int, acts: np.ndarray, draws: np.ndarray,
                active: np.ndarray, step_cost: float, shaping: float, outcome: np.ndarray,
                completed: np.ndarray, conflicts: np.ndarray, reward: np.ndarray,
                cr: np.ndarray, term: np.ndarray, trunc: np.ndarray) -> None:
    n_nodes = st.npar.shape[1]
    n_sg = tb.sg_kind.shape[1]
    stack = np.empty(n_nodes + 1, np.int64)
    seen = np.empty(n_nodes + 1, np.int64)
    before = np.empty(n_sg, np.int64)
    after = np.empty(n_sg, np.int64)
    for b in range(lo, hi):
        if active[b]:
            _step_env(tb, st, b, acts, draws, step_cost, shaping, outcome, completed,
                      conflicts, reward, cr, term, trunc, stack, seen, before, after)


@njit(cache=True, _nrt=False)
def _step_env(tb, st, b: int, acts: np.ndarray, draws: np.ndarray, step_cost: float,
              shaping: float, outcome: np.ndarray, completed: np.ndarray,
              conflicts: np.ndarray, reward: np.ndarray, cr: np.ndarray, term: np.ndarray,
              trunc: np.ndarray, stack, seen, before, after) -> None:
    t = st.task[b]
    conflicts[b] = step_one(tb, st, b, acts[b], draws[b], outcome[b], completed[b],
                            stack, seen, before, after)
    st.t[b] += 1
    st.used[b] += acts.shape[1]
    sat = satisfied(tb, st, t, b, after)
    pot = _potential(tb, st, t, b, sat, shaping)
    reward[b] = pot - st.potential[b] - step_cost
    st.potential[b] = pot
    cr[b] = sat / tb.need[t]
    term[b] = sat == tb.need[t]
    trunc[b] = not term[b] and st.used[b] >= st.budget[b]


@njit(cache=True, parallel=True)
def step_kernel(tb, st, acts: np.ndarray, draws: np.ndarray, active: np.ndarray,
                step_cost: float, shaping: float, outcome: np.ndarray, completed: np.ndarray,
                conflicts: np.ndarray, reward: np.ndarray, cr: np.ndarray, term: np.ndarray,
                trunc: np.ndarray) -> None:
    """Step every active env one team step: outcomes, completed subgoals and conflicts per
    env, then the team reward (change of the potential minus `step_cost`), the completion rate,
    success (terminated) and the used budget (truncated), as `HouseholdParallelEnv.step`."""
    batch = acts.shape[0]
    for c in prange((batch + CHUNK - 1) // CHUNK):
        _step_chunk(tb, st, c * CHUNK, min(batch, (c + 1) * CHUNK), acts, draws, active,
                    step_cost, shaping, outcome, completed, conflicts, reward, cr, term,
                    trunc)


@njit(cache=True)
def _reset_potential(tb, st, b: int, shaping: float, cr: np.ndarray) -> None:
    t = st.task[b]
    sat = satisfied(tb, st, t, b, np.empty(tb.sg_kind.shape[1], np.int64))
    st.potential[b] = _potential(tb, st, t, b, sat, shaping)
    cr[b] = sat / tb.need[t]


@njit(cache=True, parallel=True)
def potential_kernel(tb, st, rows: np.ndarray, shaping: float, cr: np.ndarray) -> None:
    """Set the potential (and completion rate) of the envs in `rows`, after a reset."""
    for k in prange(rows.shape[0]):
        _reset_potential(tb, st, rows[k], shaping, cr)


@njit(cache=True, _nrt=False)
def _near(st, b: int, i: int, node: int, dist: np.ndarray) -> float:
    """Return agent i's distance to `node` (cached in `dist` for this step, -1 unknown)."""
    d = dist[node]
    if d < 0.0:
        d = _dist(st.pos[b, i, 0], st.pos[b, i, 1], st.npos[b, node, 0], st.npos[b, node, 1])
        dist[node] = d
    return d


@njit(cache=True, _nrt=False)
def _plausible(tb, st, t: int, b: int, i: int, e: int, stack, seen, vis: np.ndarray,
               dist: np.ndarray) -> bool:
    """Return `menu.plausible(strict=True)` for agent i's entry e. That is a conjunction of
    pure tests, so they run cheapest first (`vis`, `dist`: the agent's visibility and distance
    per node this step, -1 not yet known)."""
    v = tb.e_verb[t, i, e]
    if v < 0:  # an unknown verb is in no role's skills
        return not tb.has_skills[t, i]
    if not tb.role_verbs[t, i, v]:
        return False
    obj = tb.e_obj[t, i, e]
    if v == PUT_IN or v == PUT_ON or v == DROP or v == HANDOVER:
        if obj < 0 or not _holds(st, b, i, obj):
            return False
    elif v == GRAB_V:
        if obj < 0 or st.holder[b, obj] >= 0 or st.nheld[b, i] >= MAX_HELD:
            return False
        if not _from_sources(tb, st, t, b, i, obj):
            return False
    elif v == SLICE:
        if obj >= 0 and tb.owner[t, obj] >= 0 and tb.owner[t, obj] != i:
            return False
    elif v == WALK_TO_ROOM:
        # the mask asks for a room *id* among the allowed ones (a name is never in that set)
        r = tb.e_room_id[t, i, e]
        return r >= 0 and tb.allowed[t, i, r]
    elif v == WALK_TO_DOOR:
        # the mask looks at the entry's object only (the engine prefers its target)
        return obj >= 0 and tb.door_a[t, obj] >= 0 and (tb.allowed[t, i, tb.door_a[t, obj]]
                                                        or tb.allowed[t, i, tb.door_b[t, obj]])
    if v == WALK or v == GRAB_V or v == OPEN_V or v == CLOSE_V or v == SLICE or v == PUT_IN \
            or v == PUT_ON:
        node = tb.e_target[t, i, e] if v == PUT_IN or v == PUT_ON else obj
        near = node >= 0 and _near(st, b, i, node, dist) <= REACH
        if near == (v == WALK):
            return False
    if v == WALK or v == GRAB_V or v == OPEN_V or v == CLOSE_V or v == SLICE:
        if obj < 0:
            return False
        if vis[obj] < 0:
            vis[obj] = 1 if visible(tb, st, t, b, i, obj, stack, seen) else 0
        if vis[obj] == 0:
            return False
    return True


@njit(cache=True)
def _observe_chunk(tb, st, rows: np.ndarray, lo: int, hi: int, progress: np.ndarray,
                   want_features: bool, mask: np.ndarray, feats: np.ndarray) -> None:
    n_nodes = st.npar.shape[1]
    stack = np.empty(n_nodes + 1, np.int64)
    seen = np.empty(n_nodes + 1, np.int64)
    vis = np.empty(n_nodes, np.int8)
    dist = np.empty(n_nodes)
    loads = np.empty(n_nodes, np.int64)
    sat = np.empty(tb.sg_kind.shape[1], np.int64)
    for k in range(lo, hi):
        b = rows[k]
        _observe_env(tb, st, b, progress[b], want_features, mask, feats, stack, seen, vis,
                     dist, loads, sat)


@njit(cache=True, _nrt=False)
def _observe_env(tb, st, b: int, progress: float, want_features: bool, mask: np.ndarray,
                 feats: np.ndarray, stack, seen, vis, dist, loads, sat) -> None:
    t = st.task[b]
    n_nodes = st.npar.shape[1]
    cr = 0.0
    if want_features:
        cr = satisfied(tb, st, t, b, sat) / tb.need[t]
        for x in range(n_nodes):  # objects resting on each node (buffer loads)
            loads[x] = 0
        for x in range(n_nodes):
            for q in range(st.npar[b, x]):
                p = st.ppar[b, x, q]
                dup = False
                for r in range(q):
                    if st.ppar[b, x, r] == p:
                        dup = True
                if not dup:
                    loads[p] += 1
    for i in range(st.room.shape[1]):
        for x in range(n_nodes):
            vis[x] = -1
            dist[x] = -1.0
        count = tb.e_count[t, i]
        for e in range(mask.shape[2]):
            mask[b, i, e] = 1 if e < count and _plausible(
                tb, st, t, b, i, e, stack, seen, vis, dist) else 0
        if want_features:
            _features(tb, st, t, b, i, count, progress, cr, stack, seen, vis, dist, loads,
                      feats[b, i])


@njit(cache=True, parallel=True)
def observe_kernel(tb, st, rows: np.ndarray, progress: np.ndarray, want_features: bool,
                   mask: np.ndarray, feats: np.ndarray) -> None:
    """Fill the strict masks (B, n, K) and, with `want_features`, the entry features
    (B, n, K, N_FEATURES) of the envs in `rows`, as `menu.observe_entries` builds them."""
    m = rows.shape[0]
    for c in prange((m + CHUNK - 1) // CHUNK):
        _observe_chunk(tb, st, rows, c * CHUNK, min(m, (c + 1) * CHUNK), progress,
                       want_features, mask, feats)


@njit(cache=True, _nrt=False)
def _features(tb, st, t: int, b: int, i: int, count: int, progress: float, cr: float,
              stack, seen, vis: np.ndarray, dist: np.ndarray, loads: np.ndarray,
              out: np.ndarray) -> None:
    """Fill agent i's entry features (K, N_FEATURES) (`menu.entry_features`; padding rows 0)."""
    n = st.room.shape[1]
    nv = tb.n_verbs
    out[:, :] = 0.0
    hands_full = 1.0 if st.nheld[b, i] >= MAX_HELD else 0.0
    me = i / max(1, n - 1)
    for e in range(count):
        row = out[e]
        v = tb.e_verb[t, i, e]
        fv = tb.feature_verb[v] if v >= 0 else -1
        if fv >= 0:
            row[fv] = 1.0
        obj = tb.e_obj[t, i, e]
        if obj >= 0:
            if vis[obj] < 0:
                vis[obj] = 1 if visible(tb, st, t, b, i, obj, stack, seen) else 0
            px, py = st.npos[b, obj, 0], st.npos[b, obj, 1]
            near = _near(st, b, i, obj, dist)
            closer = 0
            for j in range(n):
                if j != i:
                    d = _dist(st.pos[b, j, 0], st.pos[b, j, 1], px, py)
                    if d < near or (d == near and j < i):
                        closer += 1
            g = tb.gidx[t, obj]
            placed = g >= 0 and _in_place(tb, st, t, b, obj, g)
            who = st.holder[b, obj]
            row[nv + 0] = vis[obj]
            row[nv + 1] = near <= REACH
            row[nv + 2] = _holds(st, b, i, obj)
            row[nv + 3] = who >= 0 and who != i
            row[nv + 4] = g >= 0 and not placed
            row[nv + 5] = placed
            row[nv + 6] = (tb.flags[t, obj] & CAN_OPEN) != 0 and st.opened[b, obj] == 1
            row[nv + 7] = min(1.0, near / 20.0)
            row[nv + 8] = tb.cap[t, obj] >= 0
            row[nv + 14] = tb.state_target[t, obj] and not st.nstate[b, obj] & SLICED_BIT
            row[nv + 17] = closer / max(1, n - 1)
            tgt = tb.e_target[t, i, e]
            if tgt >= 0:
                row[nv + 9] = g >= 0 and tb.gtargets[t, g, tgt]
                row[nv + 10] = st.opened[b, tgt] == 1
                cap = tb.cap[t, tgt]
                row[nv + 11] = cap >= 0 and loads[tgt] >= cap
            elif tb.e_has_target[t, i, e]:  # a target that names no node counts as open
                row[nv + 10] = 1.0
        if v == WALK_TO_ROOM:  # the raw argument: a room *name* never equals the room
            r = tb.e_room_id[t, i, e]
            row[nv + 13] = r >= 0 and r == st.room[b, i]
        row[nv + 12] = hands_full
        row[nv + 15] = cr
        row[nv + 16] = 1.0 - progress
        row[nv + 18] = me
