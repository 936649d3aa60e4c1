"""DQN's learner update with the chosen-row output (what `DQN.loss` does) against the full
joint output gathered afterwards (what it did before), side by side in one process.

Usage:  python benchmarks/stat_dqn_update.py [--steps 20000] [--reps 3]
Writes benchmarks/results/stat_dqn_update.json and .md.

DQN has one output unit per joint action, (3+m)^n: 729 on 3A-6T-10x6, 3,375 on 3A-12T-10x6.
The TD loss needs only the taken action's unit, so computing just that row of the output
layer removes most of the online network's forward and backward work; the target network
still needs every unit (max over valid joint actions), and so does acting. Two measurements
per config, alternating between the two variants `--reps` times so that load drift on a
shared machine hits both alike: one learner update (loss, backward, Adam step, batch 128),
and end-to-end training (`--steps` environment steps at utd 8, evaluation included).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from results_io import write_results

from coordbench.envs.stat.config import get_config
from coordbench.learn.core import TrainConfig, adam, one_thread
from coordbench.learn.dqn import DQN, encode
from coordbench.learn.registry import make, paper_config, train

CONFIGS = ("3A-6T-10x6", "3A-12T-10x6")


def full_output_q(self: DQN, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Return Q(s, a) (B,) by computing every joint action's unit, then gathering."""
    return self.q(obs).gather(1, encode(actions, self.a).unsqueeze(1)).squeeze(1)


def dqn(tc: TrainConfig, full: bool) -> DQN:
    """Return a DQN for `tc`, computing Q(s, a) from the full joint output if `full`."""
    m = make(tc)
    if full:
        m.chosen_q = full_output_q.__get__(m)
    return m


def time_updates(config: str, full: bool, updates: int = 200) -> float:
    """Return seconds per learner update (batch 128) on random states and valid actions."""
    tc = paper_config(config, "dqn", seed=0)
    m = dqn(tc, full)
    cfg = get_config(config)
    g = torch.Generator().manual_seed(0)
    batch = {"obs": torch.rand(128, cfg.obs_dim, generator=g) * 4,
             "next_obs": torch.rand(128, cfg.obs_dim, generator=g) * 4,
             "actions": torch.randint(0, cfg.num_actions, (128, cfg.agents), generator=g),
             "next_masks": torch.rand(128, cfg.agents, cfg.num_actions, generator=g) < 0.7,
             "rewards": torch.rand(128, generator=g), "term": torch.zeros(128)}
    opt = adam(m.q.parameters(), tc.lr)
    t0 = time.perf_counter()
    for _ in range(updates):
        opt.zero_grad()
        m.loss(batch, tc.gamma).backward()
        opt.step()
    return (time.perf_counter() - t0) / updates


def time_training(config: str, full: bool, steps: int) -> float:
    """Return end-to-end environment steps per second of a DQN run at utd 8."""
    tc = paper_config(config, "dqn", seed=0, total_steps=steps, utd=8.0)
    m = dqn(tc, full)
    t0 = time.perf_counter()
    train(tc, method=m)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    one_thread()
    rows = []
    for config in CONFIGS:
        upd = {False: [], True: []}
        sps = {False: [], True: []}
        for _ in range(args.reps):
            for full in (True, False):
                upd[full].append(time_updates(config, full))
                sps[full].append(time_training(config, full, args.steps))
        rows.append({"config": config,
                     "update_ms_full": 1e3 * statistics.median(upd[True]),
                     "update_ms_chosen": 1e3 * statistics.median(upd[False]),
                     "steps_per_s_full": statistics.median(sps[True]),
                     "steps_per_s_chosen": statistics.median(sps[False])})
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__}
    lines = ["# DQN learner: chosen-row output vs full joint output", "",
             f"`python benchmarks/stat_dqn_update.py --steps {args.steps} --reps {args.reps}`; "
             "one math thread; medians of alternating repetitions in one process. Update: "
             "loss, backward and Adam step on a batch of 128. End to end: a DQN run of "
             f"{args.steps:,} steps at utd 8, acting and evaluation included.", "",
             "| config | joint actions | update ms (full) | update ms (chosen) | ratio | "
             "steps/s (full) | steps/s (chosen) | ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cfg = get_config(r["config"])
        lines.append(
            f"| {r['config']} | {cfg.num_actions ** cfg.agents:,} | {r['update_ms_full']:.2f} | "
            f"{r['update_ms_chosen']:.2f} | {r['update_ms_full'] / r['update_ms_chosen']:.2f}x | "
            f"{r['steps_per_s_full']:,.0f} | {r['steps_per_s_chosen']:,.0f} | "
            f"{r['steps_per_s_chosen'] / r['steps_per_s_full']:.2f}x |")
    write_results("stat_dqn_update", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
