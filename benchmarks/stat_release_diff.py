"""Differential check of coordbench's STAT against the released environment, bit for bit.

Usage:  python benchmarks/stat_release_diff.py --released-src DIR --released-python PY
            [--configs all] [--episodes 40] [--p-off 0,0.1]

For every config and off-mask rate, the released environment plays and records random episodes
in its own interpreter (benchmarks/stat_release_record.py: its own layouts from reset(seed),
random valid actions, a share `p_off` replaced by random indices); then `StatVecEnv` replays the
same layouts and joint actions, and every recorded quantity is compared exactly: the agents'
positions, the observation vector, the masks, the team reward and the conflict, forced-idle and
unique-assignment counts, at the start and after every step, and where each episode ends.
Writes benchmarks/results/stat_release_diff.{json,md}; any difference is listed with the first
place it occurs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from coordbench.envs.stat.config import CONFIGS, get_config
from coordbench.envs.stat.vec import StatVecEnv

FIELDS = ("pos", "obs", "masks", "reward", "conflicts", "forced_idle", "unique", "end")


def replay(name: str, rec: dict[str, np.ndarray]) -> tuple[dict[str, int], list[str], int]:
    """Replay a recording through StatVecEnv; return (differences per field, the first few
    differences described, joint steps compared)."""
    cfg = get_config(name)
    lengths = rec["length"]
    batch = len(lengths)
    env = StatVecEnv(cfg, batch, auto_reset=False)
    obs, masks = env.reset(rec["layouts"])
    diffs = dict.fromkeys(FIELDS, 0)
    first: list[str] = []

    def note(field: str, e: int, t: int) -> None:
        diffs[field] += 1
        if len(first) < 10:
            first.append(f"{field} differs in episode {e} after step {t}")

    for e in range(batch):
        if obs[e].tolist() != rec["start_obs"][e].tolist():
            note("obs", e, 0)
        if masks[e].astype(np.float32).tolist() != rec["start_masks"][e].tolist():
            note("masks", e, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    steps = 0
    for t in range(int(lengths.max())):
        running = np.flatnonzero(lengths > t)
        actions = env.random_valid_actions(np.random.default_rng(t))  # for envs that ended
        actions[running] = rec["actions"][offsets[running] + t]
        was_active = env.active.copy()
        obs, masks, reward, info = env.step(actions)
        for e in running:
            k = offsets[e] + t
            steps += 1
            if not was_active[e]:
                note("end", e, t)
                continue
            if env.state.pos[e].tolist() != rec["pos"][k].tolist():
                note("pos", e, t + 1)
            if obs[e].tolist() != rec["obs"][k].tolist():
                note("obs", e, t + 1)
            if masks[e].astype(np.float32).tolist() != rec["masks"][k].tolist():
                note("masks", e, t + 1)
            if reward[e] != rec["reward"][k]:
                note("reward", e, t + 1)
            if info.conflicts[e] != rec["conflicts"][k]:
                note("conflicts", e, t + 1)
            if info.forced_idle[e] != rec["forced_idle"][k]:
                note("forced_idle", e, t + 1)
            if info.unique_assigned[e] != rec["unique"][k]:
                note("unique", e, t + 1)
            ended = bool(info.terminated[e] or info.truncated[e])
            if ended != (t + 1 == lengths[e]):
                note("end", e, t + 1)
    return diffs, first, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--released-src", type=Path, required=True)
    ap.add_argument("--released-python", required=True)
    ap.add_argument("--configs", default="all")
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--p-off", default="0,0.1")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    if not (args.released_src / "stat_env" / "stat_gym.py").is_file():
        ap.error(f"--released-src {args.released_src}: no stat_env/stat_gym.py there")
    names = list(CONFIGS) if args.configs == "all" else args.configs.split(",")
    for name in names:
        get_config(name)  # an unknown name fails here, before any recording
    rows = []
    recorder = Path(__file__).parent / "stat_release_record.py"
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for p_off in (float(x) for x in args.p_off.split(",")):
                path = Path(tmp) / f"{name}-{p_off}.npz"
                t0 = time.perf_counter()
                subprocess.run([args.released_python, str(recorder), "--src",
                                str(args.released_src), "--config", name, "--episodes",
                                str(args.episodes), "--p-off", str(p_off), "--out", str(path)],
                               check=True)
                with np.load(path) as f:
                    rec = {k: f[k] for k in f.files}
                diffs, first, steps = replay(name, rec)
                row = {"config": name, "p_off": p_off, "episodes": args.episodes,
                       "joint_steps": steps, "differences": diffs,
                       "total_differences": sum(diffs.values()), "first": first,
                       "seconds": round(time.perf_counter() - t0, 1)}
                rows.append(row)
                print(json.dumps(row))
    total_steps = sum(r["joint_steps"] for r in rows)
    total = sum(r["total_differences"] for r in rows)
    meta = {"date": time.strftime("%Y-%m-%d"), "episodes_per_cell": args.episodes,
            "joint_steps": total_steps, "total_differences": total}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stat_release_diff.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                                indent=2) + "\n")
    lines = ["# STAT against the released environment, bit for bit", "",
             f"`python benchmarks/stat_release_diff.py --released-src DIR --released-python PY`"
             f", {meta['date']}. The release records {args.episodes} random episodes per "
             "config and off-mask rate (its own layouts, random valid actions, a share p_off "
             "replaced by random indices); StatVecEnv replays them and every quantity is "
             "compared exactly after every step: positions, observation, masks, team reward, "
             "conflicts, forced idles, unique assignments, episode end.", "",
             f"**{total_steps:,} joint steps, {total} differences.**", "",
             "| config | p_off | episodes | joint steps | differences | first |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['p_off']:g} | {r['episodes']} | "
                     f"{r['joint_steps']:,} | {r['total_differences']} | "
                     f"{'; '.join(r['first'][:2]) or '–'} |")
    (args.out / "stat_release_diff.md").write_text("\n".join(lines) + "\n")
    print(f"{total_steps} joint steps, {total} differences; wrote "
          f"{args.out / 'stat_release_diff.md'}")


if __name__ == "__main__":
    main()
