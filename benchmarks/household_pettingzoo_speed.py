"""The household PettingZoo wrapper's speed against the engine's native step, side by side.

Usage:  python benchmarks/household_pettingzoo_speed.py [--seconds 3]
Writes benchmarks/results/household_pettingzoo_speed.json and .md.

A random policy over the masks plays the wrapper (`HouseholdParallelEnv`: every agent's menu
entry features and masks built after each step) on two families, household v1 parallel tasks
and construct D1 instances, teams of 2; its joint actions are recorded and replayed by
`HouseholdEnv.step` alone (the native rate). Figures are agent-steps per second, one process.

`engine="batched"`: the same wrapper and play on the numba kernels (identical observations,
rewards and infos). Batched: `HouseholdVecEnv` on the same tasks, the same observations
(entry features and masks, or masks only), random masked play drawn from its own masks,
batch 1 and `--batch`, one thread; `step()` is timed (observation building included),
drawing the actions is not.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from pathlib import Path

import numpy as np

from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.menu import construct_nodes
from coordbench.envs.household.pettingzoo_env import HouseholdParallelEnv
from coordbench.suites.constructs.episode import load_instance
from coordbench.suites.constructs.instances import select
from coordbench.suites.mecobench.instances import load_suite


def families():
    """Return {name: (episodes, conflict set, household menus)}."""
    tasks = [t for t in load_suite("v1") if t.structure == "parallel"][:24]
    d1 = []
    for raw in select("rep240", "D1", 2):
        task, info = load_instance(raw, "x")
        d1.append((task, construct_nodes(info)))
    return {"household v1 parallel": ([(t, None) for t in tasks], "paper", True),
            "constructs D1": (d1, "with_close", False)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--batch", type=int, default=4096)
    args = ap.parse_args()
    rows = []
    for name, (eps, conflicts, household) in families().items():
        env = HouseholdParallelEnv(eps, 2, 0, conflicts, household=household)
        rng = random.Random(0)
        recorded, steps, start = [], 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            obs, _ = env.reset()
            task = env.env.task
            joint_seq = []
            while env.agents:
                acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]).tolist()))
                        for a in env.agents}
                joint_seq.append([env.menus[i][acts[a]]
                                  for i, a in enumerate(env.possible_agents)])
                obs, *_ = env.step(acts)
                steps += 1
            recorded.append((task, joint_seq))
        wrapper = 2 * steps / (time.perf_counter() - start)
        fresh = [(HouseholdEnv(task, 2, 0, conflicts), seq) for task, seq in recorded]
        start = time.perf_counter()
        for native, seq in fresh:
            for joint in seq:
                native.step(joint)
        engine = 2 * steps / (time.perf_counter() - start)
        rows.append({"family": name, "menu_size": env.size, "wrapper_agent_steps_per_s": wrapper,
                     "engine_agent_steps_per_s": engine, "ratio": engine / wrapper,
                     "wrapper_batched_agent_steps_per_s": wrapper_rate(
                         HouseholdParallelEnv(eps, 2, 0, conflicts, household=household,
                                              engine="batched"), args.seconds),
                     **batched(eps, conflicts, household, args.batch, args.seconds)})
        print(json.dumps(rows[-1]))
    meta = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
            "seconds": args.seconds}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "household_pettingzoo_speed.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = ["# Household PettingZoo wrapper against the engine's native step", "",
             f"{meta['date']}, python {meta['python']}; random masked play, teams of 2, "
             "agent-steps per second in one process (the engine replays the same actions).",
             "", "| family | menu entries | wrapper | wrapper, engine=batched | engine | "
             "engine / wrapper |", "|---|---|---|---|---|---|"]
    for r in rows:
        fast = r["wrapper_batched_agent_steps_per_s"]
        lines.append(f"| {r['family']} | {r['menu_size']} | "
                     f"{r['wrapper_agent_steps_per_s']:,.0f} | {fast:,.0f} "
                     f"({fast / r['wrapper_agent_steps_per_s']:.0f}x) | "
                     f"{r['engine_agent_steps_per_s']:,.0f} | {r['ratio']:.0f}x |")
    lines += ["", "## The batched engine (HouseholdVecEnv), one thread, same observations", "",
              "Agent-steps per second of `step()` (observations rebuilt after every step), "
              "random masked play; the last column divides by the wrapper's rate above.", "",
              "| family | observation | batch | agent-steps / s | vs wrapper |",
              "|---|---|---|---|---|"]
    for r in rows:
        for key, rate in r["batched"].items():
            observe, batch = key.split("@")
            lines.append(f"| {r['family']} | {observe} | {int(batch):,} | {rate:,.0f} | "
                         f"{rate / r['wrapper_agent_steps_per_s']:,.0f}x |")
    (args.out / "household_pettingzoo_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'household_pettingzoo_speed.md'}")


def wrapper_rate(env: HouseholdParallelEnv, seconds: float) -> float:
    """Return agent-steps per second of random masked play through the PettingZoo API."""
    rng = random.Random(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        obs, _ = env.reset()
        while env.agents:
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"])
                                                  .tolist())) for a in env.agents})
            steps += 1
    return 2 * steps / (time.perf_counter() - start)


def batched(eps, conflicts: str, household: bool, batch: int, seconds: float) -> dict:
    """Return {"batched": {"OBSERVE@BATCH": agent-steps per second}} of `HouseholdVecEnv`
    on one thread (features at batch 1 and `batch`, masks only at `batch`)."""
    import numba

    from coordbench.envs.household.vec import HouseholdVecEnv

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    out = {}
    try:
        for observe, b in (("features", 1), ("features", batch), ("masks", batch)):
            env = HouseholdVecEnv(eps, 2, batch=b, seed=0, conflict_set=conflicts,
                                  household=household, observe=observe)
            env.reset()
            rng = np.random.default_rng(0)
            env.step(env.random_valid_actions(rng))
            steps, spent = 0, 0.0
            while spent < seconds:
                acts = env.random_valid_actions(rng)
                start = time.perf_counter()
                env.step(acts)
                spent += time.perf_counter() - start
                steps += 1
            out[f"{observe}@{b}"] = 2 * b * steps / spent
    finally:
        numba.set_num_threads(threads)
    return {"batched": out}


if __name__ == "__main__":
    main()
