"""Fewer operations per learner update, against the previous code, side by side in one process:
Adam, gradient clipping and zeroing over one flat tensor (`core.FlatAdam`), and QMIX's mixing
product without torch.bmm. (Running the online network on states and next states in one
forward was tried too: 0.80-1.06x, so the learners keep two forwards.)

Usage:  python benchmarks/stat_update_speed.py [--steps 20000] [--reps 3]
Writes benchmarks/results/stat_update_speed.json and .md.

The STAT networks are small (hidden 64), so an update is mostly per-operation overhead:
QMIX has 26 parameter tensors, and zeroing, the gradient norm and Adam's step each loop
over them. "per_tensor" restores the previous code (fused Adam over the parameter list,
clip_grad_norm_ over it, zero_grad, and the mixer's q W1 as torch.bmm); "flat" is the
current code. Same function: Adam is elementwise, and the rest
agrees to rounding. Each figure: a training run of `--steps` environment steps at utd 8 (acting,
replay, updates, evaluation), variants alternating `--reps` times; medians.
"""

from __future__ import annotations

import platform

import torch
from ab import ab_args, compare, train_rate
from results_io import write_results

import coordbench.learn.coma as coma
import coordbench.learn.core as core
import coordbench.learn.ppo as ppo
from coordbench.learn.qmix import Mixer

PAIRS = [("qmix", "3A-6T-10x6"), ("vdn", "3A-6T-10x6"), ("iql", "3A-6T-10x6"),
         ("qtran", "3A-6T-10x6"), ("qmix", "5A-25T-50x30"), ("mappo", "3A-6T-10x6")]


class PerTensorAdam:
    """The previous bookkeeping: fused Adam, clipping and zeroing over the parameter list."""

    def __init__(self, params, lr: float) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.opt = core.adam(self.params, lr)
        self.param_groups = self.opt.param_groups

    def zero_grad(self) -> None:
        self.opt.zero_grad()

    def clip_grad_norm(self, max_norm: float) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(self.params, max_norm)

    def step(self) -> None:
        self.opt.step()


def bmm_forward(self: Mixer, q: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """The mixer as it was: q W1 through torch.bmm."""
    w1 = self.w1(state).abs().view(-1, self.n, self.embed)
    hidden = torch.nn.functional.elu(torch.bmm(q.unsqueeze(1), w1).squeeze(1) + self.b1(state))
    w2 = self.w2(state).abs()
    return (hidden * w2).sum(1) + self.b2(state).squeeze(1)


def run(algo: str, config: str, variant: str, steps: int) -> tuple[float, float]:
    """Return (environment steps per second, final return) under one variant."""
    saved = core.FlatAdam, ppo.FlatAdam, coma.FlatAdam, Mixer.forward
    if variant == "per_tensor":
        core.FlatAdam = ppo.FlatAdam = coma.FlatAdam = PerTensorAdam  # type: ignore[misc]
        Mixer.forward = bmm_forward  # type: ignore[method-assign]
    try:
        return train_rate(algo, config, steps)
    finally:
        core.FlatAdam, ppo.FlatAdam, coma.FlatAdam, Mixer.forward = saved  # type: ignore[misc]


def main() -> None:
    args = ab_args()
    rows = compare(PAIRS, run, ("per_tensor", "flat"), args)
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__}
    lines = ["# STAT learners: fewer operations per update (flat Adam, no bmm) vs the "
             "previous code", "",
             f"`python benchmarks/stat_update_speed.py --steps {args.steps} --reps "
             f"{args.reps}`; one math thread; medians of {args.reps} alternating runs of "
             f"{args.steps:,} environment steps each at utd 8, acting and evaluation included. "
             "Final return: the last greedy evaluation of seed 0 (short runs).", "",
             "| method | config | steps/s (per tensor) | steps/s (flat) | ratio | "
             "final return (per tensor) | final return (flat) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        r["ratio"] = r["steps_per_s_flat"] / r["steps_per_s_per_tensor"]
        lines.append(
            f"| {r['algo']} | {r['config']} | {r['steps_per_s_per_tensor']:,.0f} | "
            f"{r['steps_per_s_flat']:,.0f} | {r['ratio']:.2f}x | "
            f"{r['final_return_per_tensor']:.2f} | {r['final_return_flat']:.2f} |")
    write_results("stat_update_speed", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
