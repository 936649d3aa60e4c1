"""Would an env-across ("lane") layout get StatVecEnv's step() to 500x the release? A probe.

Usage:  python benchmarks/stat_lane_probe.py [--configs 3A-6T-10x6,5A-25T-50x30,5A-100T-50x30]
            [--seconds 3] [--lanes 8]
Writes benchmarks/results/stat_lane_probe.{json,md}.

The kernel in envs/stat/kernels.py keeps one environment's state together and vectorizes
within it (over tasks). The alternative is to keep each state field of L environments
side by side (`(B // L, field, L)`) and vectorize across environments. This probe measures
the part of step() where that layout can help most, refreshing the masks and the
observation, on the same states of random play, side by side in one process, one thread:

- `kernel`: the fused kernel refreshing masks and observations (what step() runs after the
  dynamics);
- `lane`: the same masks and observation from a lane-layout copy of the state (the copy is
  not timed), written into the same (B, obs_dim) and (B, n, 3 + m) arrays. It leaves out the
  release-arithmetic redo at bin edges that the kernel does (pow's squares and Python's `//`
  within a hair of an edge), which flatters the layout; the observation entries where the
  two differ (those edges) are counted, and the masks must agree everywhere.

Beside them, the time per env step that 500x the released environment's step() rate allows
(the release's rate from the committed benchmarks/results/stat_speed.json run, the only
place it was measured side by side), the rest of step() in this run (dynamics, conflicts,
rewards, auto-resets: `coordbench stat speed --sections`), and the share of end-to-end
training time that stepping takes: StatVecEnv.step() at the learners' 32 environments
against QMIX's end-to-end training rate at utd 8, both measured in this run (QMIX as in
stat_train_speed.py).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np
from numba import njit
from results_io import RESULTS, write_results
from stat_train_speed import measure as measure_training

from coordbench.envs.stat.config import ARRIVAL_RADIUS, get_config
from coordbench.envs.stat.speed import measure_sections, measure_speed, numba_threads
from coordbench.envs.stat.vec import StatVecEnv

BATCH = 4096
TRAIN_ENVS = 32  # TrainConfig.num_envs


@njit(cache=True)
def lane_masks_observe(px, py, tx, ty, mode, target, completed, selected, inv_w, top, arrival,
                       scratch, obs, masks):
    """Write masks[b] and obs[b] of every env from lane-layout state (`px[k, i, l]` is agent
    i's x in env k * L + l): bins without the edge redo, then one transposed store per env.
    Returns nothing."""
    n_blocks, n, lanes = px.shape
    m = tx.shape[1]
    nm = n * m
    for k in range(n_blocks):
        for i in range(n):  # the distance bins, L environments per vector
            for j in range(m):
                for lane in range(lanes):
                    dx = tx[k, j, lane] - px[k, i, lane]
                    dy = ty[k, j, lane] - py[k, i, lane]
                    d = math.sqrt(dx * dx + dy * dy)
                    f = np.floor(d * inv_w)
                    v = f if f < top else top
                    v = v if d >= 1.0 else 1.0
                    scratch[i * m + j, lane] = v if d >= 0.5 else 0.0
        for lane in range(lanes):
            b = k * lanes + lane
            for e in range(nm):
                obs[b, e] = scratch[e, lane]
            for i in range(n):
                obs[b, nm + i] = mode[k, i, lane]
            free = 0
            for j in range(m):
                c = completed[k, j, lane]
                s = selected[k, j, lane]
                obs[b, nm + n + j] = c
                obs[b, nm + n + m + j] = s
                free += 1 - (c | s)
            for i in range(n):
                tgt = target[k, i, lane]
                held = max(tgt, 0)  # branch-free: a free agent's "arrival" is masked out
                dx = tx[k, held, lane] - px[k, i, lane]
                dy = ty[k, held, lane] - py[k, i, lane]
                at = math.sqrt(dx * dx + dy * dy) < arrival
                masks[b, i, 0] = (tgt < 0) & (free == 0)
                masks[b, i, 1] = (tgt >= 0) & ~at
                masks[b, i, 2] = (tgt >= 0) & at
                for j in range(m):
                    masks[b, i, 3 + j] = (tgt < 0) & ((completed[k, j, lane]
                                                        | selected[k, j, lane]) == 0)


def to_lanes(a: np.ndarray, lanes: int) -> np.ndarray:
    """Return (B, f) as the lane layout (B // lanes, f, lanes), contiguous."""
    b = a.shape[0]
    return np.ascontiguousarray(a.reshape(b // lanes, lanes, -1).transpose(0, 2, 1))


def probe(name: str, seconds: float, lanes: int) -> dict:
    """Return the kernel's and the lane layout's masks + observation time (ns per env) on the
    same states of random play, and how many entries the two disagree on."""
    cfg = get_config(name)
    env = StatVecEnv(cfg, BATCH, seed=0)
    rng = np.random.default_rng(0)
    env.reset()
    obs = np.zeros_like(env.obs)
    masks = np.zeros_like(env.masks)
    scratch = np.zeros((cfg.agents * cfg.tasks, lanes))
    inv_w = 1.0 / env._bin_w
    top = env._top_bin
    kernel_t, lane_t = [], []
    obs_diff = mask_diff = entries = 0
    deadline = time.perf_counter() + seconds
    for it in range(1_000_000):  # bounded; the deadline ends it first
        env.step(env.random_valid_actions(rng))
        s = env.state
        state = [to_lanes(a, lanes) for a in (
            s.pos[:, :, 0], s.pos[:, :, 1], s.task_pos[:, :, 0], s.task_pos[:, :, 1], s.mode,
            s.target, s.completed, s.selected)]
        t0 = time.perf_counter()
        env._observe(env._all)
        t1 = time.perf_counter()
        lane_masks_observe(*state, inv_w, top, ARRIVAL_RADIUS, scratch, obs, masks)
        t2 = time.perf_counter()
        if it >= 3:  # the first calls compile and warm caches
            kernel_t.append(t1 - t0)
            lane_t.append(t2 - t1)
            obs_diff += int((obs != env.obs).sum())
            mask_diff += int((masks != env.masks).sum())
            entries += obs.size
        if t2 >= deadline and it >= 13:
            break
    per_env = 1e9 / BATCH
    ratios = np.array(kernel_t) / np.array(lane_t)
    return {"config": name, "kernel_ns": float(np.median(kernel_t)) * per_env,
            "lane_ns": float(np.median(lane_t)) * per_env,
            "kernel_over_lane": float(np.median(ratios)), "states": len(kernel_t),
            "obs_entries_differing": obs_diff, "obs_entries": entries,
            "mask_entries_differing": mask_diff}


def committed(stem: str) -> dict:
    """Return benchmarks/results/<stem>.json, or {} where it is missing."""
    path = Path(RESULTS) / f"{stem}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="3A-6T-10x6,5A-25T-50x30,5A-100T-50x30")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--train-steps", type=int, default=40_000,
                    help="QMIX training steps timed per config for the training share")
    args = ap.parse_args()
    if BATCH % args.lanes:
        raise SystemExit(f"--lanes must divide {BATCH}, got {args.lanes}")
    speed_run = committed("stat_speed")
    speed = {r["config"]: r for r in speed_run.get("rows", [])}
    rows = []
    with numba_threads(1):
        for name in args.configs.split(","):
            row = probe(name, args.seconds, args.lanes)
            release = speed.get(name, {}).get("released_env_step")
            row["budget_500x_ns"] = 1e9 / (500 * release) if release else None
            sec = measure_sections(get_config(name), BATCH, args.seconds, threads=1)
            row["rest_ns"] = sec.rest_ns  # the dynamics and the Python around the kernel
            env32 = measure_speed(get_config(name), TRAIN_ENVS, args.seconds, threads=1)
            row["step_per_s_32_envs"] = env32.step_only_per_s
            qmix = measure_training("qmix", name, args.train_steps, 8.0)["steps_per_s"]
            row["qmix_utd8_train_per_s"] = qmix
            row["step_share_of_training"] = qmix / env32.step_only_per_s
            rows.append(row)
            print(json.dumps(row))
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "batch": BATCH, "lanes": args.lanes, "threads": 1, "seconds": args.seconds,
            "train_steps": args.train_steps, "date": date.today().isoformat(),
            "release_rate_from": speed_run.get("meta", {}).get("date")}
    write_results("stat_lane_probe", {"meta": meta, "rows": rows}, render(meta, rows))


def render(meta: dict, rows: list[dict]) -> list[str]:
    """Return the markdown report's lines."""
    def ns(v: float | None) -> str:
        return "–" if v is None else f"{v:,.0f}"

    lines = [
        "# STAT: masks + observation in an env-across (lane) layout, a probe", "",
        f"`python benchmarks/stat_lane_probe.py`, {meta['date']}, python {meta['python']}, "
        f"one thread, batch {meta['batch']}, {meta['lanes']} environments per vector. "
        "Medians over the same states of random play, ns per env; kernel = the fused kernel "
        "refreshing masks and observations; lane = the same from a lane-layout copy of the "
        "state, without the kernel's release-arithmetic redo at bin edges (which flatters it; "
        "the observation entries where they differ are those edges). The 500x budget divides "
        "by the release's step() rate of the committed stat_speed run "
        f"({meta['release_rate_from']}); 'dynamics + rest' is step() minus masks and "
        "observation, measured in this run as `coordbench stat speed --sections` does.", "",
        "| config | kernel masks+obs | lane masks+obs | kernel/lane | obs entries differing "
        "| mask entries differing | dynamics + rest | 500x budget |",
        "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['config']} | {ns(r['kernel_ns'])} | {ns(r['lane_ns'])} | "
            f"{r['kernel_over_lane']:.2f}x | {r['obs_entries_differing']:,} of "
            f"{r['obs_entries']:,} | {r['mask_entries_differing']} | {ns(r['rest_ns'])} | "
            f"{ns(r['budget_500x_ns'])} |")
    lines += ["", "## How much of training is stepping", "",
              "StatVecEnv.step() at the learners' 32 environments against QMIX's end-to-end "
              f"training rate at utd 8 ({meta['train_steps']:,} steps, acting, updates and "
              "evaluations), both one thread, this run.", "",
              "| config | step() at 32 envs (steps/s) | QMIX utd 8 end to end (steps/s) "
              "| share of training time in step() |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {ns(r['step_per_s_32_envs'])} | "
                     f"{ns(r['qmix_utd8_train_per_s'])} | "
                     f"{100 * r['step_share_of_training']:.1f}% |")
    return lines


if __name__ == "__main__":
    main()
