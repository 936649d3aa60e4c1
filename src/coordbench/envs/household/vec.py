"""The batched household engine: B household (or construct) episodes stepped at once as arrays.

`HouseholdVecEnv` is `HouseholdParallelEnv` for learners that want throughput: the same tasks,
the same stable action menus (`menu.catalog`), the same strict masks and entry features
(`menu.observe_entries`), the same team reward, termination and budget, but B environments
in numpy arrays stepped by the numba kernels in `kernels.py`, finished episodes reset in place.
`HouseholdTables` compiles tasks into the integer tables the kernels read (dense node, room
and agent indices; -1 for none). tests/test_household_vec.py steps it beside `HouseholdEnv`
and `HouseholdParallelEnv` and checks that outcomes, state, rewards, masks and features agree
exactly.

Two things are the batch's own: the task each episode plays is drawn from the env's seeded
generator, and the same-step conflicts (`HouseholdEnv.step`) draw their winners from uniform
numbers that generator gives (`members[floor(u * len(members))]`) rather than from a
`random.Random` per episode. Given the same winners, both engines agree.
"""

from __future__ import annotations

import numbers
from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from coordbench.errors import ActionError, ConfigError

from . import kernels as K
from .actions import ACTIONS, CONFLICT_SETS, OUTCOMES, Action
from .engine import HouseholdEnv
from .menu import N_FEATURES, VERBS, agent_menus
from .scene import NON_OBJECT_CATEGORIES
from .task import HouseholdTask

# the kernels name verbs and outcomes by these positions
assert ACTIONS[K.DROP] == "drop" and ACTIONS[K.WALK_TO_DOOR] == "walk_to_door"
assert tuple(OUTCOMES)[K.BUFFER_FULL] == "buffer_full"
assert tuple(OUTCOMES)[K.CONFLICT_LOST] == "conflict_lost"
OUTCOME_CODES = tuple(OUTCOMES)

Episode = tuple[HouseholdTask, list[int] | None]  # a task, and its menu's nodes (None: all)

Tables = namedtuple("Tables", [
    # nodes, rooms and doors
    "flags", "ncls", "door_a", "door_b", "room_center",
    # agents: zones, roles and what their roles allow
    "allowed", "role_verbs", "has_skills", "has_sources", "sources", "owner", "cap",
    # subgoals, and the goal sets the entry features read
    "sg_kind", "sg_class", "sg_count", "sg_tmask", "sg_cand", "sg_node", "sg_state", "need",
    "gidx", "gtargets", "state_target",
    # menu entries (task, agent, entry)
    "e_verb", "e_obj", "e_raw", "e_target", "e_has_target", "e_door", "e_room", "e_room_id",
    "e_to", "e_count",
    # constants
    "conflicting", "feature_verb", "n_verbs"])
State = namedtuple("State", [
    "task", "room", "pos", "at_door", "held", "nheld", "holder", "node_room", "npar", "prel",
    "ppar", "opened", "nstate", "npos", "t", "used", "budget", "potential"])
_STATE_ROWS = ("room", "pos", "at_door", "held", "nheld", "holder", "node_room", "npar",
               "prel", "ppar", "opened", "nstate", "npos")
_SG_STATES = {"OPEN": K.ST_OPEN, "CLOSED": K.ST_CLOSED, "ON": K.ST_ON, "OFF": K.ST_OFF,
              "SLICED": K.ST_SLICED}


class HouseholdTables:
    """Tasks compiled for the kernels: static rules, initial states and the action menus of a
    team of `n_agents` (one row per task, padded to the largest task)."""

    def __init__(self, episodes: Sequence[Episode], n_agents: int, conflict_set: str = "paper",
                 household: bool = True,
                 menus: Sequence[Sequence[Sequence[Action]]] | None = None) -> None:
        if not episodes:
            raise ConfigError("the batched household engine needs at least one task")
        if conflict_set not in CONFLICT_SETS:
            raise ConfigError(f"unknown conflict set {conflict_set!r}; choose from "
                              f"{', '.join(CONFLICT_SETS)}")
        self.episodes = list(episodes)
        self.n = n_agents
        self.household = household
        engines = [HouseholdEnv(task, n_agents, 0, conflict_set) for task, _ in self.episodes]
        if menus is None:
            self.menus = [agent_menus(env, nodes, household)
                          for env, (_, nodes) in zip(engines, self.episodes, strict=True)]
        else:
            if len(menus) != len(self.episodes) or any(len(m) != n_agents for m in menus):
                raise ConfigError(f"menus needs one list of actions per agent ({n_agents}) "
                                  f"for each of the {len(self.episodes)} tasks")
            self.menus = [[list(m) for m in per] for per in menus]
        if any(not m for per in self.menus for m in per):
            raise ConfigError("every agent's menu needs at least one action")
        self.node_ids = [sorted(env.scene.nodes) for env in engines]
        self.index = [{nid: k for k, nid in enumerate(ids)} for ids in self.node_ids]
        self.room_ids = [sorted(env.scene.rooms) for env in engines]
        self.room_index = [{rid: k for k, rid in enumerate(ids)} for ids in self.room_ids]
        self.size = max(len(m) for menus in self.menus for m in menus)
        self.budgets = np.array([task.budget() for task, _ in self.episodes], np.int64)
        classes: dict[str, int] = {}
        for env in engines:
            for node in env.scene.nodes.values():
                classes.setdefault(node.class_name, len(classes))
        self.classes = classes
        t_n = len(engines)
        n_nodes = max(len(ids) for ids in self.node_ids)
        n_rooms = max(len(ids) for ids in self.room_ids)
        n_par = max([1] + [len(ps) for env in engines for ps in env.parents.values()])
        n_sg = max(len(task.subgoals) for task, _ in self.episodes)
        if n_sg > 63:
            raise ConfigError(f"a task has {n_sg} subgoals; the batched engine takes at most 63")
        n_cand = max([1] + [len(v) for env in engines for v in env.by_class.values()])
        goal_classes = [sorted({sg.obj_class for sg in task.subgoals if sg.relation != "state"})
                        for task, _ in self.episodes]
        n_goal = max([1] + [len(g) for g in goal_classes])
        z = np.zeros
        tb = dict(
            flags=z((t_n, n_nodes), np.int32), ncls=np.full((t_n, n_nodes), -1, np.int32),
            door_a=np.full((t_n, n_nodes), -1, np.int32),
            door_b=np.full((t_n, n_nodes), -1, np.int32),
            room_center=z((t_n, n_rooms, 2)), allowed=z((t_n, n_agents, n_rooms), np.bool_),
            role_verbs=np.ones((t_n, n_agents, len(ACTIONS)), np.bool_),
            has_skills=z((t_n, n_agents), np.bool_),
            has_sources=z((t_n, n_agents), np.bool_),
            sources=z((t_n, n_agents, n_nodes), np.bool_),
            owner=np.full((t_n, n_nodes), -1, np.int32),
            cap=np.full((t_n, n_nodes), -1, np.int32),
            sg_kind=z((t_n, n_sg), np.int32), sg_class=np.full((t_n, n_sg), -1, np.int32),
            sg_count=z((t_n, n_sg), np.int64), sg_tmask=z((t_n, n_sg, n_nodes), np.bool_),
            sg_cand=np.full((t_n, n_sg, n_cand), -1, np.int32),
            sg_node=np.full((t_n, n_sg), -1, np.int32), sg_state=z((t_n, n_sg), np.int32),
            need=z(t_n, np.int64), gidx=np.full((t_n, n_nodes), -1, np.int32),
            gtargets=z((t_n, n_goal, n_nodes), np.bool_),
            state_target=z((t_n, n_nodes), np.bool_))
        shape = (t_n, n_agents, self.size)
        ent = dict(e_verb=np.full(shape, K.WAIT, np.int32), e_obj=np.full(shape, -1, np.int32),
                   e_raw=np.full(shape, K.NO_ID, np.int64),
                   e_target=np.full(shape, -1, np.int32),
                   e_has_target=z(shape, np.bool_), e_door=np.full(shape, -1, np.int32),
                   e_room=np.full(shape, -1, np.int32), e_room_id=np.full(shape, -1, np.int32),
                   e_to=np.full(shape, -1, np.int64), e_count=z((t_n, n_agents), np.int32))
        init = dict(
            room=z((t_n, n_agents), np.int32), pos=z((t_n, n_agents, 2)),
            at_door=np.full((t_n, n_agents), -1, np.int32),
            held=np.full((t_n, n_agents, K.MAX_HELD), -1, np.int32),
            nheld=z((t_n, n_agents), np.int32), holder=np.full((t_n, n_nodes), -1, np.int32),
            node_room=np.full((t_n, n_nodes), -1, np.int32), npar=z((t_n, n_nodes), np.int32),
            prel=z((t_n, n_nodes, n_par), np.int8),
            ppar=np.full((t_n, n_nodes, n_par), -1, np.int32),
            opened=np.ones((t_n, n_nodes), np.int8), nstate=z((t_n, n_nodes), np.int8),
            npos=z((t_n, n_nodes, 2)))
        self._raw: dict[int, int] = {}  # object ids of the entries -> small codes
        for t, env in enumerate(engines):
            self._compile(t, env, goal_classes[t], tb, ent, init)
        conflicting = np.array([a in CONFLICT_SETS[conflict_set] for a in ACTIONS], np.bool_)
        feature_verb = np.array([VERBS.index(a) if a in VERBS else -1 for a in ACTIONS],
                                np.int32)
        self.tables = Tables(**tb, **ent, conflicting=conflicting, feature_verb=feature_verb,
                             n_verbs=len(VERBS))
        self.init = init

    def _compile(self, t: int, env: HouseholdEnv, goal_classes: list[str], tb: dict,
                 ent: dict, init: dict) -> None:
        sc, task, ix, rx = env.scene, env.task, self.index[t], self.room_index[t]
        for nid, node in sc.nodes.items():
            k = ix[nid]
            props = node.properties
            tb["flags"][t, k] = (K.EXISTS | K.GRAB * node.grabbable | K.CAN_OPEN * node.can_open
                                 | K.CONTAINER * node.is_container | K.SURFACE * node.is_surface
                                 | K.CUTTABLE * ("CUTTABLE" in props)
                                 | K.SWITCH * ("HAS_SWITCH" in props)
                                 | K.NON_OBJECT * (node.category in NON_OBJECT_CATEGORIES)
                                 | K.KNIFE * (node.class_name == "knife")
                                 | K.SHARED * (nid in env.shared))
            tb["ncls"][t, k] = self.classes[node.class_name]
            init["npos"][t, k] = env.node_pos[nid]
            init["opened"][t, k] = env.open_state.get(nid, True)
            st = env.states.get(nid, set())
            init["nstate"][t, k] = (K.ON_BIT * ("ON" in st) | K.OFF_BIT * ("OFF" in st)
                                    | K.SLICED_BIT * ("SLICED" in st))
            if nid in env.node_room:
                init["node_room"][t, k] = rx[env.node_room[nid]]
            pairs = env.parents.get(nid, ())
            init["npar"][t, k] = len(pairs)
            for q, (rel, parent) in enumerate(pairs):
                init["prel"][t, k, q] = K.REL_ON if rel == "ON" else K.REL_INSIDE
                init["ppar"][t, k, q] = ix[parent]
        for door, (ra, rb) in sc.doors.items():
            tb["door_a"][t, ix[door]], tb["door_b"][t, ix[door]] = rx[ra], rx[rb]
        for rid, r in rx.items():
            tb["room_center"][t, r] = sc.room_center(rid)
        for i in range(self.n):
            for rid in env.allowed[i]:
                tb["allowed"][t, i, rx[rid]] = True
            init["room"][t, i] = rx[env.room[i]]
            init["pos"][t, i] = env.pos[i]
            if env.roles is not None:
                role = env.roles[i]
                skills = task.role_skills.get(role)
                if skills is not None:
                    tb["has_skills"][t, i] = True
                    tb["role_verbs"][t, i] = [a in skills for a in ACTIONS]
                if role in task.role_sources:
                    tb["has_sources"][t, i] = True
                    for src in task.role_sources[role]:
                        if src in ix:
                            tb["sources"][t, i, ix[src]] = True
        for nid, agent in task.owners.items():
            if nid in ix:
                if not isinstance(agent, int) or not 0 <= agent < 1 << 31:
                    raise ConfigError(f"task {task.task_id}: the owner of node {nid} must be "
                                      f"an agent index, got {agent!r}")
                tb["owner"][t, ix[nid]] = agent
        for nid, cap in task.buffers.items():
            if nid in ix:
                if not isinstance(cap, int) or cap < 0:
                    raise ConfigError(f"task {task.task_id}: buffer {nid} needs a capacity "
                                      f">= 0, got {cap!r}")
                tb["cap"][t, ix[nid]] = min(cap, (1 << 31) - 1)
        keys = [sg.key for sg in task.subgoals]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise ConfigError(f"task {task.task_id}: subgoal {dup!r} is listed twice (the "
                              f"engine counts it once but requires it twice)")
        for s, sg in enumerate(task.subgoals):
            tb["sg_count"][t, s] = sg.count
            if sg.relation == "state":
                tb["sg_kind"][t, s] = K.SG_STATE
                tb["sg_node"][t, s] = ix.get(sg.targets[0], -1) if sg.targets else -1
                tb["sg_state"][t, s] = _SG_STATES.get(sg.obj_class, 0)
                for nid in sg.targets:
                    if nid in ix:
                        tb["state_target"][t, ix[nid]] = True
                continue
            tb["sg_kind"][t, s] = K.SG_ON if sg.relation == "on" else K.SG_INSIDE
            tb["sg_class"][t, s] = self.classes.get(sg.obj_class, -1)
            for nid in sg.targets:
                if nid in ix:
                    tb["sg_tmask"][t, s, ix[nid]] = True
            for c, nid in enumerate(env.by_class.get(sg.obj_class, ())):
                tb["sg_cand"][t, s, c] = ix[nid]
        tb["need"][t] = sum(sg.count for sg in task.subgoals)
        if tb["need"][t] <= 0:
            raise ConfigError(f"task {task.task_id}: its subgoals require no object")
        for g, cls in enumerate(goal_classes):
            for sg in task.subgoals:
                if sg.relation != "state" and sg.obj_class == cls:
                    for nid in sg.targets:
                        if nid in ix:
                            tb["gtargets"][t, g, ix[nid]] = True
            for nid, node in sc.nodes.items():
                if node.class_name == cls:
                    tb["gidx"][t, ix[nid]] = g
        for i, menu in enumerate(self.menus[t]):
            ent["e_count"][t, i] = len(menu)
            for e, act in enumerate(menu):
                self.encode(t, act, ent, i, e)

    def encode(self, t: int, act: Action, ent: dict, i: int, e: int) -> None:
        """Write `act` as entry (i, e) of task t's tables in `ent` (ids that name nothing
        become -1, which the kernels refuse as `invalid` where the engine does)."""
        sc, ix, rx = self.episodes[t][0].scene, self.index[t], self.room_index[t]
        for name in ("obj", "target", "room", "to_agent"):
            x = getattr(act, name)
            if isinstance(x, numbers.Number) and not isinstance(x, int):
                raise ConfigError(f"{act.text()}: {name} must be an int id, not "
                                  f"{type(x).__name__} {x!r}")
        ent["e_verb"][t, i, e] = ACTIONS.index(act.name) if act.name in ACTIONS else -1
        if isinstance(act.obj, int):  # same-step conflicts group entries by this id
            ent["e_raw"][t, i, e] = self._raw.setdefault(act.obj, len(self._raw))
        ent["e_has_target"][t, i, e] = act.target is not None
        ent["e_obj"][t, i, e] = ix.get(act.obj, -1) if isinstance(act.obj, int) else -1
        ent["e_target"][t, i, e] = (ix.get(act.target, -1) if isinstance(act.target, int)
                                    else -1)
        door = act.target if act.target is not None else act.obj
        ent["e_door"][t, i, e] = ix[door] if isinstance(door, int) and door in sc.doors else -1
        rid = sc.room_id(act.room) if act.room is not None else None
        ent["e_room"][t, i, e] = rx[rid] if rid is not None else -1
        ent["e_room_id"][t, i, e] = (rx[act.room] if isinstance(act.room, int)
                                     and act.room in rx else -1)
        if isinstance(act.to_agent, int):
            ent["e_to"][t, i, e] = max(-1, min(act.to_agent, 1 << 40))  # >= n: invalid


class HouseholdVecEnv:
    """B household episodes of a team of `n_agents`, stepped at once (see the module docs).

    `observe`: "features" (entry features and masks, what `HouseholdParallelEnv` observes),
    "masks" (masks only) or "none" (neither: the bare engine step). `menus` replaces the
    catalog's menus with any actions, per task and agent (see `HouseholdTables`).
    `autoreset=False` leaves finished episodes as they are (they can go on stepping) instead
    of starting them afresh."""

    def __init__(self, episodes: Sequence[Episode], n_agents: int, batch: int = 1,
                 seed: int = 0, conflict_set: str = "paper", step_cost: float = 0.005,
                 household: bool = True, shaping: float = 0.0, budget_scale: float = 1.0,
                 observe: str = "features",
                 menus: Sequence[Sequence[Sequence[Action]]] | None = None,
                 autoreset: bool = True) -> None:
        if batch < 1:
            raise ConfigError(f"batch must be at least 1, got {batch}")
        if observe not in ("features", "masks", "none"):
            raise ConfigError(f"observe must be features, masks or none, got {observe!r}")
        self.tables = HouseholdTables(episodes, n_agents, conflict_set, household, menus)
        if observe == "features":
            odd = [a.name for per in self.tables.menus for m in per for a in m
                   if a.name not in VERBS]
            if odd:
                raise ConfigError(f"entry features know the verbs {', '.join(VERBS)}; a menu "
                                  f"has {odd[0]!r} (use observe='masks')")
        self.n, self.batch, self.size = n_agents, batch, self.tables.size
        self.step_cost, self.shaping, self.budget_scale = step_cost, shaping, budget_scale
        self.observe = observe
        self.autoreset = autoreset
        self.rng = np.random.default_rng(seed)
        init = self.tables.init
        self.state = State(task=np.zeros(batch, np.int64),
                           **{k: np.repeat(init[k][:1], batch, axis=0) for k in _STATE_ROWS},
                           t=np.zeros(batch, np.int64), used=np.zeros(batch, np.int64),
                           budget=np.zeros(batch, np.int64), potential=np.zeros(batch))
        self.masks = np.zeros((batch, n_agents, self.size), np.int8)
        self.features = np.zeros((batch, n_agents, self.size, N_FEATURES) if observe ==
                                 "features" else (batch, n_agents, 1, 1), np.float32)
        self.completion = np.zeros(batch)
        self.outcome = np.zeros((batch, n_agents), np.int32)
        self.completed = np.zeros((batch, n_agents), np.int64)
        self.conflicts = np.zeros(batch, np.int64)
        self.reward = np.zeros(batch)
        self.terminated = np.zeros(batch, np.bool_)
        self.truncated = np.zeros(batch, np.bool_)
        self._all = np.ones(batch, np.bool_)
        self._started = False

    def reset(self, tasks: Sequence[int] | np.ndarray | None = None
              ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Start every episode afresh (on `tasks[b]`, or on tasks drawn from the env's
        generator); return (features, masks), each None where `observe` leaves it out."""
        rows = np.arange(self.batch)
        self._reset_rows(rows, None if tasks is None else np.asarray(tasks, np.int64))
        self._started = True
        return self._observe(rows)

    def _reset_rows(self, rows: np.ndarray, tasks: np.ndarray | None = None) -> None:
        n_tasks = len(self.tables.episodes)
        if tasks is None:
            tasks = self.rng.integers(n_tasks, size=len(rows))
        elif tasks.shape != rows.shape or tasks.min() < 0 or tasks.max() >= n_tasks:
            raise ActionError(f"tasks must be {len(rows)} indices in 0..{n_tasks - 1}")
        st, init = self.state, self.tables.init
        st.task[rows] = tasks
        for k in _STATE_ROWS:
            getattr(st, k)[rows] = init[k][tasks]
        st.t[rows] = 0
        st.used[rows] = 0
        st.budget[rows] = np.maximum(self.n, (self.tables.budgets[tasks]
                                              * self.budget_scale).astype(np.int64))
        K.potential_kernel(self.tables.tables, st, rows, self.shaping, self.completion)

    def _observe(self, rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        if self.observe == "none":
            return None, None
        st = self.state
        progress = np.minimum(1.0, st.used / np.maximum(1, self.tables.budgets[st.task]))
        K.observe_kernel(self.tables.tables, st, rows, progress, self.observe == "features",
                         self.masks, self.features)
        return (self.features if self.observe == "features" else None), self.masks

    def step(self, actions: np.ndarray, draws: np.ndarray | None = None,
             active: np.ndarray | None = None
             ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, dict]:
        """Apply every env's joint action (B, n) of menu entries; return (features, masks,
        reward, info). `info` has `terminated`, `truncated`, `outcome` (B, n codes into
        OUTCOME_CODES), `completed` (B, n subgoal bitmasks), `conflicts` and `completion` of
        the step taken. Finished episodes are reset at once and observed afresh (unless
        `autoreset` is off); what they saw last is in `info["final_rows"]`,
        `info["final_features"]` and `info["final_masks"]` (a time-out's bootstrap state).
        `draws` (B, n) in [0, 1) sets the conflict winners (default: the env's generator);
        `active` (B,) bool steps only those envs (the others keep their state; their reward
        is 0 and their outcome -1). The returned features and masks are the env's own buffers,
        overwritten by the next step: copy what must outlive it."""
        if not self._started:
            raise ActionError("call reset() before step()")
        acts = np.ascontiguousarray(actions, dtype=np.int64)
        if acts.shape != (self.batch, self.n):
            raise ActionError(f"actions must have shape ({self.batch}, {self.n}), "
                              f"got {tuple(np.shape(actions))}")
        if acts.size and (acts.min() < 0 or acts.max() >= self.size):
            bad = int(np.flatnonzero((acts < 0) | (acts >= self.size))[0])
            raise ActionError(f"action {int(acts.flat[bad])} (env {bad // self.n}, agent "
                              f"{bad % self.n}) is not in 0..{self.size - 1}")
        if draws is None:
            draws = self.rng.random((self.batch, self.n))
        else:
            draws = np.ascontiguousarray(draws, dtype=np.float64)
            if draws.shape != (self.batch, self.n):
                raise ActionError(f"draws must have shape ({self.batch}, {self.n})")
            if not ((draws >= 0.0) & (draws < 1.0)).all():
                raise ActionError("draws must lie in [0, 1)")
        if active is None:
            active = self._all
        else:
            active = np.ascontiguousarray(active, dtype=np.bool_)
            if active.shape != (self.batch,):
                raise ActionError(f"active must have shape ({self.batch},)")
            self.outcome[~active] = -1
            self.completed[~active] = 0
            self.conflicts[~active] = 0
            self.reward[~active] = 0.0
            self.terminated[~active] = False
            self.truncated[~active] = False
        K.step_kernel(self.tables.tables, self.state, acts, draws, active, self.step_cost,
                      self.shaping, self.outcome, self.completed, self.conflicts, self.reward,
                      self.completion, self.terminated, self.truncated)
        info = {"terminated": self.terminated.copy(), "truncated": self.truncated.copy(),
                "outcome": self.outcome.copy(), "completed": self.completed.copy(),
                "conflicts": self.conflicts.copy(), "completion": self.completion.copy()}
        done = np.flatnonzero(self.terminated | self.truncated)
        if len(done) and self.autoreset:
            features, masks = self._observe(done)
            info["final_rows"] = done
            info["final_features"] = None if features is None else features[done]
            info["final_masks"] = None if masks is None else masks[done]
            self._reset_rows(done)
        features, masks = self._observe(np.arange(self.batch))
        return features, masks, self.reward.copy(), info

    def random_valid_actions(self, rng: np.random.Generator) -> np.ndarray:
        """Return one uniformly drawn unmasked entry per agent (B, n); needs the masks."""
        if self.observe == "none":
            raise ConfigError("random_valid_actions needs masks: observe='masks' or 'features'")
        m = self.masks.astype(np.float64)
        m[:, :, 0] += (m.sum(axis=2) == 0)  # no valid entry: entry 0 (the catalog's wait)
        u = rng.random(m.shape[:2])[..., None] * m.sum(axis=2, keepdims=True)
        return np.minimum((np.cumsum(m, axis=2) <= u).sum(axis=2), self.size - 1)

    def outcome_names(self, codes: np.ndarray) -> list[list[str]]:
        """Return outcome codes (B, n) as their names."""
        return [[OUTCOME_CODES[c] for c in row] for row in np.asarray(codes).tolist()]
