"""STAT speed benchmark: the vectorized core against a pure-Python step, side by side.

Usage:  python benchmarks/stat_speed.py [--seconds 5] [--batch 4096]
Writes benchmarks/results/stat_speed.json and benchmarks/results/stat_speed.md.

Every figure is joint environment steps per second (one joint step = all n agents of one env)
under random valid actions, measured in this one process, one after another:

- vec B=4096 (+obs): the vectorized core with masks and observation vectors rebuilt each step,
  on one thread, and on all of numba's threads (the kernels split rows across them);
- vec B=4096 (masks only): the same without observation vectors, one thread;
- batch 1: the vectorized core with one environment (the per-episode path), with observations;
- gym wrapper: `coordbench/STAT-v0`, one environment, observations and masks;
- python reference: coordbench's plain-Python STAT (envs/stat/reference.py), which, like the
  released environment, rebuilds the state vector and the masks in Python every step.

Ratios are taken against the python reference measured in the same run. The released
environment itself (Mesa-based) is not run here; its documented single-core figures are
printed beside ours for orientation only.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numba
import numpy as np

from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.gym_env import StatGymEnv
from coordbench.envs.stat.layouts import LayoutStream
from coordbench.envs.stat.reference import ReferenceStatEnv
from coordbench.envs.stat.speed import measure_speed

CONFIGS = ["3A-6T-10x6", "5A-25T-50x30", "5A-100T-50x30"]
# Documented step rates of the released environment on one core of this machine kind.
RELEASED_ENV = {"3A-6T-10x6": 4300, "5A-25T-50x30": 1800, "5A-100T-50x30": 520}


def _timed(loop, seconds: float) -> float:
    """Run loop() (which returns steps done) until `seconds` pass; return steps per second."""
    loop()  # warm-up / compile
    steps, start = 0, time.perf_counter()
    while (now := time.perf_counter()) - start < seconds:
        steps += loop()
    return steps / (now - start)


def reference_rate(name: str, seconds: float) -> float:
    """Return steps/s of the plain-Python reference env (obs + masks rebuilt every step)."""
    cfg = get_config(name)
    env = ReferenceStatEnv(cfg)
    stream = LayoutStream(cfg, "uniform", 0)
    rng = np.random.default_rng(0)

    def episode() -> int:
        env.reset(stream.draw(1)[0])
        steps = 0
        done = False
        while not done:
            acts = [int(rng.choice(env.valid_actions(i))) for i in range(cfg.agents)]
            out = env.step(acts)
            env.observation()
            steps += 1
            done = out["terminated"] or out["truncated"]
        return steps

    return _timed(episode, seconds)


def gym_rate(name: str, seconds: float) -> float:
    """Return steps/s of the Gymnasium wrapper with random valid joint actions."""
    env = StatGymEnv(name)
    rng = np.random.default_rng(0)

    def episode() -> int:
        obs, _ = env.reset()
        steps, done = 0, False
        while not done:
            masks = obs["agent_masks"]
            u = rng.random(masks.shape) * masks
            obs, _, term, trunc, _ = env.step(u.argmax(axis=1))
            steps += 1
            done = term or trunc
        return steps

    return _timed(episode, seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    rows = []
    for name in CONFIGS:
        cfg = get_config(name)
        ref = reference_rate(name, args.seconds)
        vec = measure_speed(cfg, args.batch, args.seconds, threads=1).steps_per_s
        vec_mt = measure_speed(cfg, args.batch, args.seconds).steps_per_s
        vec_masks = measure_speed(cfg, args.batch, args.seconds, with_obs=False,
                                  threads=1).steps_per_s
        one = measure_speed(cfg, 1, args.seconds, threads=1).steps_per_s
        gym_ = gym_rate(name, args.seconds)
        row = {"config": name, "python_reference": ref, "vec_obs": vec,
               "vec_obs_all_threads": vec_mt, "vec_masks": vec_masks,
               "batch1": one, "gym_wrapper": gym_, "released_env_documented": RELEASED_ENV[name],
               "vec_obs_over_reference": vec / ref, "batch1_over_reference": one / ref,
               "gym_over_reference": gym_ / ref,
               "vec_obs_over_released_documented": vec / RELEASED_ENV[name],
               "vec_obs_all_threads_over_released_documented": vec_mt / RELEASED_ENV[name]}
        rows.append(row)
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}))
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "threads": numba.config.NUMBA_NUM_THREADS,
            "batch": args.batch, "seconds_per_figure": args.seconds,
            "date": time.strftime("%Y-%m-%d")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stat_speed.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                         indent=2) + "\n")
    lines = [
        "# STAT speed (joint steps/s, random valid actions, one process)", "",
        f"python {meta['python']}, {meta['machine']}, batch {args.batch}, "
        f"{args.seconds:g} s per figure, {meta['threads']} threads available, {meta['date']}. "
        "1t = one thread; all = every thread. Ratios against the python reference come from "
        "this run; the released environment's figures are documented, not measured here.", "",
        f"| config | python reference | vec B={args.batch} +obs 1t | +obs all | masks only 1t "
        "| batch 1 | gym wrapper | vec 1t/ref | batch1/ref | gym/ref | released env "
        "(documented) | vec 1t/released | vec all/released |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['python_reference']:,.0f} | {r['vec_obs']:,.0f} | "
            f"{r['vec_obs_all_threads']:,.0f} | {r['vec_masks']:,.0f} | {r['batch1']:,.0f} | "
            f"{r['gym_wrapper']:,.0f} | "
            f"{r['vec_obs_over_reference']:,.0f}x | {r['batch1_over_reference']:.1f}x | "
            f"{r['gym_over_reference']:.1f}x | {r['released_env_documented']:,} | "
            f"{r['vec_obs_over_released_documented']:,.0f}x | "
            f"{r['vec_obs_all_threads_over_released_documented']:,.0f}x |")
    (args.out / "stat_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'stat_speed.md'}")


if __name__ == "__main__":
    main()
