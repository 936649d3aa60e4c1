"""Learned physical baselines per task: training time, success and phase rates (Wilson
intervals) on the evaluation seeds, against the scripted expert's.

Usage:  python benchmarks/physical_learning.py [--tasks all] [--methods chunk,dagger,joint]
            [--demos 50] [--steps 5000] [--rollouts 100] [--workers 2] [--seeds 0]
Writes benchmarks/results/physical_learning.json and .md (`--stem` names others;
demonstrations, checkpoints and evaluation runs under runs/physical_learning; a finished
cell is not trained again). `--keep` measures only the given cells again and keeps every other
row of the existing results (same demonstrations, steps and rollouts); the table then says
which cells were measured again, and when. `--seeds 0,1,2` trains each cell once per
training seed (same demonstrations, same evaluation seeds): a row then pools the seeds'
rollouts and lists each seed's success, which shows how much of a cell's figure is the luck
of one training run (the Wilson interval covers only the evaluation seeds).

Methods (every one on state observations, local scope, one network per robot unless noted):
- bc:    single-step behaviour cloning (MLP), the classic baseline.
- chunk: the same MLP predicting a 20-step action chunk, queried every step and executed as
         ACT's temporal ensemble (weight exp(-0.1 i) from the oldest prediction).
- joint: the multi-agent baseline: one centralized network over both/all robots'
         observations predicting every robot's chunk, temporally ensembled as chunk.
- act:   the ACT-style CVAE transformer at its defaults but --steps (chunk 20, queried every
         step and temporally ensembled): slow on a CPU.
- dp:    the Diffusion-Policy-style denoiser at its defaults but --steps (chunk 16, predicting
         the clean chunk, temporally ensembled).
- dagger: chunk, plus 3 DAgger rounds (16 learner rollouts each) labelled by the scripted
         expert; dagger8: 8 rounds; joint_dagger: joint plus 4 rounds.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from results_io import RESULTS, write_results

from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.tasks import TASKS, get_task

ROOT = Path("runs/physical_learning")
METHODS = {
    "bc": ("bc", {}),
    "chunk": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1}),
    "joint": ("joint", {"execute": 1, "ensemble": 0.1}),
    "act": ("act", {}),
    "dp": ("dp", {}),
    "dagger": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1, "dagger": 3,
                      "dagger_episodes": 16}),
    "dagger8": ("bc", {"chunk": 20, "execute": 1, "ensemble": 0.1, "dagger": 8,
                       "dagger_episodes": 16}),
    "joint_dagger": ("joint", {"execute": 1, "ensemble": 0.1, "dagger": 4,
                               "dagger_episodes": 16}),
}


def one(job: tuple[str, str, int, int, int, int]) -> dict:
    """Train (unless its checkpoint exists) and evaluate one (task, method, training seed);
    return its row."""
    from coordbench.core.rundir import RunDir
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.learn.imitation import default_config, fit_on
    from coordbench.report.physical_report import main_summary
    from coordbench.suites.physical.demos import make_demos
    from coordbench.suites.physical.suite import evaluate_main

    task, method, n_demos, steps, rollouts, seed = job
    demos = ROOT / f"demos_n{n_demos}"
    if not (demos / f"{task}_train.npz").is_file():
        make_demos(task, n_demos + max(1, n_demos // 5), demos)  # 5/6 train
    algo, kw = METHODS[method]
    cfg = default_config(task, algo, get_task(task).n_robots, steps=steps, seed=seed, **kw)
    name = f"{task}_{method}_n{n_demos}_s{steps}" + (f"_seed{seed}" if seed else "")
    ckpt = ROOT / "policies" / f"{name}.pt"
    info = ckpt.with_suffix(".txt")
    if not ckpt.is_file():
        t0 = time.perf_counter()
        res, blob = fit_on(cfg, load_demos(demos / f"{task}_train.npz"), None)
        write_atomic_bytes(ckpt, blob)
        info.write_text(f"{time.perf_counter() - t0:.1f}\n")
    train_s = float(info.read_text())
    # one run directory per job: a run directory has one writer at a time
    run_dir = RunDir.create_or_open(ROOT / "eval" / name, "benchmarks/physical_learning.py")
    s = main_summary(evaluate_main(task, str(ckpt), rollouts, run_dir))
    return {"task": task, "method": method, "seed": seed, "train_s": round(train_s, 1),
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
    ap.add_argument("--seeds", default="0", help="training seeds, e.g. 0,1,2 (one policy each)")
    ap.add_argument("--stem", default="physical_learning", help="results file name")
    ap.add_argument("--cells", default=None, help="TASK:METHOD,... instead of every task x "
                                                  "method")
    ap.add_argument("--keep", action="store_true",
                    help="measure only these cells again; keep the other rows of the "
                         "existing results measured with the same demos, steps and rollouts")
    args = ap.parse_args()
    tasks = list(TASKS) if args.tasks == "all" else args.tasks.split(",")
    methods = args.methods.split(",")
    pairs = [(t, m) for m in methods for t in tasks]
    if args.cells:
        pairs = [tuple(c.split(":")) for c in args.cells.split(",")]
        tasks = list(dict.fromkeys(t for t, _ in pairs))
        methods = list(dict.fromkeys(m for _, m in pairs))
    unknown = sorted({t for t, _ in pairs} - set(TASKS)) + \
        sorted({m for _, m in pairs} - set(METHODS))
    if unknown:
        raise SystemExit(f"unknown task or method: {', '.join(unknown)} (tasks: "
                         f"{', '.join(TASKS)}; methods: {', '.join(METHODS)})")
    try:
        seeds = sorted({int(x) for x in args.seeds.split(",")})
    except ValueError:
        raise SystemExit(f"--seeds takes comma-separated integers, got {args.seeds!r}") from None
    earlier = earlier_results(args) if args.keep else None
    kept: list[dict] = []
    if earlier is not None:
        again = set(pairs)
        kept = [r for r in earlier["rows"] if (r["task"], r["method"]) not in again]
        # the earlier table's order, then any new task or method after it
        tasks = list(dict.fromkeys([r["task"] for r in earlier["rows"]] + tasks))
        methods = list(dict.fromkeys([r["method"] for r in earlier["rows"]] + methods))
    (ROOT / "policies").mkdir(parents=True, exist_ok=True)
    # method-major: every task's first method finishes before the next method starts
    jobs = [(t, m, args.demos, args.steps, args.rollouts, seed) for t, m in pairs
            for seed in seeds]
    start = time.perf_counter()
    rows: list[dict] = list(kept)
    done: dict[tuple[str, str], list[dict]] = {}
    with ProcessPoolExecutor(args.workers) as ex:
        for fut in as_completed([ex.submit(one, job) for job in jobs]):
            r = fut.result()
            done.setdefault((r["task"], r["method"]), []).append(r)
            if len(done[r["task"], r["method"]]) < len(seeds):
                continue
            rows.append(pooled(done[r["task"], r["method"]]))
            rows.sort(key=lambda r: (tasks.index(r["task"]), methods.index(r["method"])))
            report(args, tasks, rows, time.perf_counter() - start, len(pairs) + len(kept),
                   earlier)


def pooled(per_seed: list[dict]) -> dict:
    """Return one cell's row from its rows per training seed: the rates pooled over every
    seed's rollouts (Wilson intervals), the mean training time, and each seed's success."""
    from coordbench.core.stats import wilson_ci

    per_seed = sorted(per_seed, key=lambda r: r["seed"])
    if len(per_seed) == 1:
        return per_seed[0]
    row = {"task": per_seed[0]["task"], "method": per_seed[0]["method"],
           "seeds": [r["seed"] for r in per_seed],
           "train_s": round(sum(r["train_s"] for r in per_seed) / len(per_seed), 1),
           "per_seed": [r["success"]["mean"] for r in per_seed]}
    for k in ("success", "p1", "p2", "p3"):
        hits = sum(round(r[k]["mean"] * r[k]["n"]) for r in per_seed)
        row[k] = wilson_ci(hits, sum(r[k]["n"] for r in per_seed)).as_dict()
    return row


def earlier_results(args: argparse.Namespace) -> dict:
    """Return the existing results of `--stem` (meta and rows); exit with a one-line error
    if there are none or they were measured with other settings (their rows would not be
    comparable)."""
    path = RESULTS / f"{args.stem}.json"
    if not path.is_file():
        raise SystemExit(f"--keep: no results at {path} to keep")
    old = json.loads(path.read_text())
    settings = ("demos", "steps", "rollouts", "seeds")
    if any(old["meta"].get(k, "0" if k == "seeds" else None) != getattr(args, k)
           for k in settings):
        raise SystemExit(f"--keep: {path.name} was measured with "
                         + ", ".join(f"--{k} {old['meta'].get(k)}" for k in settings)
                         + "; run with the same settings")
    return old


def report(args: argparse.Namespace, tasks: list[str], rows: list[dict], wall: float,
           total: int, earlier: dict | None) -> None:
    """Write the results so far (every finished cell; the table says how many)."""
    best = {t: max((r for r in rows if r["task"] == t), key=lambda r: r["success"]["mean"])
            for t in tasks if any(r["task"] == t for r in rows)}
    reached = sorted(t for t, r in best.items() if r["success"]["mean"] >= 0.5)
    # with --keep the table stays the earlier run's, some of its cells measured again
    first = earlier["meta"] if earlier else vars(args)
    later = list(first.get("measured_later", []))
    if earlier:
        later.append({"cells": args.cells or f"--tasks {args.tasks} --methods {args.methods}",
                      "wall_s": round(wall, 1), "date": time.strftime("%Y-%m-%d")})
    many = any("per_seed" in r for r in rows)
    lines = ["# Physical suite: learned baselines per task", "",
             "`python benchmarks/physical_learning.py "
             + (f"--cells {first['cells']}" if first.get("cells") else
                f"--tasks {first['tasks']} --methods {first['methods']}")
             + f" --demos {args.demos} --steps {args.steps} --rollouts {args.rollouts}"
             + (f" --seeds {args.seeds}" if args.seeds != "0" else "")
             + f"`: {args.demos} noisy-expert training demonstrations per task, "
             f"{args.steps} gradient steps per network (one CPU thread), evaluated on seeds "
             f"1-{args.rollouts} from a fresh reset. Rates are cumulative phase rates with "
             f"95% Wilson intervals; train s is the wall time of training on one thread "
             f"(two jobs ran side by side; {first.get('wall_s', wall):.0f} s in all; "
             f"{len(rows)} of {total} cells done)."
             + "".join(f" Measured again on {x['date']} with `--keep` ({x['wall_s']:.0f} s): "
                       f"{x['cells']}." for x in later), "",
             f"Best method at >= 50% success on {len(reached)} of {len(tasks)} tasks: "
             f"{', '.join(reached) or 'none'}.", "",
             *([f"Training seeds {args.seeds}: each row pools the seeds' rollouts; its "
                "last column is each seed's success, and train s is their mean.", ""]
               if many else []),
             "| task | method | train s | success | p1 | p2 | p3 |"
             + (" success per training seed |" if many else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if many else "")]
    for r in rows:
        lines.append(f"| {r['task']} | {r['method']} | {r['train_s']:.0f} | " +
                     " | ".join(fmt(r[k]) for k in ("success", "p1", "p2", "p3")) + " |"
                     + (" " + " ".join(f"{100 * x:.0f}%" for x in r.get("per_seed", []))
                        + " |" if many else ""))
    meta = (first | {"measured_later": later} if earlier
            else vars(args) | {"wall_s": round(wall, 1)})
    write_results(args.stem, {"meta": meta,
                                        "rows": rows}, lines)


if __name__ == "__main__":
    main()
