"""Learned physical baselines per task: training time, success and phase rates (Wilson
intervals) on the evaluation seeds, against the scripted expert's.

Usage:  python benchmarks/physical_learning.py [--tasks all] [--methods chunk,dagger,joint]
            [--demos 50] [--steps 5000] [--rollouts 100] [--workers 2]
Writes benchmarks/results/physical_learning.json and .md (`--stem` names others;
demonstrations, checkpoints and evaluation runs under runs/physical_learning; a finished
cell is not trained again).

Methods (every one on state observations, local scope, one network per robot unless noted):
- bc:    single-step behaviour cloning (MLP), the classic baseline.
- chunk: the same MLP predicting a 20-step action chunk, queried every step and executed as
         ACT's temporal ensemble (weight exp(-0.1 i) from the oldest prediction).
- joint: the multi-agent baseline: one centralized network over both/all robots'
         observations predicting every robot's chunk, temporally ensembled as chunk.
- act:   the ACT-style CVAE transformer (chunk 20, 10 executed): slow on a CPU.
- dagger: chunk, plus 3 DAgger rounds (16 learner rollouts each) labelled by the scripted
         expert; dagger8: 8 rounds; joint_dagger: joint plus 4 rounds.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from results_io import write_results

from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.tasks import TASKS, get_task

ROOT = Path("runs/physical_learning")
METHODS = {
    "bc": ("bc", {}),
    "chunk": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1}),
    "joint": ("joint", {"execute": 1, "ensemble": 0.1}),
    "act": ("act", {}),
    "dagger": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1, "dagger": 3,
                      "dagger_episodes": 16}),
    "dagger8": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1, "dagger": 8,
                       "dagger_episodes": 16}),
    "joint_dagger": ("joint", {"execute": 1, "ensemble": 0.1, "dagger": 4,
                               "dagger_episodes": 16}),
}


def one(job: tuple[str, str, int, int, int]) -> dict:
    """Train (unless its checkpoint exists) and evaluate one (task, method); return its row."""
    from coordbench.core.rundir import RunDir
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.learn.imitation import default_config, fit_on
    from coordbench.report.physical_report import main_summary
    from coordbench.suites.physical.demos import make_demos
    from coordbench.suites.physical.suite import evaluate_main

    task, method, n_demos, steps, rollouts = job
    demos = ROOT / f"demos_n{n_demos}"
    if not (demos / f"{task}_train.npz").is_file():
        make_demos(task, n_demos + max(1, n_demos // 5), demos)  # 5/6 train
    algo, kw = METHODS[method]
    cfg = default_config(task, algo, get_task(task).n_robots, steps=steps, **kw)
    ckpt = ROOT / "policies" / f"{task}_{method}_n{n_demos}_s{steps}.pt"
    info = ckpt.with_suffix(".txt")
    if not ckpt.is_file():
        t0 = time.perf_counter()
        res, blob = fit_on(cfg, load_demos(demos / f"{task}_train.npz"), None)
        write_atomic_bytes(ckpt, blob)
        info.write_text(f"{time.perf_counter() - t0:.1f}\n")
    train_s = float(info.read_text())
    # one run directory per job: a run directory has one writer at a time
    run_dir = RunDir.create_or_open(ROOT / "eval" / f"{task}_{method}_n{n_demos}_s{steps}",
                                    "benchmarks/physical_learning.py")
    s = main_summary(evaluate_main(task, str(ckpt), rollouts, run_dir))
    return {"task": task, "method": method, "train_s": round(train_s, 1),
            "success": s["success"].as_dict(),
            **{p: s["phases"][p].as_dict() for p in ("p1", "p2", "p3")}}


def fmt(e: dict) -> str:
    """Return a rate and its Wilson interval as percentages."""
    return f"{100 * e['mean']:.0f}% [{100 * e['lo']:.0f}, {100 * e['hi']:.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--methods", default="chunk,dagger,joint")
    ap.add_argument("--demos", type=int, default=50)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--rollouts", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stem", default="physical_learning", help="results file name")
    ap.add_argument("--cells", default=None, help="TASK:METHOD,... instead of every task x "
                                                  "method")
    args = ap.parse_args()
    tasks = list(TASKS) if args.tasks == "all" else args.tasks.split(",")
    methods = args.methods.split(",")
    pairs = [(t, m) for m in methods for t in tasks]
    if args.cells:
        pairs = [tuple(c.split(":")) for c in args.cells.split(",")]
        tasks = list(dict.fromkeys(t for t, _ in pairs))
        methods = list(dict.fromkeys(m for _, m in pairs))
    (ROOT / "policies").mkdir(parents=True, exist_ok=True)
    # method-major: every task's first method finishes before the next method starts
    jobs = [(t, m, args.demos, args.steps, args.rollouts) for t, m in pairs]
    start = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(args.workers) as ex:
        for fut in as_completed([ex.submit(one, job) for job in jobs]):
            rows.append(fut.result())
            rows.sort(key=lambda r: (tasks.index(r["task"]), methods.index(r["method"])))
            report(args, tasks, rows, time.perf_counter() - start, len(jobs))


def report(args: argparse.Namespace, tasks: list[str], rows: list[dict], wall: float,
           total: int) -> None:
    """Write the results so far (every finished cell; the table says how many)."""
    best = {t: max((r for r in rows if r["task"] == t), key=lambda r: r["success"]["mean"])
            for t in tasks if any(r["task"] == t for r in rows)}
    reached = sorted(t for t, r in best.items() if r["success"]["mean"] >= 0.5)
    lines = ["# Physical suite: learned baselines per task", "",
             "`python benchmarks/physical_learning.py "
             + (f"--cells {args.cells}" if args.cells else
                f"--tasks {args.tasks} --methods {args.methods}")
             + f" --demos {args.demos} --steps {args.steps} --rollouts "
             f"{args.rollouts}`: {args.demos} noisy-expert training demonstrations per task, "
             f"{args.steps} gradient steps per network (one CPU thread), evaluated on seeds "
             f"1-{args.rollouts} from a fresh reset. Rates are cumulative phase rates with "
             f"95% Wilson intervals; train s is the wall time of training on one thread "
             f"(two jobs ran side by side; {wall:.0f} s in all; {len(rows)} of {total} "
             f"cells done).", "",
             f"Best method at >= 50% success on {len(reached)} of {len(tasks)} tasks: "
             f"{', '.join(reached) or 'none'}.", "",
             "| task | method | train s | success | p1 | p2 | p3 |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['method']} | {r['train_s']:.0f} | " +
                     " | ".join(fmt(r[k]) for k in ("success", "p1", "p2", "p3")) + " |")
    write_results(args.stem, {"meta": vars(args) | {"wall_s": round(wall, 1)},
                                        "rows": rows}, lines)


if __name__ == "__main__":
    main()
