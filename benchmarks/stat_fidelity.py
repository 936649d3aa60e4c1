"""Fidelity of the STAT learners against the paper's Table 5 (final return, 2M steps,
Baseline configs, 5 seeds).

Usage:
  python benchmarks/stat_fidelity.py --run [--utd 8] [--configs 3A-6T-5x3,...] [--algos ...]
  python benchmarks/stat_fidelity.py --dirs runs/fidelity/utd1 runs/fidelity/utd8

`--run` trains every missing (method, config, seed) into runs/fidelity/utd<R> (resumable;
one config x method x 5 seeds of QMIX at utd 8 takes ~35 CPU-minutes). Without it, the
results already on disk are tabled. Writes benchmarks/results/stat_fidelity.md: per cell our
final return (mean +- 95% CI over seeds), the paper's, and whether ours lies within, above or
below the paper's CI.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from coordbench.core.stats import mean_ci
from coordbench.report.stat_train_report import group, load_results

BASELINE = ("3A-6T-5x3", "3A-6T-10x6", "3A-12T-10x6", "5A-12T-10x6")
ALGOS = ("dqn", "fdqn", "vdn", "qmix", "qtran", "iql")
# paper Table 5: final return, mean and 95% CI half-width over 5 seeds
PAPER = {
    "3A-6T-5x3": {"dqn": (215.05, 0.7), "fdqn": (214.97, 0.7), "vdn": (214.59, 1.1),
                  "qmix": (215.06, 0.4), "qtran": (212.31, 1.0), "iql": (211.73, 1.4)},
    "3A-6T-10x6": {"dqn": (199.94, 1.4), "fdqn": (199.87, 0.7), "vdn": (199.76, 0.8),
                   "qmix": (199.61, 0.8), "qtran": (196.90, 1.5), "iql": (195.52, 0.7)},
    "3A-12T-10x6": {"dqn": (504.20, 2.5), "fdqn": (499.72, 2.2), "vdn": (499.14, 2.6),
                    "qmix": (502.07, 3.7), "qtran": (495.87, 3.4), "iql": (496.29, 1.9)},
    "5A-12T-10x6": {"fdqn": (503.68, 2.5), "vdn": (501.31, 3.2), "qmix": (500.11, 2.2),
                    "qtran": (492.66, 1.8), "iql": (487.81, 3.0)},
}


def verdict(mean: float, paper: tuple[float, float]) -> str:
    """Return where our mean lies relative to the paper's CI."""
    lo, hi = paper[0] - paper[1], paper[0] + paper[1]
    return "within" if lo <= mean <= hi else ("above" if mean > hi else "below")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--utd", type=float, default=8.0)
    ap.add_argument("--configs", default=",".join(BASELINE))
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--dirs", nargs="*", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if args.run:
        from coordbench.learn.registry import paper_config
        from coordbench.learn.sweep import sweep

        out = Path("runs/fidelity") / f"utd{args.utd:g}"
        for config in args.configs.split(","):
            for algo in args.algos.split(","):
                if algo == "dqn" and config.startswith("5A"):
                    continue
                sweep([paper_config(config, algo, seed=s, utd=args.utd) for s in range(5)],
                      out, workers=args.workers)
        dirs = [out]
    else:
        dirs = args.dirs or sorted(Path("runs/fidelity").glob("utd*"))
    lines = ["# STAT learners vs the paper's Table 5 (final return at 2M steps)", "",
             "`python benchmarks/stat_fidelity.py " + " ".join(
                 ["--dirs", *map(str, dirs)]) + "`. Ours: mean ± 95% CI over the seeds on "
             "disk (n), each seed's final greedy evaluation on its 20 paper layouts "
             "(seed*1000+i). Paper: Table 5. Verdict: where our mean lies relative to the "
             "paper's CI.", ""]
    for d in dirs:
        groups = group(load_results([d]))
        utd = {r["config"]["utd"] for rs in groups.values() for r in rs}
        lines += [f"## {d.name} (utd {', '.join(f'{u:g}' for u in sorted(utd))})", "",
                  "| config | method | ours | n | paper | verdict |", "|---|---|---|---|---|---|"]
        for config in BASELINE:
            for algo in ALGOS:
                rs = groups.get((config, algo))
                if not rs or algo not in PAPER[config]:
                    continue
                est = mean_ci([r["final_return"] for r in rs])
                p = PAPER[config][algo]
                lines.append(f"| {config} | {algo} | {est.fmt(2)} | {est.n} | "
                             f"{p[0]:.2f} ± {p[1]:.1f} | {verdict(est.mean, p)} |")
        lines.append("")
    out_md = Path(__file__).parent / "results" / "stat_fidelity.md"
    out_md.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
