"""The shared agent network's first layer applied to the state once per sample (split) against
once per agent on the concatenated [state, agent id] input, side by side in one process.

Usage:  python benchmarks/stat_agent_net.py [--steps 20000] [--reps 3]
Writes benchmarks/results/stat_agent_net.json and .md.

VDN, QMIX, QTRAN and IQL share one network across agents, fed [s, onehot(i)]. Its first layer
is the largest (state size x 64), and the concatenated input repeats the state n times; the
split computes W [s, 0] + b once and adds W [0, onehot(i)] per agent: same function, same
parameters. `coordbench.learn.core.SPLIT_FIRST_LAYER_AT` (a state size) decides where the
split is used; this benchmark forces each variant in turn, so the table shows where it pays.
Each figure: a training run of `--steps` environment steps at utd 8 (acting, replay, updates,
evaluation), variants alternating `--reps` times; medians.
"""

from __future__ import annotations

import platform

import torch
from ab import ab_args, compare, train_rate
from results_io import write_results

import coordbench.learn.core as core
from coordbench.envs.stat.config import get_config

PAIRS = [("qmix", "3A-6T-10x6"), ("qmix", "5A-12T-10x6"), ("qmix", "5A-25T-50x30"),
         ("qmix", "9A-25T-50x30"), ("qmix", "5A-50T-50x30"), ("qmix", "5A-100T-50x30"),
         ("vdn", "5A-100T-50x30"), ("iql", "5A-100T-50x30")]


def run(algo: str, config: str, variant: str, steps: int) -> tuple[float, float]:
    """Return (environment steps per second, final return) with the "split" first layer
    forced on, or off ("concat")."""
    threshold = core.SPLIT_FIRST_LAYER_AT
    core.SPLIT_FIRST_LAYER_AT = 0 if variant == "split" else 1 << 30
    try:
        return train_rate(algo, config, steps)
    finally:
        core.SPLIT_FIRST_LAYER_AT = threshold


def main() -> None:
    args = ab_args()
    rows = compare(PAIRS, run, ("concat", "split"), args)
    for r in rows:
        r["state_size"] = get_config(r["config"]).obs_dim
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__, "split_first_layer_at": core.SPLIT_FIRST_LAYER_AT}
    lines = ["# Shared agent network: split first layer vs concatenated input", "",
             f"`python benchmarks/stat_agent_net.py --steps {args.steps} --reps {args.reps}`; "
             f"one math thread; medians of {args.reps} alternating runs of {args.steps:,} "
             "environment steps each at utd 8, acting and evaluation included. The learners "
             f"split where the state size is at least {core.SPLIT_FIRST_LAYER_AT}. Final "
             "return: the last greedy evaluation of seed 0 (short runs).", "",
             "| method | config | state size | steps/s (concat) | steps/s (split) | ratio | "
             "final return (concat) | final return (split) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['algo']} | {r['config']} | {r['state_size']} | "
            f"{r['steps_per_s_concat']:,.0f} | {r['steps_per_s_split']:,.0f} | "
            f"{r['steps_per_s_split'] / r['steps_per_s_concat']:.2f}x | "
            f"{r['final_return_concat']:.2f} | {r['final_return_split']:.2f} |")
    write_results("stat_agent_net", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
