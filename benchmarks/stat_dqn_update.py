"""DQN's learner update as it is now against the two plain versions it replaced, side by side
in one process.

Usage:  python benchmarks/stat_dqn_update.py [--steps 20000] [--reps 3]
Writes benchmarks/results/stat_dqn_update.json and .md.

DQN has one output unit per joint action, (3+m)^n: 729 on 3A-6T-10x6, 3,375 on 3A-12T-10x6.
Three variants of one update (same values up to float rounding; tests check that):
- `full`: Q(s, a) gathered from the whole online output, the target's max taken over its
  whole output under the joint validity mask;
- `chosen`: Q(s, a) computes only the taken action's output row (`DQN.chosen_q`);
- `chosen+valid` (what DQN does): also the target computes only the valid joint actions'
  units in states with few of them (`dqn.valid_max`).
Two measurements per config, the variants alternating `--reps` times so that load drift on a
shared machine hits all alike: one learner update (loss, backward, Adam step, batch 128 of
transitions from random valid play, so that the validity masks are realistic), and end-to-end
training (`--steps` environment steps at utd 8, evaluation included).
"""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np
import torch
from ab import ab_args
from results_io import write_results

from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.learn.core import TrainConfig, adam, masked_max
from coordbench.learn.dqn import DQN, encode, joint_mask
from coordbench.learn.methods import make, paper_config, train

CONFIGS = ("3A-6T-10x6", "3A-12T-10x6")
VARIANTS = ("full", "chosen", "chosen+valid")


def full_output_q(self: DQN, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Return Q(s, a) (B,) by computing every joint action's unit, then gathering."""
    return self.q(obs).gather(1, encode(actions, self.a).unsqueeze(1)).squeeze(1)


def dense_next_value(self: DQN, next_obs: torch.Tensor, next_masks: torch.Tensor) -> torch.Tensor:
    """Return the target's max over valid joint actions from its whole output (B,)."""
    return masked_max(self.q_target(next_obs), joint_mask(next_masks))


def dqn(tc: TrainConfig, variant: str) -> DQN:
    """Return a DQN for `tc` whose update is the given variant."""
    m = make(tc)
    if variant == "full":
        m.chosen_q = full_output_q.__get__(m)
    if variant in ("full", "chosen"):
        m.next_value = dense_next_value.__get__(m)
    return m


def play_batch(config: str, size: int = 128) -> dict[str, torch.Tensor]:
    """Return `size` transitions drawn from random valid play on 16 environments."""
    cfg = get_config(config)
    env = StatVecEnv(cfg, 16, layouts="uniform", seed=1)
    rng = np.random.default_rng(0)
    obs, masks = env.reset()
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "actions", "next_obs",
                                                         "next_masks", "rewards")}
    for _ in range(400):
        actions = env.random_valid_actions(rng)
        rows["obs"].append(obs.copy())
        rows["actions"].append(actions)
        obs, masks, reward, _ = env.step(actions)
        rows["next_obs"].append(obs.copy())
        rows["next_masks"].append(masks.copy())
        rows["rewards"].append(np.asarray(reward, np.float32))
    pick = rng.choice(400 * 16, size, replace=False)
    batch = {k: torch.from_numpy(np.concatenate(v)[pick]) for k, v in rows.items()}
    batch["actions"] = batch["actions"].long()
    batch["term"] = torch.zeros(size)
    return batch


def time_updates(config: str, variant: str, batch: dict[str, torch.Tensor],
                 updates: int = 200) -> float:
    """Return seconds per learner update on `batch`."""
    tc = paper_config(config, "dqn", seed=0)
    m = dqn(tc, variant)
    opt = adam(m.q.parameters(), tc.lr)
    t0 = time.perf_counter()
    for _ in range(updates):
        opt.zero_grad()
        m.loss(batch, tc.gamma).backward()
        opt.step()
    return (time.perf_counter() - t0) / updates


def time_training(config: str, variant: str, steps: int) -> float:
    """Return end-to-end environment steps per second of a DQN run at utd 8."""
    tc = paper_config(config, "dqn", seed=0, total_steps=steps, utd=8.0)
    m = dqn(tc, variant)
    t0 = time.perf_counter()
    train(tc, method=m)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    args = ab_args()
    rows = []
    for config in CONFIGS:
        batch = play_batch(config)
        upd: dict[str, list[float]] = {v: [] for v in VARIANTS}
        sps: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for _ in range(args.reps):
            for v in VARIANTS:
                upd[v].append(time_updates(config, v, batch))
                sps[v].append(time_training(config, v, args.steps))
        valid = batch["next_masks"].sum(-1).prod(-1).float()
        rows.append({"config": config, "valid_joint_mean": float(valid.mean()),
                     "valid_joint_median": float(valid.median()),
                     **{f"update_ms_{v}": 1e3 * statistics.median(upd[v]) for v in VARIANTS},
                     **{f"steps_per_s_{v}": statistics.median(sps[v]) for v in VARIANTS}})
        print(rows[-1], flush=True)
    meta = {"steps": args.steps, "reps": args.reps, "python": platform.python_version(),
            "torch": torch.__version__}
    lines = ["# DQN learner: full output, chosen row, chosen row + valid-only target", "",
             f"`python benchmarks/stat_dqn_update.py --steps {args.steps} --reps {args.reps}`; "
             "one math thread; medians of alternating repetitions in one process. Update: "
             "loss, backward and Adam step on a batch of 128 transitions from random valid "
             "play (valid joint actions per next state: mean and median given). End to end: "
             f"a DQN run of {args.steps:,} steps at utd 8, acting and evaluation included. "
             "Ratios are against `full`.", "",
             "| config | joint actions | valid (mean / median) | update ms: full | chosen | "
             "chosen+valid | ratio | steps/s: full | chosen | chosen+valid | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cfg = get_config(r["config"])
        ms = [r[f"update_ms_{v}"] for v in VARIANTS]
        sp = [r[f"steps_per_s_{v}"] for v in VARIANTS]
        lines.append(
            f"| {r['config']} | {cfg.num_actions ** cfg.agents:,} | "
            f"{r['valid_joint_mean']:.0f} / {r['valid_joint_median']:.0f} | "
            + " | ".join(f"{x:.2f}" for x in ms) + f" | {ms[0] / ms[-1]:.2f}x | "
            + " | ".join(f"{x:,.0f}" for x in sp) + f" | {sp[-1] / sp[0]:.2f}x |")
    write_results("stat_dqn_update", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
