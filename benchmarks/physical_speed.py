"""Physical suite speed: scripted-expert evaluation of every task over seeds 1..N.

Usage:  python benchmarks/physical_speed.py [--rollouts 100] [--workers 2]
Writes benchmarks/results/physical_speed.json and .md.

Per task: wall time of N expert rollouts (lockstep batches of 16, `--workers` processes, one
task per process at a time), rollouts and 50 Hz control steps per second, and the success
rate. Also the bare physics rate (mj_step per second) of each task's model, measured in this
process, and one egocentric frame's render time. Absolute times depend on the machine's
load; the report gives the load average at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def evaluate(task: str, rollouts: int) -> dict:
    """Run the expert on seeds 1..N; return timing and success."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run

    start = time.perf_counter()
    steps = wins = 0
    for a in range(1, rollouts + 1, 16):
        trs, _ = run(task, ExpertPolicy(0.0), list(range(a, min(a + 16, rollouts + 1))))
        steps += sum(t.end.t for t in trs)
        wins += sum(t.end.success for t in trs)
    wall = time.perf_counter() - start
    return {"task": task, "rollouts": rollouts, "wall_s": wall, "success": wins / rollouts,
            "control_steps_per_s": steps / wall, "rollouts_per_s": rollouts / wall}


def physics_rate(task: str, seconds: float = 2.0) -> float:
    """Return bare mj_step calls per second of the task's model after reset."""
    import mujoco

    from coordbench.envs.physical.env import PhysicalEnv
    from coordbench.envs.physical.tasks import get_task

    env = PhysicalEnv(get_task(task))
    env.reset(1)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mujoco.mj_step(env.model, env.data, nstep=100)
        n += 100
    return n / (time.perf_counter() - start)


def render_ms(task: str, size: int = 64, frames: int = 50) -> float:
    """Return milliseconds per egocentric frame."""
    from coordbench.envs.physical.env import PhysicalEnv
    from coordbench.envs.physical.tasks import get_task

    env = PhysicalEnv(get_task(task))
    env.reset(1)
    env.render_ego(0, size, size)
    start = time.perf_counter()
    for _ in range(frames):
        env.render_ego(0, size, size)
    env.close()
    return 1000 * (time.perf_counter() - start) / frames


def main() -> None:
    from coordbench.envs.physical.tasks import TASKS

    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(evaluate, list(TASKS), [args.rollouts] * len(TASKS)))
    total = time.perf_counter() - start
    for r in rows:
        r["physics_steps_per_s"] = physics_rate(r["task"])
        r["render_ms_64px"] = render_ms(r["task"])
    per_task = total / len(rows)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "load_avg_at_start": load,
            "workers": args.workers, "total_wall_s": total}
    (out / "physical_speed.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                        indent=1) + "\n")
    lines = ["# Physical suite: expert evaluation speed", "",
             f"`python benchmarks/physical_speed.py --rollouts {args.rollouts} --workers "
             f"{args.workers}`; load average {load:.1f} at the start (2-core machine).", "",
             f"All {len(rows)} tasks x {args.rollouts} seeds: **{total:.0f} s wall** "
             f"({total / 60:.1f} min) on {args.workers} processes ({per_task:.0f} s per task "
             "on average). The nominal expert must succeed in >= 90% of seeds on every task.",
             "",
             "| task | success | wall s (one process) | rollouts/s | control steps/s | "
             "physics steps/s | ego frame 64 px (ms) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['success']:.0%} | {r['wall_s']:.1f} | "
                     f"{r['rollouts_per_s']:.1f} | {r['control_steps_per_s']:,.0f} | "
                     f"{r['physics_steps_per_s']:,.0f} | {r['render_ms_64px']:.1f} |")
    (out / "physical_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
