"""End-to-end training throughput of the STAT learners (environment steps per second).

Usage:  python benchmarks/stat_train_speed.py [--steps 40000] [--qmix-full | --qmix-full-only]
(make bench runs it; --qmix-full-only re-times only the 2M-step QMIX job and keeps the other
rows from the last results file, saying so)
Writes benchmarks/results/stat_train_speed.json and .md.

Each figure is one training run of `--steps` environment steps in this process, one after
another, everything included: acting (batched env + network), replay, learner updates at the
given update-to-data ratio (utd), and the greedy evaluations (20 episodes every 10,000 steps,
as in the paper's protocol). One math thread, as the trainers use. Times for 2M and 20M steps
are extrapolated from that rate; `--qmix-full` also runs the issue's reference job (QMIX, 2M
steps, 3A-6T-10x6, utd 8) to the end and reports its wall time.

The paper's figures (Table 11, one A100 per run) are printed beside ours for orientation:
for PyMARL methods the implied end-to-end rate is 130-270 steps/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from coordbench.learn.methods import paper_config, train

# (algo, config) pairs measured; DQN only where the paper runs it.
PAIRS = [(a, "3A-6T-10x6") for a in ("dqn", "fdqn", "vdn", "qmix", "qtran", "iql", "coma")]
PAIRS += [(a, "5A-25T-50x30") for a in ("fdqn", "vdn", "qmix", "qtran", "iql", "coma")]
PAIRS += [("qmix", "5A-100T-50x30")]
# Table 11 wall-clock hours per run (paper) for the configs above
PAPER_HOURS = {("dqn", "3A-6T-10x6"): 1.84, ("fdqn", "3A-6T-10x6"): 1.00,
               ("vdn", "3A-6T-10x6"): 2.70, ("qmix", "3A-6T-10x6"): 2.25,
               ("qtran", "3A-6T-10x6"): 2.42, ("iql", "3A-6T-10x6"): 2.27,
               ("fdqn", "5A-25T-50x30"): 11.76, ("vdn", "5A-25T-50x30"): 28.92,
               ("qmix", "5A-25T-50x30"): 28.91, ("qtran", "5A-25T-50x30"): 29.33,
               ("iql", "5A-25T-50x30"): 28.94, ("qmix", "5A-100T-50x30"): 41.91}


def measure(algo: str, config: str, steps: int, utd: float) -> dict:
    """Return one short run's throughput."""
    tc = paper_config(config, algo, total_steps=steps, utd=utd,
                      num_envs=8 if algo == "coma" else 32)
    start = time.perf_counter()
    res = train(tc)
    wall = time.perf_counter() - start
    sps = steps / wall
    budget = 2_000_000 if config.startswith("3A") else 20_000_000
    return {"algo": algo, "config": config, "utd": utd, "steps": steps, "wall_s": wall,
            "steps_per_s": sps, "updates": res["updates"],
            "budget_steps": budget, "budget_hours": budget / sps / 3600,
            "paper_hours": PAPER_HOURS.get((algo, config))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40_000)
    ap.add_argument("--qmix-full", action="store_true")
    ap.add_argument("--qmix-full-only", action="store_true")
    args = ap.parse_args()
    out = Path(__file__).parent / "results"
    rows: list[dict] = []
    kept_from = None
    if args.qmix_full_only:
        old = json.loads((out / "stat_train_speed.json").read_text())
        rows, kept_from = old["rows"], old["meta"]
        args.qmix_full = True
    for algo, config in ([] if args.qmix_full_only else PAIRS):
        for utd in ((8.0,) if algo == "coma" else (8.0, 1.0)):
            row = measure(algo, config, args.steps, utd)
            rows.append(row)
            print(f"{algo:6s} {config:14s} utd {utd:>3} {row['steps_per_s']:>9,.0f} steps/s "
                  f"-> {row['budget_steps'] / 1e6:.0f}M steps in {row['budget_hours']:.2f} h",
                  flush=True)
    full = None
    if args.qmix_full:
        full = measure("qmix", "3A-6T-10x6", 2_000_000, 8.0)
        print(f"QMIX 2M steps on 3A-6T-10x6 (utd 8): {full['wall_s'] / 60:.1f} min", flush=True)
    out.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "steps_per_run": args.steps if kept_from is None else kept_from["steps_per_run"],
            "date": time.strftime("%Y-%m-%d")}
    if kept_from is not None:
        meta["rows_date"] = kept_from.get("date", "an earlier run")
    (out / "stat_train_speed.json").write_text(json.dumps(
        {"meta": meta, "rows": rows, "qmix_2m_3A-6T-10x6": full}, indent=1) + "\n")
    lines = ["# STAT training throughput", "",
             f"`python benchmarks/stat_train_speed.py --steps {meta['steps_per_run']}"
             f"{' --qmix-full' if args.qmix_full else ''}`; one process, one math thread, "
             f"Python {meta['python']}. End to end: acting, replay, updates at the given "
             "utd (transitions replayed per transition collected; COMA is on-policy), and "
             "greedy evaluation every 10k steps. Hours for the paper's budget (2M steps "
             "Baseline, 20M Extreme) are extrapolated from the measured rate."
             + (f" The rows are from {meta['rows_date']}; only the full QMIX run below was "
                f"re-timed on {meta['date']}." if kept_from is not None else ""), "",
             "| method | config | utd | steps/s | paper budget | our hours | paper hours "
             "(Table 11, A100) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        paper = f"{r['paper_hours']:.2f}" if r["paper_hours"] else "–"
        utd = "on-policy" if r["algo"] == "coma" else f"{r['utd']:g}"
        lines.append(f"| {r['algo']} | {r['config']} | {utd} | {r['steps_per_s']:,.0f} "
                     f"| {r['budget_steps'] / 1e6:.0f}M | {r['budget_hours']:.2f} | {paper} |")
    if full:
        lines += ["", f"Full run: QMIX, 2M steps, 3A-6T-10x6, utd 8: "
                      f"**{full['wall_s'] / 60:.1f} min** ({full['steps_per_s']:,.0f} steps/s; "
                      f"paper: 2.25 h)."]
    (out / "stat_train_speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
