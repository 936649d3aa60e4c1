"""STAT speed benchmark: the vectorized core against a pure-Python step, side by side.

Usage:  python benchmarks/stat_speed.py [--seconds 5] [--batch 4096] [--rounds 3]
            [--released-src DIR --released-python PY]
Writes benchmarks/results/stat_speed.json and benchmarks/results/stat_speed.md.

Every figure is joint environment steps per second (one joint step = all n agents of one env)
under random valid actions, measured in this one process:

- vec B=4096 (+obs): the vectorized core with masks and observation vectors rebuilt each step,
  on one thread, and on all of numba's threads (the kernels split rows across them); "loop"
  counts drawing the random valid actions too, "step()" only the time inside
  `StatVecEnv.step()` (the step, masks, observations and auto-resets);
- vec B=4096 (masks only): the same without observation vectors, one thread;
- batch 1: the vectorized core with one environment (the per-episode path), with observations;
- gym wrapper: `coordbench/STAT-v0`, one environment, observations and masks;
- python reference: coordbench's plain-Python STAT (envs/stat/reference.py), which, like the
  released environment, rebuilds the state vector and the masks in Python every step;
- sections (one thread, B=4096): nanoseconds per env step of rebuilding the masks alone, of the
  observation vectors on top of them, and of the rest of step() (`measure_sections`), beside
  the budget per env step that 500x the released environment's step() rate allows.

The python reference and the one-thread vec figures alternate for `--rounds` rounds (this
machine's speed drifts by tens of percent within minutes, and by several times between days)
and their medians are reported.

The released environment (Mesa-based, not part of coordbench) is measured side by side when
`--released-src` names the `src` directory of a checkout of the release and
`--released-python` an interpreter that can import it (`mesa<3`): each round then also runs
benchmarks/stat_release_rate.py, and the ratios divide figures of the same run. Without it the
table falls back to step() rates documented on another day (5,065 / 2,004 / 626), labelled as
such: those are not a same-run ratio, and on 2026-12-03 the release ran 5.5-6.6x faster than
them on a quieter machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.gym_env import StatGymEnv
from coordbench.envs.stat.layouts import LayoutStream
from coordbench.envs.stat.reference import ReferenceStatEnv
from coordbench.envs.stat.speed import measure_sections, measure_speed

CONFIGS = ["3A-6T-10x6", "5A-25T-50x30", "5A-100T-50x30"]
# Documented step() rates of the released environment on one core of this machine kind (the
# higher of two measurements; see the module docstring).
RELEASED_ENV = {"3A-6T-10x6": 5065, "5A-25T-50x30": 2004, "5A-100T-50x30": 626}


def _timed(loop, seconds: float) -> float:
    """Run loop() (which returns steps done) until `seconds` pass; return steps per second."""
    loop()  # warm-up / compile
    steps, start = 0, time.perf_counter()
    while (now := time.perf_counter()) - start < seconds:
        steps += loop()
    return steps / (now - start)


def released_rate(name: str, seconds: float, src: Path, python: str) -> float:
    """Return the released environment's step() rate, measured now in a subprocess."""
    out = subprocess.run([python, str(Path(__file__).parent / "stat_release_rate.py"),
                          "--src", str(src), "--config", name, "--seconds", str(seconds)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["step_per_s"]


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
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--released-src", type=Path, default=None,
                    help="src directory of a checkout of the released STAT code")
    ap.add_argument("--released-python", default=sys.executable,
                    help="interpreter that can import the release (mesa<3)")
    args = ap.parse_args()
    if args.released_src and not (args.released_src / "stat_env" / "stat_gym.py").is_file():
        ap.error(f"--released-src {args.released_src}: no stat_env/stat_gym.py there")
    rows = []
    for name in CONFIGS:
        cfg = get_config(name)
        refs, loops, steps, released_rounds = [], [], [], []
        for _ in range(args.rounds):  # alternate, so that drift hits both alike
            refs.append(reference_rate(name, args.seconds))
            if args.released_src:
                released_rounds.append(released_rate(name, args.seconds, args.released_src,
                                                     args.released_python))
            r = measure_speed(cfg, args.batch, args.seconds, threads=1)
            loops.append(r.steps_per_s)
            steps.append(r.step_only_per_s)
        ref, vec, vec_step = (statistics.median(x) for x in (refs, loops, steps))
        vec_mt = measure_speed(cfg, args.batch, args.seconds).steps_per_s
        vec_masks = measure_speed(cfg, args.batch, args.seconds, with_obs=False,
                                  threads=1).step_only_per_s
        one = measure_speed(cfg, 1, args.seconds, threads=1).steps_per_s
        gym_ = gym_rate(name, args.seconds)
        sections = measure_sections(cfg, args.batch, args.seconds)
        same_run = bool(released_rounds)
        released = statistics.median(released_rounds) if same_run else RELEASED_ENV[name]
        row = {"config": name, "python_reference": ref, "vec_obs": vec,
               "vec_obs_step_only": vec_step, "vec_obs_all_threads": vec_mt,
               "vec_masks_step_only": vec_masks, "batch1": one, "gym_wrapper": gym_,
               "released_env_step": released, "released_env_same_run": same_run,
               "released_env_per_round": released_rounds,
               "vec_obs_over_reference": vec / ref, "batch1_over_reference": one / ref,
               "gym_over_reference": gym_ / ref,
               "vec_obs_step_only_over_released": vec_step / released,
               # round k of ours over round k of the release when both ran (else documented)
               "vec_obs_step_only_over_released_per_round": [
                   x / (released_rounds[k] if same_run else released)
                   for k, x in enumerate(steps)],
               "python_reference_per_round": refs, "vec_obs_step_only_per_round": steps,
               "vec_obs_over_released": vec / released,
               "vec_obs_all_threads_over_released": vec_mt / released,
               "sections_ns": {"step": sections.step_ns, "masks": sections.masks_ns,
                               "observation": sections.observation_ns,
                               "rest": sections.rest_ns},
               "budget_500x_ns": 1e9 / (500 * released)}
        rows.append(row)
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}))
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "threads": numba.config.NUMBA_NUM_THREADS, "rounds": args.rounds,
            "batch": args.batch, "seconds_per_figure": args.seconds,
            "date": time.strftime("%Y-%m-%d")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stat_speed.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                         indent=2) + "\n")
    lines = [
        "# STAT speed (joint steps/s, random valid actions, one process)", "",
        f"python {meta['python']}, {meta['machine']}, batch {args.batch}, "
        f"{args.seconds:g} s per figure, {meta['threads']} threads available, {meta['date']}. "
        f"1t = one thread; all = every thread. The python reference and the vec 1t figures "
        f"are medians of {args.rounds} alternating rounds. loop = drawing random valid actions "
        "and stepping; step() = the time inside StatVecEnv.step() alone. "
        + ("The released environment's step() rate was measured in the same run, alternating "
           "with ours (benchmarks/stat_release_rate.py), and each ratio divides figures of "
           "that run." if all(r["released_env_same_run"] for r in rows) else
           "The released environment was not run: its step() rates are documented figures "
           "from another day, so the ratios to it are not same-run ratios and this machine's "
           "speed varies by several times between days."), "",
        f"| config | python reference | vec B={args.batch} +obs 1t loop | +obs 1t step() | "
        "+obs all loop | masks only 1t step() | batch 1 | gym wrapper | vec 1t loop/ref | "
        "released env step() | vec 1t step()/released (per round) | "
        "vec 1t loop/released | vec all loop/released |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_round = ", ".join(f"{x:,.0f}" for x in r["vec_obs_step_only_over_released_per_round"])
        lines.append(
            f"| {r['config']} | {r['python_reference']:,.0f} | {r['vec_obs']:,.0f} | "
            f"{r['vec_obs_step_only']:,.0f} | {r['vec_obs_all_threads']:,.0f} | "
            f"{r['vec_masks_step_only']:,.0f} | {r['batch1']:,.0f} | {r['gym_wrapper']:,.0f} | "
            f"{r['vec_obs_over_reference']:,.0f}x | {r['released_env_step']:,.0f}"
            f"{'' if r['released_env_same_run'] else ' (documented)'} | "
            f"**{r['vec_obs_step_only_over_released']:,.0f}x** ({per_round}) | "
            f"{r['vec_obs_over_released']:,.0f}x | "
            f"{r['vec_obs_all_threads_over_released']:,.0f}x |")
    lines += [
        "", f"## Where step() spends its time (ns per env step, one thread, B={args.batch})", "",
        "Medians over the same states of random play: the fused kernel refreshing the masks "
        "alone, then masks and observations (the observation column is the difference), then "
        "the whole step(); rest = step() minus both (dynamics, conflicts, rewards, auto-resets, "
        "the Python around the kernel). The budget is the time per env step that 500x the "
        "released environment's step() rate allows (" + (
            "measured in this run)." if all(r["released_env_same_run"] for r in rows) else
            "documented figures from another day, not this run's)."), "",
        "| config | step() | masks | observation | rest | 500x budget | masks + observation "
        "over budget |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sec, budget = r["sections_ns"], r["budget_500x_ns"]
        lines.append(f"| {r['config']} | {sec['step']:,.0f} | {sec['masks']:,.0f} | "
                     f"{sec['observation']:,.0f} | {sec['rest']:,.0f} | {budget:,.0f} | "
                     f"{(sec['masks'] + sec['observation']) / budget:.2f}x |")
    (args.out / "stat_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'stat_speed.md'}")


if __name__ == "__main__":
    main()
