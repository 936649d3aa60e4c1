"""Household engine speed: agent-actions per second, measured side by side in one run.

Usage:  python benchmarks/household_speed.py [--seconds 3]
Writes benchmarks/results/household_speed.json and benchmarks/results/household_speed.md.

- engine: `HouseholdEnv.step` replaying the joint actions a rule-based team chose on the v1
  suite (legality checks, conflicts, goal bookkeeping; no observation building);
- team loop: the whole rule-based episode loop (observations for every agent, broadcast
  protocol, minds, recording of typed trajectory events);
- oracle loop: the privileged oracle team's episode loop.
One agent-action = one agent's action in one team step.

Batched: `HouseholdVecEnv` (the numba kernels, bit-identical to `HouseholdEnv`) replays the
same recorded example episodes in a batch of `--batch` copies (each env one example, its menu
the actions its agents played), observations off, on one thread (`numba.set_num_threads(1)`):
the step a learner's batch takes, counted over the same VirtualHome-replayable actions.

VirtualHome side by side: on the MECoBench example tasks (real apartments, 439 nodes), the
rule team's recorded actions are replayed by coordbench's engine and by VirtualHome 2.3.0's
evolving-graph executor (the symbolic executor MECoBench's agents act through; it runs
without Unity), each agent its own `ScriptExecutor` on one shared `EnvironmentState`, one
`execute_one_step` per action, in both of its modes (`in_place=False`, a new state per
action, and `in_place=True`). Both sides time stepping only: fresh episodes (coordbench's
`HouseholdEnv`, VirtualHome's state and executors over a prepared graph) are built untimed.
Install it with `pip install --no-deps virtualhome==2.3.0`
(its pinned dependencies are from 2019-2021; the executor needs only numpy); without it the
section says so. Actions VirtualHome has no verb for (wait, receive, done, handover) are not
replayed there; the ones it refuses (it has no doors or distances, so states drift) are timed
like the others, and the share refused is reported.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from coordbench.core.trajectory import HouseholdStepEvent
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
from coordbench.suites.mecobench.instances import load_suite


def _episodes(tasks, spec_for):
    out = []
    for k, task in enumerate(tasks):
        spec = spec_for(task)
        tr = run_case(task, spec, k, "bench")
        joint = [[Action(a.action if a.action != "none" else "wait", **a.args)
                  for a in e.actions] for e in tr.events if isinstance(e, HouseholdStepEvent)]
        out.append((task, spec, k, joint))
    return out


def _rate(fn, seconds: float) -> float:
    fn()
    done, start = 0, time.perf_counter()
    while (now := time.perf_counter()) - start < seconds:
        done += fn()
    return done / (now - start)


def _stepping_rate(fn, seconds: float) -> float:
    """Return actions per second of stepping alone: `fn` builds fresh episodes untimed and
    returns (actions, seconds spent stepping); rounds repeat until `seconds` of stepping."""
    fn()
    done, spent = 0, 0.0
    while spent < seconds:
        n, dt = fn()
        done, spent = done + n, spent + dt
    return done / spent


def virtualhome():
    """Return VirtualHome's evolving_graph modules (environment, execution, scripts) if the
    package is installed, else None. `import virtualhome` itself fails on a clean install
    (its __init__ edits sys.path and imports Unity-side modules), so the executor's folder is
    put on the path instead."""
    import importlib
    import importlib.util
    import sys

    spec = importlib.util.find_spec("virtualhome")
    if spec is None or not spec.submodule_search_locations:
        return None
    sys.path.insert(0, str(Path(list(spec.submodule_search_locations)[0]) / "simulation"))
    return tuple(importlib.import_module(f"evolving_graph.{m}")
                 for m in ("environment", "execution", "scripts"))


VH_VERBS = {"walk": "walk", "walk_to_room": "walk", "walk_to_door": "walk", "grab": "grab",
            "open": "open", "close": "close", "put_on": "putback", "put_in": "putin",
            "drop": "drop"}


def vh_line(a: Action, cls: dict[int, str], rooms: dict[str, int]) -> str | None:
    """Return an action as a VirtualHome script line, or None if it has no verb there."""
    verb = VH_VERBS.get(a.name)
    if verb is None:
        return None
    obj = a.obj
    if a.name == "walk_to_room":
        obj = a.room if isinstance(a.room, int) else rooms.get(str(a.room))
    if obj is None or obj not in cls:
        return None
    line = f"[{verb}] <{cls[obj]}> ({obj})"
    if a.name in ("put_on", "put_in"):
        if a.target not in cls:
            return None
        line += f" <{cls[a.target]}> ({a.target})"
    return line


def vh_graph(raw: dict, n: int) -> dict:
    """Return the task's scene graph with one character per agent in its start room."""
    g = {"nodes": list(raw["init_graph"]["nodes"]), "edges": list(raw["init_graph"]["edges"])}
    top = max(node["id"] for node in g["nodes"])
    for k in range(n):
        cid = top + 1 + k
        g["nodes"].append({"id": cid, "class_name": "character", "category": "Characters",
                           "properties": [], "states": [], "prefab_name": f"char{k}"})
        g["edges"].append({"from_id": cid, "to_id": raw["init_room_ids"][k],
                           "relation_type": "INSIDE"})
    return g


def vh_replays(examples: list[tuple[dict, list[list[Action]]]], vh, in_place: bool):
    """Return a function that replays every example's actions in VirtualHome from fresh
    states (built untimed) and returns (actions, seconds stepping); its `counts` attribute
    holds (actions replayed, actions refused) of the last replay."""
    env_mod, exe_mod, scr = vh
    prepared = []
    for raw, joint in examples:
        n = len(joint[0]) if joint else 0
        nodes = raw["init_graph"]["nodes"]
        cls = {node["id"]: node["class_name"] for node in nodes}
        rooms = {node["class_name"]: node["id"] for node in nodes if node["category"] == "Rooms"}
        lines = [[vh_line(a, cls, rooms) for a in step] for step in joint]
        prepared.append((env_mod.EnvironmentGraph(vh_graph(raw, n)), n, lines))

    def replay() -> tuple[int, float]:
        done = refused = 0
        fresh = [(env_mod.EnvironmentState(graph, {}, instance_selection=True),
                  [exe_mod.ScriptExecutor(graph, {}, char_index=k) for k in range(n)], lines)
                 for graph, n, lines in prepared]
        start = time.perf_counter()
        for state, agents, lines in fresh:
            for step in lines:
                for k, line in enumerate(step):
                    if line is None:
                        continue
                    ok, state = agents[k].execute_one_step(
                        scr.read_script_from_list_string([line]), state, in_place=in_place)
                    done += 1
                    refused += not ok
        elapsed = time.perf_counter() - start
        replay.counts = (done, refused)
        return done, elapsed

    return replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--batch", type=int, default=4096)
    args = ap.parse_args()
    tasks = load_suite("v1")
    rows = []
    for structure, n in (("parallel", 2), ("parallel", 4), ("sequential", 2)):
        cases = [t for t in tasks if t.structure == structure]

        def spec_for(task, n=n, structure=structure):
            return HouseholdSpec(structure, n, "broadcast")

        recorded = _episodes(cases, spec_for)

        def engine(recorded=recorded) -> int:
            actions = 0
            for task, spec, seed, joint in recorded:
                env = HouseholdEnv(task, spec.team, seed)
                for step in joint:
                    env.step(step)
                    actions += len(step)
            return actions

        def loop(agents: str, cases=cases, n=n, structure=structure) -> int:
            actions = 0
            for k, task in enumerate(cases):
                tr = run_case(task, HouseholdSpec(structure, n, "broadcast", agents), k, "b")
                actions += n * sum(isinstance(e, HouseholdStepEvent) for e in tr.events)
            return actions

        row = {"condition": f"{structure} n={n}",
               "engine_actions_per_s": _rate(engine, args.seconds),
               "rule_team_loop_actions_per_s": _rate(lambda: loop("rule"), args.seconds),
               "oracle_loop_actions_per_s": _rate(lambda: loop("oracle"), args.seconds)}
        rows.append(row)
        print(json.dumps({k: round(v) if isinstance(v, float) else v for k, v in row.items()}))
    side = side_by_side(args.seconds, args.batch)
    meta = {"python": platform.python_version(), "seconds_per_figure": args.seconds,
            "date": time.strftime("%Y-%m-%d")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "household_speed.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "virtualhome": side}, indent=2) + "\n")
    lines = ["# Household speed (agent-actions per second, one process, one core)", "",
             f"python {meta['python']}, {args.seconds:g} s per figure, {meta['date']}.", "",
             "## coordbench on the v1 suite", "",
             "| condition | engine | rule team loop | oracle loop |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['condition']} | {r['engine_actions_per_s']:,.0f} | "
                     f"{r['rule_team_loop_actions_per_s']:,.0f} | "
                     f"{r['oracle_loop_actions_per_s']:,.0f} |")
    lines += ["", "## Side by side with VirtualHome's executor (MECoBench example apartments)",
              ""]
    if "missing" in side:
        lines.append(side["missing"])
    else:
        lines += [f"The rule team's recorded episodes on the {side['tasks']} example tasks "
                  f"(439-node apartments): {side['actions']} agent-actions, of which "
                  f"{side['replayed']} have a VirtualHome verb; VirtualHome refuses "
                  f"{side['refused_share']:.0%} of those (no doors or distances there).", "",
                  "All rates count only those replayed actions; coordbench also steps the "
                  "rest (waits, receives, hand-overs) in the same time. The batched engine "
                  f"replays them in batches of {side['batch']:,} episodes on one thread "
                  "(numba), with the same outcomes as the engine (tests/test_household_vec.py)."
                  , "",
                  "| executor | agent-actions / s | coordbench engine / it | "
                  "coordbench batched / it |", "|---|---|---|---|",
                  f"| coordbench batched engine (HouseholdVecEnv, one thread) | "
                  f"{side['batched']:,.0f} | | 1x |",
                  f"| coordbench engine | {side['coordbench']:,.0f} | 1x | "
                  f"{side['batched'] / side['coordbench']:,.0f}x |"]
        for mode, rate in side["virtualhome"].items():
            lines.append(f"| VirtualHome 2.3.0, execute_one_step {mode} | {rate:,.0f} | "
                         f"{side['coordbench'] / rate:,.0f}x | {side['batched'] / rate:,.0f}x |")
    (args.out / "household_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'household_speed.md'}")


def batched_replay(examples, counted: list[int], batch: int):
    """Return a function that replays the examples' recorded actions in `HouseholdVecEnv`
    batches (each example in `batch / len(examples)` envs of its own, so that every env steps
    exactly its episode; each agent's menu is what it played) and returns (actions counted,
    seconds stepping)."""
    import numba
    import numpy as np

    from coordbench.envs.household.vec import HouseholdVecEnv

    rows = max(1, batch // len(examples))
    prepared = []
    for (_, task, spec, _, joint), count in zip(examples, counted, strict=True):
        menu = [list(dict.fromkeys(step[i] for step in joint)) for i in range(spec.team)]
        plan = np.array([[menu[i].index(a) for i, a in enumerate(step)] for step in joint],
                        np.int64)
        acts = np.ascontiguousarray(np.repeat(plan[:, None], rows, axis=1))
        env = HouseholdVecEnv([(task, None)], spec.team, batch=rows, observe="none",
                              menus=[menu], autoreset=False, conflict_set=spec.conflict_set)
        prepared.append((env, acts, rows * count))

    def replay() -> tuple[int, float]:
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            done, spent = 0, 0.0
            for env, acts, count in prepared:
                env.reset(tasks=np.zeros(env.batch, np.int64))
                start = time.perf_counter()
                for step in acts:
                    env.step(step)
                spent += time.perf_counter() - start
                done += count
            return done, spent
        finally:
            numba.set_num_threads(threads)

    return replay


def side_by_side(seconds: float, batch: int = 4096) -> dict:
    """Return coordbench's engine, its batched engine and VirtualHome's executor replaying
    the same recorded rule-team episodes on the MECoBench example tasks (agent-actions per
    second)."""
    from coordbench.envs.household.task import task_from_dict
    from coordbench.suites.mecobench.instances import PARALLEL_EXAMPLES, SEQUENTIAL_EXAMPLES

    raws = [(raw, structure) for path, structure in ((PARALLEL_EXAMPLES, "parallel"),
                                                     (SEQUENTIAL_EXAMPLES, "sequential"))
            for raw in json.loads(path.read_text())]
    examples = []
    for k, (raw, structure) in enumerate(raws):
        task = task_from_dict(raw, f"example {k}")
        (_, spec, seed, joint), = _episodes(
            [task], lambda t, s=structure, n=raw["num_agents"]: HouseholdSpec(s, n, "broadcast"))
        examples.append((raw, task, spec, seed, joint))

    def replayable(raw: dict, joint: list[list[Action]]) -> int:
        nodes = raw["init_graph"]["nodes"]
        cls = {node["id"]: node["class_name"] for node in nodes}
        rooms = {node["class_name"]: node["id"] for node in nodes if node["category"] == "Rooms"}
        return sum(vh_line(a, cls, rooms) is not None for step in joint for a in step)

    counted = [replayable(raw, joint) for raw, *_, joint in examples]

    def engine() -> tuple[int, float]:
        # every action is stepped (waits keep the state what it was), but only the ones
        # VirtualHome replays are counted, so both rates are over the same actions
        envs = [HouseholdEnv(task, spec.team, seed) for _, task, spec, seed, _ in examples]
        start = time.perf_counter()
        for env, (*_, joint) in zip(envs, examples, strict=True):
            for step in joint:
                env.step(step)
        return sum(counted), time.perf_counter() - start

    out: dict = {"tasks": len(examples), "coordbench": _stepping_rate(engine, seconds),
                 "batched": _stepping_rate(batched_replay(examples, counted, batch), seconds),
                 "batch": max(1, batch // len(examples)),
                 "actions": sum(len(s) for *_, joint in examples for s in joint)}
    vh = virtualhome()
    if vh is None:
        out["missing"] = ("VirtualHome is not installed here (`pip install --no-deps "
                          "virtualhome==2.3.0`): no side-by-side figures.")
        return out
    pairs = [(raw, joint) for raw, _, _, _, joint in examples]
    out["virtualhome"], counts = {}, None
    for mode, in_place in (("in_place=False", False), ("in_place=True", True)):
        replay = vh_replays(pairs, vh, in_place)
        out["virtualhome"][mode] = _stepping_rate(replay, seconds)
        counts = replay.counts
    out["replayed"], refused = counts
    out["refused_share"] = refused / max(1, out["replayed"])
    print(json.dumps({k: v for k, v in out.items()}, default=str))
    return out


if __name__ == "__main__":
    main()
