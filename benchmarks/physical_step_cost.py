"""Physical suite: where one control step's time goes, per task (scripted experts).

Usage:  python benchmarks/physical_step_cost.py [--rollouts 16] [--baseline-src DIR]
Writes benchmarks/results/physical_step_cost.json and .md.

--baseline-src DIR (a checkout of another coordbench version, e.g. a `git worktree` of an
older commit) also times that code's whole step on the same seeds, task by task in a child
process alternating with this code's, and adds the ratio of the two (same run, same load).

One process runs the nominal expert on seeds 1..N of every task (one lockstep batch) with
each layer's entry point wrapped in a CPU-time clock: physics (`mj_step`, 4 substeps),
sensing (`PhysicalEnv.sense`), the policy (`ExpertPolicy.act`, which includes its sensing),
phase scoring (`PhysicalEnv._score`) and the coupling monitor; "rest" is the runner's own
loop and the step's action handling. CPU time (not wall time) keeps the figures steady on
a shared machine; the clocks add about 1 us per wrapped call. Real-time factors are
simulated seconds (50 control steps each) per CPU second: the whole step, and physics alone
(the ceiling of any rewrite of the Python layer that keeps the physics).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import mujoco
from results_io import write_results

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.envs.physical import env as env_module
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import TASKS
from coordbench.suites.physical import runner

SPENT: collections.Counter = collections.Counter()


def clocked(f: Callable, key: str) -> Callable:
    """Return `f` adding its CPU time to SPENT[key]."""
    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            SPENT[key] += time.process_time() - t
    return wrapper


class ClockedMujoco:
    """The mujoco module as the environment sees it, with `mj_step` clocked."""

    def __getattr__(self, name: str):
        return getattr(mujoco, name)

    mj_step = staticmethod(clocked(mujoco.mj_step, "physics"))


def measure(task: str, rollouts: int) -> dict:
    """Return one task's per-step CPU microseconds by layer and its real-time factors."""
    SPENT.clear()
    start = time.process_time()
    trs, _ = runner.run(task, ExpertPolicy(0.0), list(range(1, rollouts + 1)))
    total = time.process_time() - start
    steps = sum(t.end.t for t in trs)
    us = {k: 1e6 * v / steps for k, v in SPENT.items()}
    policy = us.get("policy", 0.0)
    layers = {"physics": us.get("physics", 0.0), "sensing": us.get("sensing", 0.0),
              "policy_without_sensing": policy - us.get("sensing", 0.0),
              "scoring": us.get("scoring", 0.0), "monitor": us.get("monitor", 0.0)}
    layers["rest"] = 1e6 * total / steps - sum(layers.values())
    sim = steps * CONTROL_DT
    return {"task": task, "control_steps": steps, "cpu_s": round(total, 3),
            "us_per_step": {k: round(v, 1) for k, v in layers.items()},
            "x_real_time": round(sim / total, 1),
            "x_real_time_physics_only": round(sim / SPENT["physics"], 1),
            "python_share": round(1 - SPENT["physics"] / total, 3),
            "success": sum(t.end.success for t in trs) / len(trs)}


def whole_step(task: str, rollouts: int) -> float:
    """Return the unclocked real-time factor of one task's lockstep batch (this process's
    coordbench)."""
    start = time.process_time()
    trs, _ = runner.run(task, ExpertPolicy(0.0), list(range(1, rollouts + 1)))
    return sum(t.end.t for t in trs) * CONTROL_DT / (time.process_time() - start)


def child_whole_step(src: str, task: str, rollouts: int) -> float:
    """Return whole_step of the coordbench under `src`/src, run in a child process."""
    env = os.environ | {"PYTHONPATH": str(os.path.join(src, "src"))}
    out = subprocess.run([sys.executable, __file__, "--whole-step", task,
                          "--rollouts", str(rollouts)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["x_real_time"]


def side_by_side(src: str, task: str, rollouts: int, rounds: int = 3) -> dict:
    """Return both codes' whole-step real-time factors (medians of alternating rounds, the
    child process for both so start-up and imports match) and their ratio."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(child_whole_step(here, task, rollouts))
        theirs.append(child_whole_step(src, task, rollouts))
    med = sorted(a / b for a, b in zip(ours, theirs, strict=True))[rounds // 2]
    return {"ours": sorted(ours)[rounds // 2], "baseline": sorted(theirs)[rounds // 2],
            "ratio": round(med, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=16)
    ap.add_argument("--baseline-src", default=None)
    ap.add_argument("--whole-step", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.whole_step:  # the child process of side_by_side
        print(json.dumps({"x_real_time": whole_step(args.whole_step, args.rollouts)}))
        return
    load = os.getloadavg()[0]
    pairs = {task: side_by_side(args.baseline_src, task, args.rollouts)
             for task in TASKS} if args.baseline_src else {}
    env_module.mujoco = ClockedMujoco()
    env_module.PhysicalEnv.sense = clocked(env_module.PhysicalEnv.sense, "sensing")
    env_module.PhysicalEnv._score = clocked(env_module.PhysicalEnv._score, "scoring")
    runner.CouplingMonitor.update = clocked(runner.CouplingMonitor.update, "monitor")
    ExpertPolicy.act = clocked(ExpertPolicy.act, "policy")
    rows = [measure(task, args.rollouts) | ({"vs_baseline": pairs[task]} if pairs else {})
            for task in TASKS]
    for r in rows:
        print(r["task"], r["x_real_time"], r["x_real_time_physics_only"], flush=True)
    layers = list(rows[0]["us_per_step"])

    def median(key: str) -> float:
        xs = sorted(r[key] for r in rows)
        return (xs[len(xs) // 2] + xs[(len(xs) - 1) // 2]) / 2

    lines = ["# Physical suite: where a control step's time goes", "",
             f"`python benchmarks/physical_step_cost.py --rollouts {args.rollouts}`: the "
             f"nominal expert on seeds 1-{args.rollouts} of each task in one lockstep batch, "
             "one process; CPU microseconds per control step (one step of the whole team) by "
             "layer. x real time: simulated seconds per CPU second, for the whole step and "
             f"for physics alone. Load average {load:.1f} at the start (2 cores).", "",
             f"Median over tasks: {median('x_real_time'):.0f}x real time; physics alone "
             f"{median('x_real_time_physics_only'):.0f}x; the Python layer (sensing, "
             f"policy, scoring, monitor, loop) takes {100 * median('python_share'):.0f}% of "
             "the time.", "",
             "| task | " + " | ".join(layers) + " | x real time | physics only | Python share |",
             "|---|" + "---|" * (len(layers) + 3)]
    for r in rows:
        lines.append(f"| {r['task']} | " + " | ".join(f"{r['us_per_step'][k]:.0f}"
                                                      for k in layers) +
                     f" | {r['x_real_time']:.0f}x | {r['x_real_time_physics_only']:.0f}x | "
                     f"{100 * r['python_share']:.0f}% |")
    if pairs:
        ratios = sorted(p["ratio"] for p in pairs.values())
        sha = subprocess.run(["git", "-C", args.baseline_src, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "?"
        lines += ["", f"Side by side with the code of commit {sha} (unclocked whole "
                  "step, same seeds, child processes alternating, medians of 3 rounds): "
                  f"median speed-up {statistics.median(ratios):.2f}x "
                  f"({ratios[0]:.2f}-{ratios[-1]:.2f}x).", "",
                  "| task | this code (x real time) | baseline (x real time) | ratio |",
                  "|---|---|---|---|"]
        lines += [f"| {t} | {p['ours']:.0f}x | {p['baseline']:.0f}x | {p['ratio']:.2f}x |"
                  for t, p in pairs.items()]
    write_results("physical_step_cost", {"meta": vars(args) | {"load": load}, "tasks": rows},
                  lines)


if __name__ == "__main__":
    main()
