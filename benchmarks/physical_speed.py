"""Physical suite speed: scripted-expert evaluation of every task over seeds 1..N, for the
CoBot and the G1 humanoids side by side in one run.

Usage:  python benchmarks/physical_speed.py [--rollouts 100] [--workers 2]
            [--embodiment cobot,g1] [--g1-model PATH]
Writes benchmarks/results/physical_speed.json and .md.

Per task and embodiment: wall time of N expert rollouts (lockstep batches of 16, `--workers`
processes, one task per process at a time), rollouts and 50 Hz control steps per second, the
real-time factor of a whole rollout in one process (simulated seconds per wall second: the
experts' inverse kinematics included), and the success rate. Also the bare physics rate
(mj_step per second) of each task's model and its real-time factor, measured in this
process, and one egocentric frame's render time. Absolute times depend on the machine's
load; the report gives the load average at the start. The G1's model files: --g1-model, else
$COORDBENCH_G1_MODEL, else the shared copy beside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SHARED_G1 = Path(__file__).resolve().parents[2] / "shared" / "assets" / "unitree_g1"


def evaluate(task: str, rollouts: int, embodiment: str = "cobot") -> dict:
    """Run the expert on seeds 1..N; return timing and success."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.envs.physical.scene import CONTROL_DT
    from coordbench.suites.physical.episode import run

    start = time.perf_counter()
    steps = wins = 0
    for a in range(1, rollouts + 1, 16):
        trs, _ = run(task, ExpertPolicy(0.0), list(range(a, min(a + 16, rollouts + 1))),
                     embodiment=embodiment)
        steps += sum(t.end.t for t in trs)
        wins += sum(t.end.success for t in trs)
    wall = time.perf_counter() - start
    return {"task": task, "embodiment": embodiment, "rollouts": rollouts, "wall_s": wall,
            "success": wins / rollouts, "control_steps_per_s": steps / wall,
            "rollouts_per_s": rollouts / wall, "real_time_x": steps * CONTROL_DT / wall}


def physics_rate(task: str, embodiment: str = "cobot", seconds: float = 2.0) -> float:
    """Return bare mj_step calls per second of the task's model after reset."""
    import mujoco

    from coordbench.envs.physical.embodiment import make_env

    env = make_env(task, embodiment)
    env.reset(1)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mujoco.mj_step(env.model, env.data, nstep=100)
        n += 100
    return n / (time.perf_counter() - start)


def render_ms(task: str, embodiment: str = "cobot", size: int = 64, frames: int = 50) -> float:
    """Return milliseconds per egocentric frame."""
    from coordbench.envs.physical.embodiment import make_env

    env = make_env(task, embodiment)
    env.reset(1)
    env.render_ego(0, size, size)
    start = time.perf_counter()
    for _ in range(frames):
        env.render_ego(0, size, size)
    env.close()
    return 1000 * (time.perf_counter() - start) / frames


def main() -> None:
    from coordbench.envs.physical.scene import TIMESTEP
    from coordbench.envs.physical.tasks import G1_TASKS, TASKS

    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--embodiment", default="cobot,g1")
    ap.add_argument("--g1-model", default=os.environ.get("COORDBENCH_G1_MODEL")
                    or str(SHARED_G1))
    args = ap.parse_args()
    os.environ["COORDBENCH_G1_MODEL"] = args.g1_model  # the workers read it too
    kinds = args.embodiment.split(",")
    items = [(t, k) for k in kinds for t in (TASKS if k == "cobot" else G1_TASKS)]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(evaluate, [t for t, _ in items], [args.rollouts] * len(items),
                             [k for _, k in items]))
    total = time.perf_counter() - start
    for r in rows:
        r["physics_steps_per_s"] = physics_rate(r["task"], r["embodiment"])
        r["physics_real_time_x"] = r["physics_steps_per_s"] * TIMESTEP
        r["render_ms_64px"] = render_ms(r["task"], r["embodiment"])
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "load_avg_at_start": load,
            "workers": args.workers, "total_wall_s": total,
            "g1_model": Path(args.g1_model).name}
    (out / "physical_speed.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                        indent=1) + "\n")
    lines = ["# Physical suite: expert evaluation speed, CoBot and G1", "",
             f"`python benchmarks/physical_speed.py --rollouts {args.rollouts} --workers "
             f"{args.workers} --embodiment {args.embodiment}`; load average {load:.1f} at the "
             "start (2-core machine); both embodiments in the same run.", "",
             f"{len(rows)} task x embodiment rows x {args.rollouts} seeds: **{total:.0f} s "
             f"wall** ({total / 60:.1f} min) on {args.workers} processes. The nominal expert "
             "must succeed in >= 90% of seeds on every task. *Real time x*: simulated seconds "
             "per wall second of whole rollouts in one process (the G1's inverse kinematics "
             "included); *physics x*: the simulation step alone.", "",
             "| task | robots | success | wall s (one process) | rollouts/s | control "
             "steps/s | real time x | physics steps/s | physics x | ego frame 64 px (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['embodiment']} | {r['success']:.0%} | "
                     f"{r['wall_s']:.1f} | {r['rollouts_per_s']:.1f} | "
                     f"{r['control_steps_per_s']:,.0f} | {r['real_time_x']:.0f} | "
                     f"{r['physics_steps_per_s']:,.0f} | {r['physics_real_time_x']:.0f} | "
                     f"{r['render_ms_64px']:.1f} |")
    (out / "physical_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
