"""The paper's ablation of observation scope x policy sharing, on our physical tasks.

Usage:  python benchmarks/physical_ablation.py [--tasks CoCarry,CoPouring] [--method chunk]
            [--steps 5000] [--demos 60] [--rollouts 100] [--workers 2] [--keep]
Writes benchmarks/results/physical_ablation.json and .md (runs, demonstrations and checkpoints
under runs/ablation; everything resumes).

Per task: demonstrations (noisy expert, 5/6 train), then one policy per cell of scope (local =
own observation, global = every robot's) x sharing (separate networks, one shared network, one
shared network with a one-hot agent id), each evaluated on seeds 1..N from a fresh reset. The
scripted expert with and without operator noise are reference rows on the same seeds.
`--method` names a recipe of `coordbench.reproduce.cohub.METHODS` (chunk: the action-chunking
policy with temporal ensembling; bc: single-step cloning; dp: the diffusion policy).
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from results_io import RESULTS, write_results

from coordbench.core.rundir import RunDir
from coordbench.envs.physical.tasks import get_task
from coordbench.learn.imitation import default_config
from coordbench.report.physical_report import main_summary
from coordbench.reproduce.cohub import METHODS, PAPER_T3, table3_findings
from coordbench.reproduce.study import show
from coordbench.suites.physical.demos import make_demos
from coordbench.suites.physical.learning import train_policy
from coordbench.suites.physical.suite import evaluate_main

CELLS = (("local", "separate", False), ("local", "shared", False), ("local", "shared", True),
         ("global", "separate", False), ("global", "shared", False), ("global", "shared", True))


def cell_name(scope: str, sharing: str, agent_id: bool) -> str:
    """Return a cell's label, e.g. local/shared+id."""
    return f"{scope}/{sharing}{'+id' if agent_id else ''}"


def row(label: str, trs) -> dict:
    """Return success and cumulative phase rates (mean, ci95, n) of a set of rollouts."""
    s = main_summary(trs)
    return {"policy": label, "success": s["success"].as_dict(),
            **{p: s["phases"][p].as_dict() for p in ("p1", "p2", "p3")},
            "drops": s["coupling"]["drops"].as_dict()}


def cell_row(job: tuple) -> tuple[str, int, dict]:
    """Train (unless on disk) and evaluate one (task, cell) or reference policy; return
    (task, its row's place, the row). Each job has its own run directory, so jobs run in
    parallel processes."""
    task, k, who, method, steps, rollouts = job
    root = Path("runs/ablation")
    # global cells read the robot's own observation first (files from before kept robot order)
    suffix = "_own_first" if not isinstance(who, str) and who[0] == "global" else ""
    run_dir = RunDir.create_or_open(root / "eval" / f"{task}_{k}{suffix}",
                                    "physical_ablation.py")
    if isinstance(who, str):
        return task, k, row(who, evaluate_main(task, who, rollouts, run_dir))
    scope, sharing, agent_id = who
    ckpt = root / "policies" / f"{task}_{method}_{scope}_{sharing}" \
        f"{'_id' if agent_id else ''}_{steps}{suffix}.pt"
    if not ckpt.is_file():
        algo, kw = METHODS[method]
        cfg = default_config(task, algo, get_task(task).n_robots, scope=scope,
                             sharing=sharing, agent_id=agent_id, steps=steps, **kw)
        train_policy(cfg, root / "demos", ckpt)
    trs = evaluate_main(task, str(ckpt), rollouts, run_dir)
    return task, k, row(f"{method} {cell_name(scope, sharing, agent_id)}", trs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="CoCarry,CoPouring")
    ap.add_argument("--method", default="chunk", choices=[m for m in METHODS if m != "joint"])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--demos", type=int, default=60)
    ap.add_argument("--rollouts", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default=None,
                    help="comma-separated cells (e.g. global/shared,global/shared+id) to "
                         "measure again; the task's other rows come from the kept results")
    ap.add_argument("--keep", action="store_true",
                    help="keep the tasks already in the results that were measured with the "
                         "same method, steps, demonstrations and rollouts")
    args = ap.parse_args()
    tasks = args.tasks.split(",")
    whos: list = ["expert", "expert_noisy", *CELLS]
    only = None if args.only is None else set(args.only.split(","))
    if only is not None:
        unknown = only - {cell_name(*c) for c in CELLS}
        if unknown or not args.keep:
            raise SystemExit(f"--only takes cells of {[cell_name(*c) for c in CELLS]} and "
                             f"needs --keep (got {sorted(unknown) or args.only})")
    meta = {"method": args.method, "steps": args.steps, "demos": args.demos,
            "rollouts": args.rollouts}
    results: dict[str, list[dict]] = {}
    earlier = RESULTS / "physical_ablation.json"
    if args.keep and earlier.is_file():
        old = json.loads(earlier.read_text())
        if old["meta"] == meta:
            results = old["tasks"]
    if only is not None:
        for t in tasks:
            if len(results.get(t, [])) != len(whos):
                raise SystemExit(f"--only: no earlier results of {t} with these settings to "
                                 "complete; run its every cell first")
    demos = Path("runs/ablation/demos")
    for task in tasks:
        if not (demos / f"{task}_train.npz").is_file():
            make_demos(task, args.demos, demos)
    jobs = [(t, k, w, args.method, args.steps, args.rollouts) for t in tasks
            for k, w in enumerate(whos)
            if only is None or (not isinstance(w, str) and cell_name(*w) in only)]
    found: dict[tuple[str, int], dict] = {}
    with ProcessPoolExecutor(args.workers) as ex:
        for task, k, r in ex.map(cell_row, jobs):
            found[task, k] = r
            print(task, r["policy"], r["success"], flush=True)
    for t in tasks:
        kept = results.get(t, [])
        results[t] = [found.get((t, k)) or kept[k] for k in range(len(whos))]
    shown = ",".join(results)
    lines = ["# Physical suite: observation scope x policy sharing", "",
             f"`python benchmarks/physical_ablation.py --tasks {shown} --method "
             f"{args.method} --steps {args.steps} --demos {args.demos} --rollouts "
             f"{args.rollouts}`: {args.method} on state observations, {args.demos} "
             f"noisy-expert demonstrations "
             f"(5/6 for training), {args.steps} gradient steps per network, evaluated on seeds "
             f"1-{args.rollouts}. Rates are cumulative phase rates, mean ± 95% CI.", ""]
    for task, rows in results.items():
        lines += [f"## {task}", "", "| policy | success | p1 | p2 | p3 | drops / rollout |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            cells = [fmt(r[k]) for k in ("success", "p1", "p2", "p3")]
            lines.append(f"| {r['policy']} | " + " | ".join(cells) +
                         f" | {r['drops']['mean']:.2f} |")
        lines.append("")
    findings = paper_comparison(results, args.method, lines)
    write_results("physical_ablation", {"meta": meta, "tasks": results,
                                        "findings": [f.as_json() for f in findings]}, lines)


def paper_comparison(results: dict[str, list[dict]], method: str, lines: list[str]) -> list:
    """Append the cells pooled over every task beside the paper's Table 3, and its findings
    checked on them (as `coordbench reproduce cohub` does); return the findings."""
    tasks = list(results)
    pooled: dict[str, tuple[int, int]] = {}
    for sc, sh, aid in CELLS:
        label = f"{method} {cell_name(sc, sh, aid)}"
        rs = [r for rows in results.values() for r in rows if r["policy"] == label]
        pooled[cell_name(sc, sh, aid)] = (sum(round(r["success"]["mean"] * r["success"]["n"])
                                              for r in rs),
                                          sum(r["success"]["n"] for r in rs))
    lines += [f"## Pooled over {', '.join(tasks)}, beside the paper's Table 3", "",
              "| cell | ours (success, pooled) | paper ACT | paper DP |", "|---|---|---|---|"]
    for sc, sh, aid in CELLS:
        cell = cell_name(sc, sh, aid)
        paper = None if aid else PAPER_T3.get((sc, sh))
        k, n = pooled[cell]
        lines.append(f"| {cell} | {100 * k / n:.0f}% ({k}/{n}) | "
                     + (" | ".join(f"{x}%" for x in paper) if paper else "— | —") + " |")
    findings = table3_findings(pooled, tasks)
    lines += ["", "| finding | claim | paper | ours | holds |", "|---|---|---|---|---|"]
    for f in findings:
        lines.append(f"| {f.id} | {f.claim} | {f.paper_value} | {f.coordbench_value} | "
                     f"{show(f.holds)} |")
    return findings


def fmt(est: dict) -> str:
    """Return a rate as a percentage with its CI."""
    ci = est.get("ci95")
    return f"{100 * est['mean']:.0f}%" + (f" ± {100 * ci:.0f}" if ci is not None else "")


if __name__ == "__main__":
    main()
