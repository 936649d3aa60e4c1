"""How much of the gap from random valid play to the per-step Hungarian allocator a learned
method closes on the Extreme configs (the paper's best closes 1-7%).

Usage:
  python benchmarks/stat_extreme_gap.py --run [--config 5A-25T-50x30] [--algo vdn]
      [--arch pair] [--steps 600000] [--seeds 0-4] [--utd 4]
  python benchmarks/stat_extreme_gap.py --dirs runs/extreme

`--run` trains the missing seeds into runs/extreme (resumable). The table evaluates random
valid play, greedy and Hungarian on exactly the layouts each learner was evaluated on (its
seed's 20 paper layouts), and reports per method and config: final and maximum return, and
gap closed = (learned - random) / (Hungarian - random), per seed, then mean +- 95% CI.
Writes benchmarks/results/stat_extreme_gap.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from coordbench.core.stats import mean_ci
from coordbench.report.stat_train_report import group, load_results, point, reference_samples

# the paper's best learned final return and the gap it closes (research notes, section 6)
PAPER_BEST = {"5A-25T-25x15": (1266.00, "VDN", 0.06), "5A-25T-50x30": (866.90, "VDN", 0.07),
              "5A-50T-50x30": (2697.84, "FDQN", 0.02), "5A-100T-50x30": (6144.00, "QTRAN", 0.01),
              "9A-25T-50x30": (909.51, "FDQN", 0.03)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--config", default="5A-25T-50x30")
    ap.add_argument("--algo", default="vdn")
    ap.add_argument("--arch", default="pair")
    ap.add_argument("--steps", type=int, default=600_000)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--utd", type=float, default=4.0)
    ap.add_argument("--dirs", nargs="*", type=Path, default=[Path("runs/extreme")])
    args = ap.parse_args()
    if args.run:
        from coordbench.learn.registry import paper_config
        from coordbench.learn.sweep import sweep

        a, b = (int(x) for x in args.seeds.split("-"))
        extra = {} if args.arch == "mlp" else {"arch": args.arch}
        sweep([paper_config(args.config, args.algo, seed=s, total_steps=args.steps,
                            utd=args.utd, eval_every=50_000, extra=extra)
               for s in range(a, b + 1)], args.dirs[0], workers=2)
    groups = group(load_results(args.dirs))
    spec = {}
    for (config, _), rs in groups.items():
        seeds, eps = spec.get(config, (set(), 20))
        spec[config] = (seeds | {r["config"]["seed"] for r in rs},
                        min(eps, *(r["config"]["eval_episodes"] for r in rs)))
    refs = reference_samples({c: (sorted(s), e) for c, (s, e) in spec.items()})
    lines = ["# Extreme regime: share of the random -> Hungarian gap closed", "",
             "`python benchmarks/stat_extreme_gap.py --dirs " +
             " ".join(map(str, args.dirs)) + "`. Per seed, on that seed's 20 paper "
             "evaluation layouts: gap closed = (learned - random valid) / (Hungarian - random "
             "valid); mean ± 95% CI over seeds (n). Steps = environment steps trained (the "
             "paper trains 20M).", "",
             "| config | method | steps | n | final return | max return | gap closed (final) "
             "| gap closed (max) | random valid | Hungarian | paper's best (gap closed) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (config, method), rs in sorted(groups.items()):
        seed_idx = {s: k for k, s in enumerate(sorted(spec[config][0]))}
        rand = [refs[(config, "random")][seed_idx[r["config"]["seed"]]]["return"] for r in rs]
        hung = [refs[(config, "hungarian")][seed_idx[r["config"]["seed"]]]["return"] for r in rs]
        fin = [point(r, "final")["return"] for r in rs]
        mx = [point(r, "max")["return"] for r in rs]
        gap_f = [(f - a) / (h - a) for f, a, h in zip(fin, rand, hung, strict=True)]
        gap_m = [(m - a) / (h - a) for m, a, h in zip(mx, rand, hung, strict=True)]
        steps = rs[0]["config"]["total_steps"]
        best = PAPER_BEST.get(config)
        paper = f"{best[1]} {best[0]:.1f} ({best[2]:.0%})" if best else "–"
        lines.append(
            f"| {config} | {method} | {steps / 1e6:.1f}M | {len(rs)} | {mean_ci(fin).fmt(1)} | "
            f"{mean_ci(mx).fmt(1)} | {_pct(gap_f)} | {_pct(gap_m)} | {np.mean(rand):.1f} | "
            f"{np.mean(hung):.1f} | {paper} |")
    out = Path(__file__).parent / "results" / "stat_extreme_gap.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _pct(values: list[float]) -> str:
    e = mean_ci(values)
    return f"{100 * e.mean:.0f}%" + (f" ± {100 * e.ci95:.0f}" if e.ci95 is not None else "")


if __name__ == "__main__":
    main()
