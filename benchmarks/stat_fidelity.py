"""Fidelity of the STAT learners against the paper's Table 5 (final return, 2M steps,
Baseline configs, 5 seeds).

Usage:
  python benchmarks/stat_fidelity.py --run [--utd 8] [--configs 3A-6T-5x3,...] [--algos ...]
                                      [--seeds 0-4] [--workers 2]
  python benchmarks/stat_fidelity.py --dirs runs/fidelity/utd1 runs/fidelity/utd8

`--run` trains every missing (method, config, seed) into runs/fidelity/utd<R> (resumable;
one config x method x 5 seeds of QMIX at utd 8 takes ~35 CPU-minutes). Every final return
found in the result directories is merged into the ledger benchmarks/results/stat_fidelity.json
(per update ratio, config, method and seed), so results from different machines and sessions
add up; the table benchmarks/results/stat_fidelity.md is rendered from the ledger: per cell our
final return (mean +- 95% CI over seeds), the paper's, and whether ours lies within, above or
below the paper's CI. Cells measured before the ledger existed kept only their summary.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import scipy.stats as _st

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import mean_ci
from coordbench.report.stat_train_report import load_results

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


def welch_p_vs_paper(seeds: list[float], paper: tuple[float, float], n: int = 5) -> float:
    """Return the two-sided Welch p-value of our seeds against the paper's cell, with the
    paper's standard deviation recovered from its CI half-width (assumed a t-interval over
    its 5 seeds: sd = half * sqrt(n) / t_0.975,n-1)."""
    sd = paper[1] * math.sqrt(n) / _st.t.ppf(0.975, n - 1)
    ours = np.asarray(seeds, dtype=np.float64)
    return float(_st.ttest_ind_from_stats(ours.mean(), ours.std(ddof=1), ours.size,
                                          paper[0], sd, n, equal_var=False).pvalue)


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
    ap.add_argument("--seeds", default="0-4", help="training seeds, e.g. 0-4 or 1,3")
    args = ap.parse_args()
    if args.run:
        from coordbench.learn.methods import paper_config
        from coordbench.learn.sweep import parse_seeds, sweep

        out = Path("runs/fidelity") / f"utd{args.utd:g}"
        # one sweep over every cell keeps all workers busy; cells finish in the order given
        sweep([paper_config(config, algo, seed=s, utd=args.utd)
               for config in args.configs.split(",") for algo in args.algos.split(",")
               if not (algo == "dqn" and config.startswith("5A"))
               for s in parse_seeds(args.seeds)],
              out, workers=args.workers)
        dirs = [out]
    else:
        dirs = args.dirs or sorted(Path("runs/fidelity").glob("utd*"))
    results = Path(__file__).parent / "results"
    ledger = merge(load_ledger(results / "stat_fidelity.json"),
                   [r for d in dirs if d.exists() for r in load_results([d])])
    write_atomic(results / "stat_fidelity.json", json.dumps(ledger, indent=1) + "\n")
    text = render(ledger)
    write_atomic(results / "stat_fidelity.md", text)
    print(text)


def load_ledger(path: Path) -> dict:
    """Return the ledger {"utd<R>": {config: {algo: {"seeds": {seed: final}} | summary}}}."""
    return json.loads(path.read_text()) if path.exists() else {}


def merge(ledger: dict, runs: list[dict]) -> dict:
    """Return the ledger with every run's final return added under its utd, config, algo
    and seed (a seed measured again replaces the old value)."""
    for r in runs:
        c = r["config"]
        cell = ledger.setdefault(f"utd{c['utd']:g}", {}).setdefault(c["config"], {}) \
            .setdefault(c["algo"], {})
        cell.pop("summary", None)
        cell.setdefault("seeds", {})[str(c["seed"])] = r["final_return"]
    return ledger


def render(ledger: dict) -> str:
    """Return the markdown table of every ledger cell against the paper's Table 5."""
    lines = ["# STAT learners vs the paper's Table 5 (final return at 2M steps)", "",
             "`python benchmarks/stat_fidelity.py [--run --utd R]`. Ours: mean ± 95% CI over "
             "seeds (n), each seed's final greedy evaluation on its 20 paper layouts "
             "(seed*1000+i). Paper: Table 5. Verdict: where our mean lies relative to the "
             "paper's CI. Welch p: two-sided Welch t-test of our seeds against the paper's cell "
             "(its sd recovered from its CI, taken as a t-interval over 5 seeds); p >= 0.05 "
             "means no significant difference. Per-seed values: stat_fidelity.json.", ""]
    for utd in sorted(ledger, key=lambda k: float(k[3:])):
        note = " (the paper's learners' own ratio)" if float(utd[3:]) == 32 else ""
        lines += [f"## update-to-data ratio {utd[3:]}{note}", "",
                  "| config | method | ours | n | paper | verdict | Welch p |",
                  "|---|---|---|---|---|---|---|"]
        for config in BASELINE:
            for algo in ALGOS:
                cell = ledger[utd].get(config, {}).get(algo)
                if not cell or algo not in PAPER[config]:
                    continue
                p = PAPER[config][algo]
                welch = "–"
                if "seeds" in cell:
                    seeds = list(cell["seeds"].values())
                    est = mean_ci(seeds)
                    mean, ours, n = est.mean, est.fmt(2), est.n
                    if n >= 2:
                        welch = f"{welch_p_vs_paper(seeds, p):.2f}"
                else:  # measured before the ledger; only the summary was kept
                    sm = cell["summary"]
                    mean, n = sm["mean"], sm["n"]
                    ours = f"{mean:.2f} ± {sm['ci95']:.2f}"
                if math.isnan(mean):
                    continue
                lines.append(f"| {config} | {algo} | {ours} | {n} | "
                             f"{p[0]:.2f} ± {p[1]:.1f} | {verdict(mean, p)} | {welch} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
