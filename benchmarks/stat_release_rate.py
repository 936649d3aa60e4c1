"""Step rate of the released STAT environment, for side-by-side comparisons.

Usage:  PY benchmarks/stat_release_rate.py --src DIR --config 5A-25T-50x30 [--seconds 5]

DIR is the `src` directory of a checkout of the released STAT code (the one that contains
`stat_env/`), and PY an interpreter that can import it (it needs `mesa<3`, numpy and
gymnasium; coordbench itself is not imported, so any such environment works). Prints one JSON
object: joint steps per second inside the release's `STATGymEnv.step()` alone under uniformly
random valid actions, episodes reset with consecutive seeds, the same definition as
`StatVecEnv`'s step-only rate in benchmarks/stat_speed.py (which runs this script between its
own rounds).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time


def parse_config(name: str) -> tuple[int, int, int, int]:
    """Return (agents, tasks, width, height) of a config name like 5A-25T-50x30."""
    m = re.fullmatch(r"(\d+)A-(\d+)T-(\d+)x(\d+)", name)
    if not m:
        raise SystemExit(f"config must look like 5A-25T-50x30, got {name!r}")
    return tuple(int(g) for g in m.groups())  # type: ignore[return-value]


def released_step_rate(src: str, config: str, seconds: float, limit: int = 700) -> float:
    """Return the release's joint steps/s inside step() under random valid actions."""
    import numpy as np

    sys.path.insert(0, src)
    from stat_env.stat_gym import STATGymEnv

    agents, tasks, width, height = parse_config(config)
    env = STATGymEnv(seed=0, agents=agents, tasks=tasks, width=width, height=height, num_bins=5)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(50):  # warm-up outside the clock
        obs, _, done, _, _ = env.step([int(rng.choice(np.flatnonzero(r)))
                                       for r in obs["agent_masks"]])
        if done:
            obs, _ = env.reset(seed=0)
    obs, _ = env.reset(seed=1)
    steps = t = episode = 0
    in_step = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = [int(rng.choice(np.flatnonzero(r))) for r in obs["agent_masks"]]
        t0 = time.perf_counter()
        obs, _, done, _, _ = env.step(actions)
        in_step += time.perf_counter() - t0
        steps += 1
        t += 1
        if done or t >= limit:
            episode += 1
            obs, _ = env.reset(seed=1 + episode)
            t = 0
    return steps / in_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="the release's src directory")
    ap.add_argument("--config", required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    rate = released_step_rate(args.src, args.config, args.seconds)
    print(json.dumps({"config": args.config, "step_per_s": rate}))


if __name__ == "__main__":
    main()
