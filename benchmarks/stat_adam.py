"""Adam as the STAT learners use it (torch's fused CPU kernel) against the default per-tensor
loop implementation, side by side in one process, end to end.

Usage:  python benchmarks/stat_adam.py [--steps 20000] [--reps 3]
Writes benchmarks/results/stat_adam.json and .md.

Both variants apply the same update rule. The loop version launches several small kernels
per parameter tensor and step; the fused one does the whole step in one, which matters
because these networks are small and a learner update is a few milliseconds. Each figure is
a training run of `--steps` environment steps at utd 8 (acting, replay, updates, evaluation
included), the two variants alternating `--reps` times so that load drift on a shared
machine hits both alike; medians are reported. Final returns are printed beside the rates:
the two variants round differently, so the same seed may follow a different trajectory.
"""

from __future__ import annotations

import platform

import torch
from ab import ab_args, compare, train_rate
from results_io import write_results

PAIRS = [(a, "3A-6T-10x6") for a in ("dqn", "fdqn", "vdn", "qmix", "qtran", "iql", "coma")]
PAIRS += [("dqn", "3A-12T-10x6"), ("qmix", "5A-25T-50x30")]


def run(algo: str, config: str, variant: str, steps: int) -> tuple[float, float]:
    """Return (environment steps per second, final return) of one run with the "loop" or
    the "fused" Adam."""
    adam_class = torch.optim.Adam
    if variant == "loop":
        # the learners build Adam through coordbench.learn.core.adam, which asks for
        # fused=True; this stand-in drops that flag, leaving torch's default loop
        def loop_adam(params, lr: float, **_: object) -> torch.optim.Adam:
            return adam_class(params, lr=lr)

        torch.optim.Adam = loop_adam  # type: ignore[misc,assignment]
    try:
        return train_rate(algo, config, steps)
    finally:
        torch.optim.Adam = adam_class  # type: ignore[misc]


def main() -> None:
    args = ab_args()
    rows = compare(PAIRS, run, ("loop", "fused"), args)
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__}
    lines = ["# STAT learners: fused Adam vs the per-tensor loop", "",
             f"`python benchmarks/stat_adam.py --steps {args.steps} --reps {args.reps}`; one "
             f"math thread; medians of {args.reps} alternating runs of {args.steps:,} "
             "environment steps each at utd 8, acting and evaluation included. Final return: "
             "the last greedy evaluation of seed 0 (short runs; it shows whether the two "
             "variants' trajectories coincide, not what a full run reaches).", "",
             "| method | config | steps/s (loop) | steps/s (fused) | ratio | "
             "final return (loop) | final return (fused) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['algo']} | {r['config']} | {r['steps_per_s_loop']:,.0f} | "
            f"{r['steps_per_s_fused']:,.0f} | "
            f"{r['steps_per_s_fused'] / r['steps_per_s_loop']:.2f}x | "
            f"{r['final_return_loop']:.2f} | {r['final_return_fused']:.2f} |")
    write_results("stat_adam", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
