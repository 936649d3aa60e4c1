"""Record random play of the released STAT environment, for the differential check.

Usage:  PY benchmarks/stat_release_record.py --src DIR --config 5A-25T-50x30 --episodes 40
            [--p-off 0.1] [--seed 0] --out FILE.npz

DIR is the `src` directory of a checkout of the released STAT code (with `stat_env/`), PY an
interpreter that can import it (`mesa<3`, numpy, gymnasium; coordbench is not imported). Each
episode starts from the release's own `reset(seed=seed + e)` and plays uniformly random valid
actions, each replaced with probability `p_off` by a uniformly random index in 0..3+m-1
(off-mask actions, which the release applies and penalises), until done or 700 steps. Saved per
episode: the layout; per step: the joint action, and after it the agents' positions, the
observation vector, the masks, the team reward and the wrapper's conflict, forced-idle and
unique-assignment counts. benchmarks/stat_release_diff.py replays it through coordbench.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from stat_release_rate import parse_config

LIMIT = 700


def record(src: str, config: str, episodes: int, p_off: float, seed: int) -> dict:
    """Return the recorded arrays (episodes concatenated; `length` gives each one's steps)."""
    sys.path.insert(0, src)
    from stat_env.stat_gym import STATGymEnv

    agents, tasks, width, height = parse_config(config)
    env = STATGymEnv(seed=seed, agents=agents, tasks=tasks, width=width, height=height,
                     num_bins=5)
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in (
        "actions", "pos", "obs", "masks", "reward", "conflicts", "forced_idle", "unique")}
    layouts, starts_obs, starts_masks, lengths = [], [], [], []
    for e in range(episodes):
        out, _ = env.reset(seed=seed + e)
        layouts.append([t.pos for t in env.model.sorted_tasks])
        starts_obs.append(out["obs"])
        starts_masks.append(out["agent_masks"])
        t = 0
        done = False
        while not done and t < LIMIT:
            acts = [int(rng.choice(np.flatnonzero(row))) for row in out["agent_masks"]]
            acts = [int(rng.integers(0, 3 + tasks)) if rng.random() < p_off else a
                    for a in acts]
            out, reward, done, _, info = env.step(acts)
            cols["actions"].append(acts)
            cols["pos"].append([a.pos for a in env.model.sorted_agents])
            cols["obs"].append(out["obs"])
            cols["masks"].append(out["agent_masks"])
            cols["reward"].append(reward)
            cols["conflicts"].append(info["num_conflicts"])
            cols["forced_idle"].append(info["forced_idle"])
            cols["unique"].append(info["unique_tasks_assigned"])
            t += 1
        lengths.append(t)
    arrays = {k: np.asarray(v) for k, v in cols.items()}
    arrays.update(layouts=np.asarray(layouts, dtype=np.float64), start_obs=np.asarray(starts_obs),
                  start_masks=np.asarray(starts_masks), length=np.asarray(lengths))
    return arrays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--p-off", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    np.savez_compressed(args.out, **record(args.src, args.config, args.episodes, args.p_off,
                                           args.seed))


if __name__ == "__main__":
    main()
