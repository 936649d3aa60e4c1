"""The task-equivariant pair network (`--arch pair`) scoring only the agents with a choice,
against scoring every agent, side by side in one process.

Usage:  python benchmarks/stat_pair_speed.py [--steps 8192] [--reps 2]
Writes benchmarks/results/stat_pair_speed.json and .md.

On the 50x30 configurations about 4% of agent-steps have a choice; the masks force every
other agent's action. The learners ask the network only for the agents with a choice where
that gives the same numbers: MAPPO/IPPO's sampling, log-probabilities, policy loss and
entropy, every method's greedy actions and double-Q argmax (VDN, QMIX, QTRAN and IQL still
score every agent for their chosen and target values, since a forced agent's Q-value enters
the team's sum). The "every agent" variant restores the old cost (the full forward, then the
rows picked out), so both variants compute the same function. Two measures:
- the network alone: forward + backward on 128 states met in random valid play, in ms;
- training end to end at the given steps (acting, updates, evaluation), seed 0, medians of
  `--reps` alternating runs.
"""

from __future__ import annotations

import platform
import statistics
import time
from contextlib import contextmanager

import numpy as np
import torch
from ab import ab_args, compare, train_rate
from results_io import write_results

from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.learn.core import choice_rows
from coordbench.learn.pair import PairAgentQ

PAIRS = [("mappo", "5A-25T-25x15"), ("mappo", "5A-25T-50x30"), ("mappo", "5A-50T-50x30"),
         ("mappo", "5A-100T-50x30"), ("mappo", "9A-25T-50x30"), ("vdn", "5A-25T-50x30"),
         ("vdn", "5A-100T-50x30")]
VARIANTS = ("every_agent", "choice_rows")


@contextmanager
def variant(name: str):
    """Make PairAgentQ score every agent (then pick the rows asked for) under "every_agent"."""
    forward, scores = PairAgentQ.forward, PairAgentQ.scores_rows
    if name == "every_agent":
        def full_then_pick(self, obs, rows=None):
            q = forward(self, obs)
            return q if rows is None else q[rows]
        PairAgentQ.forward, PairAgentQ.scores_rows = full_then_pick, False
    try:
        yield
    finally:
        PairAgentQ.forward, PairAgentQ.scores_rows = forward, scores


def run(algo: str, config: str, name: str, steps: int) -> tuple[float, float]:
    """Return (environment steps per second, final return) of a pair-network run."""
    with variant(name):
        return train_rate(algo, config, steps, utd=4.0, extra={"arch": "pair"})


def network_ms(config: str, reps: int = 10) -> dict[str, float]:
    """Return forward + backward milliseconds on 128 played states, per variant, and the
    share of agent rows with a choice."""
    cfg = get_config(config)
    env = StatVecEnv(cfg, 128, seed=1)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, masks, _, _ = env.step(env.random_valid_actions(rng))
    obs, masks = torch.from_numpy(obs.copy()), torch.from_numpy(masks.copy())
    rows = choice_rows(masks)
    net = PairAgentQ(cfg.agents, cfg.tasks, 64)
    out = {"choice_share": len(rows[0]) / (masks.shape[0] * masks.shape[1])}
    for name in VARIANTS:
        times = []
        with variant(name):
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                net.zero_grad()
                net(obs, rows).sum().backward()
                times.append(time.perf_counter() - t0)
        out[f"ms_{name}"] = 1000 * statistics.median(times[1:])
    return out


def main() -> None:
    args = ab_args()
    nets = {c: network_ms(c) for c in dict.fromkeys(c for _, c in PAIRS)}
    rows = compare(PAIRS, run, VARIANTS, args)
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__}
    lines = ["# Pair network: scoring the agents with a choice vs every agent", "",
             f"`python benchmarks/stat_pair_speed.py --steps {args.steps} --reps {args.reps}`; "
             "one math thread, hidden 64. Network: forward + backward on 128 states met in "
             "random valid play (median of 10). Training: seed 0, utd 4 for VDN, "
             f"{args.steps:,} environment steps, acting, updates and evaluation included, "
             f"medians of {args.reps} alternating runs.", "",
             "| config | agent rows with a choice | fwd+bwd ms (every agent) | fwd+bwd ms "
             "(choice rows) | ratio |", "|---|---|---|---|---|"]
    for c, r in nets.items():
        ratio = r["ms_every_agent"] / r["ms_choice_rows"]
        lines.append(f"| {c} | {r['choice_share']:.1%} | {r['ms_every_agent']:.1f} | "
                     f"{r['ms_choice_rows']:.2f} | {ratio:.1f}x |")
    lines += ["", "| method | config | steps/s (every agent) | steps/s (choice rows) | ratio |",
              "|---|---|---|---|---|"]
    for r in rows:
        ratio = r["steps_per_s_choice_rows"] / r["steps_per_s_every_agent"]
        r["ratio"] = ratio
        lines.append(f"| {r['algo']}+pair | {r['config']} | {r['steps_per_s_every_agent']:,.0f} | "
                     f"{r['steps_per_s_choice_rows']:,.0f} | {ratio:.1f}x |")
    write_results("stat_pair_speed", {"meta": meta, "network": nets, "training": rows}, lines)


if __name__ == "__main__":
    main()
