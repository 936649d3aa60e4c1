"""LeRobot reads what `coordbench physical export --format lerobot` writes: checked with LeRobot
itself, in its own virtual environment (LeRobot pins an older torch than coordbench's, so it
is never a dependency of coordbench, nor in CI).

Usage:
  python3.11 -m venv /tmp/lerobot-venv && /tmp/lerobot-venv/bin/pip install lerobot==0.4.4
  python benchmarks/lerobot_check.py --lerobot-python /tmp/lerobot-venv/bin/python [--n 3]

Writes benchmarks/results/lerobot_check.json and .md. In this process (coordbench's
environment): N noisy-expert demonstrations of every task (the CoBot's; the G1's too where the
G1 model files are found), each exported with `coordbench physical export` (and one task with
`--images` too). Then in LeRobot's environment, per dataset:
- `LeRobotDataset(repo_id, root=DIR, video_backend="pyav")` loads it; the episode and frame
  counts are the demonstrations'; every frame is read (`ds[i]`), and its `action` and
  `observation.state` are compared with the demonstrations' arrays (the largest difference is
  reported: 0 means equal to float32 precision);
- LeRobot's own writer (`LeRobotDataset.create`, `add_frame`, `save_episode`, `finalize`)
  writes the same frames, and every field is compared with coordbench's: info.json (all but
  coordbench's own `coordbench` block), the Arrow schemas of the data, episodes and tasks files
  (the episodes file's extra `seed` column aside) and the stats' keys.
Then, in this process: a policy trained on `--demos lerobot:DIR` is compared byte for byte with
one trained on the demonstrations folder (same seed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_io import write_results

INSIDE = r'''
import json, shutil, sys, tempfile, time
from pathlib import Path
import numpy as np, pyarrow.parquet as pq
import lerobot
from lerobot.datasets.lerobot_dataset import LeRobotDataset

def schema(path):
    t = pq.read_schema(path)
    return {f.name: str(f.type) for f in t}

def writer_copy(ds, root):
    """LeRobot's own writer, fed the frames LeRobot read from coordbench's dataset."""
    feats = {k: dict(v) for k, v in ds.meta.info["features"].items()
             if k not in ("timestamp", "frame_index", "episode_index", "index", "task_index")}
    for v in feats.values():
        v.pop("info", None)
    ref = LeRobotDataset.create("coordbench/ref", fps=ds.fps, features=feats, root=root,
                                robot_type=ds.meta.info["robot_type"],
                                use_videos=bool(ds.meta.video_keys), vcodec="h264")
    ep = 0
    for i in range(len(ds)):
        item = ds[i]
        if int(item["episode_index"]) != ep:
            ref.save_episode()
            ep = int(item["episode_index"])
        frame = {"task": item["task"]}
        for k, v in feats.items():
            x = item[k].numpy()
            if v["dtype"] == "video":  # LeRobot hands frames back channel first, in [0, 1]
                x = (np.transpose(x, (1, 2, 0)) * 255).round().astype(np.uint8)
            elif v["shape"] == [1] or v["shape"] == (1,):
                x = x.reshape(1)
            frame[k] = x
        ref.add_frame(frame)
    ref.save_episode()
    ref.finalize()
    return ref

def compare(a, b):
    diffs = []
    ia = json.loads((a / "meta/info.json").read_text()); ia.pop("coordbench", None)
    ib = json.loads((b / "meta/info.json").read_text())
    for k in sorted(set(ia) | set(ib)):
        if k in ("splits",):
            continue  # coordbench names its train and val episodes; LeRobot's writer all train
        if ia.get(k) != ib.get(k):
            diffs.append(f"info.json {k}: {str(ia.get(k))[:200]} != {str(ib.get(k))[:200]}")
    files = ["data/chunk-000/file-000.parquet", "meta/episodes/chunk-000/file-000.parquet",
             "meta/tasks.parquet"]
    for f in files:
        sa, sb = schema(a / f), schema(b / f)
        sa.pop("seed", None)
        if sa != sb:
            only = {k: (sa.get(k), sb.get(k)) for k in set(sa) | set(sb) if sa.get(k) != sb.get(k)}
            diffs.append(f"{f}: {only}")
        if list(sa) != [k for k in sb if k in sa]:
            diffs.append(f"{f}: column order differs")
    ma = pq.read_schema(a / files[0]).metadata[b"huggingface"]
    mb = pq.read_schema(b / files[0]).metadata[b"huggingface"]
    fa, fb = json.loads(ma)["info"]["features"], json.loads(mb)["info"]["features"]
    if fa != fb:
        diffs.append(f"huggingface schema metadata: {fa} != {fb}")
    sa = json.loads((a / "meta/stats.json").read_text())
    sb = json.loads((b / "meta/stats.json").read_text())
    if {k: sorted(v) for k, v in sa.items()} != {k: sorted(v) for k, v in sb.items()}:
        diffs.append("stats.json keys differ")
    return diffs

out = []
for job in json.loads(sys.argv[1]):
    t0 = time.perf_counter()
    ds = LeRobotDataset("coordbench/" + Path(job["dataset"]).name, root=job["dataset"],
                        video_backend="pyav")
    load_s = time.perf_counter() - t0
    z = np.load(job["demos_train"])
    zs = [z] + ([np.load(job["demos_val"])] if job.get("demos_val") else [])
    obs = np.concatenate([q["obs"] for q in zs]); act = np.concatenate([q["actions"] for q in zs])
    lengths = [int(x) for q in zs for x in np.diff(q["episode_start"])]
    t0 = time.perf_counter()
    got_a, got_s, frames = [], [], 0
    for i in range(len(ds)):
        item = ds[i]
        got_a.append(item["action"].numpy()); got_s.append(item["observation.state"].numpy())
        for k in ds.meta.video_keys:
            assert tuple(item[k].shape) == (3, job["size"], job["size"]), item[k].shape
        frames += 1
    iterate_s = time.perf_counter() - t0
    got_a, got_s = np.stack(got_a), np.stack(got_s)
    want_a = act.reshape(len(act), -1).astype(np.float32)
    want_s = obs.reshape(len(obs), -1).astype(np.float32)
    row = {"dataset": job["name"], "episodes": ds.num_episodes, "want_episodes": len(lengths),
           "frames": ds.num_frames, "want_frames": int(sum(lengths)), "iterated": frames,
           "videos": len(ds.meta.video_keys), "load_s": round(load_s, 2),
           "iterate_s": round(iterate_s, 2),
           "action_max_diff": float(np.abs(got_a - want_a).max()) if got_a.shape == want_a.shape
           else None,
           "state_max_diff": float(np.abs(got_s - want_s).max()) if got_s.shape == want_s.shape
           else None}
    with tempfile.TemporaryDirectory() as tmp:
        ref_root = Path(tmp) / "ref"
        writer_copy(ds, ref_root)
        row["writer_diffs"] = compare(Path(job["dataset"]), ref_root)
    out.append(row)
print(json.dumps({"lerobot": getattr(lerobot, "__version__", "?"),
                  "torch": __import__("torch").__version__, "rows": out}))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lerobot-python", required=True,
                    help="python of a virtual environment with lerobot installed")
    ap.add_argument("--n", type=int, default=3, help="demonstrations per task")
    ap.add_argument("--images-task", default="CoCarry", help="a task also exported with --images")
    args = ap.parse_args()

    from coordbench.envs.physical.demo_files import demos_name
    from coordbench.envs.physical.tasks import TASKS, get_task
    from coordbench.suites.physical.demos import record_all

    g1 = []
    try:
        from coordbench.envs.physical.g1 import resolve_model

        resolve_model()
        from coordbench.envs.physical.tasks import EMBODIMENTS  # noqa: F401

        for name in TASKS:
            try:
                get_task(name, "g1")
                g1.append(name)
            except Exception:
                pass
    except Exception:
        pass
    tmp = Path(tempfile.mkdtemp(prefix="lerobot-check-"))
    demos, sets = tmp / "demos", tmp / "sets"
    cli = [sys.executable, "-m", "coordbench"]
    t0 = time.perf_counter()
    record_all(demos, list(TASKS), args.n)
    if g1:
        record_all(demos, g1, args.n, embodiment="g1")
    record_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([*cli, "physical", "export", str(demos), "--format", "lerobot", "--out",
                    str(sets), "--json"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*cli, "physical", "export", str(demos), "--format", "lerobot", "--out",
                    str(tmp / "images"), "--images", "--only", args.images_task, "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    export_s = time.perf_counter() - t0
    jobs = []
    for name in sorted(p.name for p in sets.iterdir()):
        task, _, emb = name.partition("_")
        emb = emb or "cobot"
        jobs.append({"name": name, "dataset": str(sets / name), "size": 64,
                     "demos_train": str(demos / demos_name(task, emb)),
                     "demos_val": str(demos / demos_name(task, emb, "val"))
                     if (demos / demos_name(task, emb, "val")).is_file() else None})
    # with the G1's demonstrations too, the task's export is two datasets (one an embodiment)
    images = tmp / "images"
    images = images if (images / "meta").is_dir() else images / args.images_task
    jobs.append({**next(j for j in jobs if j["name"] == args.images_task),
                 "name": f"{args.images_task} --images", "dataset": str(images)})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    t0 = time.perf_counter()
    inside = subprocess.run([args.lerobot_python, "-c", INSIDE, json.dumps(jobs)], env=env,
                            capture_output=True, text=True)
    check_s = time.perf_counter() - t0
    if inside.returncode:
        sys.exit("LeRobot's check failed:\n" + inside.stderr[-3000:])
    res = json.loads(inside.stdout.strip().splitlines()[-1])

    # the same policy from the dataset as from the demonstrations
    task = args.images_task
    pts = []
    for k, src in enumerate((str(demos), f"lerobot:{sets / task}")):
        pt = tmp / f"policy{k}.pt"
        subprocess.run([*cli, "physical", "train", "--task", task, "--demos", src, "--steps",
                        "200", "--rollouts", "0", "--out", str(pt), "--json"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        pts.append(pt.read_bytes())
    same = pts[0] == pts[1]

    rows = res["rows"]
    ok = all(r["episodes"] == r["want_episodes"] and r["frames"] == r["want_frames"] ==
             r["iterated"] and r["action_max_diff"] == 0.0 and r["state_max_diff"] == 0.0
             and not r["writer_diffs"] for r in rows)
    # the venv's path is this machine's: the command names it as the usage line does
    command = ("python benchmarks/lerobot_check.py --lerobot-python "
               f"LEROBOT_VENV/bin/python --n {args.n}")
    data = {"meta": {"command": command, "lerobot": res["lerobot"], "lerobot_torch": res["torch"],
                     "python": platform.python_version(), "n": args.n, "g1_tasks": g1,
                     "record_s": round(record_s, 1), "export_s": round(export_s, 1),
                     "lerobot_check_s": round(check_s, 1)},
            "rows": rows, "same_policy_from_dataset": same, "all_ok": ok and same}
    lines = [f"# LeRobot reads coordbench's exports (LeRobot {res['lerobot']}, its torch "
             f"{res['torch']})", "", f"`{command}`", "",
             f"{args.n} demonstrations per task; recorded in {record_s:.0f} s, exported in "
             f"{export_s:.0f} s, checked in LeRobot in {check_s:.0f} s.", "",
             "| dataset | episodes | frames | read | videos | max diff action | max diff state "
             "| LeRobot writer's fields |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['episodes']}/{r['want_episodes']} | {r['frames']}/"
                     f"{r['want_frames']} | {r['iterated']} | {r['videos']} | "
                     f"{r['action_max_diff']} | {r['state_max_diff']} | "
                     f"{'same' if not r['writer_diffs'] else '; '.join(r['writer_diffs'])} |")
    lines += ["", f"A policy trained on `--demos lerobot:DIR` ({task}, 200 steps, seed 0) is "
              f"{'byte for byte the one' if same else 'NOT the one'} trained on the "
              "demonstrations folder.", "", f"All checks passed: {data['all_ok']}."]
    write_results("lerobot_check", data, lines)
    if not data["all_ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
