"""Physical replay: what recording poses costs, and what rendering a video from them costs.

Usage:  python benchmarks/physical_replay.py [--rollouts 32] [--repeats 2] [--size 640x480]
Writes benchmarks/results/physical_replay.json and .md.

Per task, in one process: expert rollouts on seeds 1..N in lockstep batches of 16, with and
without pose recording, interleaved batch by batch (the order swapped every repeat) so that
the machine's load falls on both alike; rollouts/s of each by this process's CPU time (other
processes on a shared machine inflate wall time, not CPU time) and by wall time, the
trajectory size per episode (JSONL bytes) of each, and a check that recording changes nothing
else in the trajectory. The recording's own cost is also timed alone: one episode's samples
taken and encoded into its event, in ms.
Then one episode (seed 1) rendered to MP4 from its poses: seconds, frames, ms per frame, file
size.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from results_io import write_results


def _without_poses(tr) -> list:
    return [e for e in tr.events if e.type != "physical_poses"]


def measure(task: str, rollouts: int, repeats: int) -> dict:
    """Return rollouts/s and bytes per episode with and without poses for one task."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run

    wall = {False: 0.0, True: 0.0}
    cpu = {False: 0.0, True: 0.0}
    size: dict[bool, list[int]] = {False: [], True: []}
    samples: list[int] = []
    batches = [list(range(a, min(a + 16, rollouts + 1))) for a in range(1, rollouts + 1, 16)]
    for rep in range(repeats):
        for seeds in batches:
            got = {}
            for poses in ((False, True) if rep % 2 == 0 else (True, False)):
                start, start_cpu = time.perf_counter(), time.process_time()
                got[poses], _ = run(task, ExpertPolicy(0.0), seeds, poses=poses)
                wall[poses] += time.perf_counter() - start
                cpu[poses] += time.process_time() - start_cpu
            if rep == 0:
                for a, b in zip(got[False], got[True], strict=True):
                    # recording only observes: the rest of the trajectory is unchanged
                    assert _without_poses(b) == a.events, task
                    size[False].append(len(a.to_jsonl().encode()))
                    size[True].append(len(b.to_jsonl().encode()))
                    samples.append(len(b.events[-2].steps))
    n = rollouts * repeats
    return {"task": task, "rollouts": rollouts, "repeats": repeats,
            "rollouts_per_s_off": n / cpu[False], "rollouts_per_s_on": n / cpu[True],
            "overhead": cpu[True] / cpu[False] - 1,
            "wall_rollouts_per_s_off": n / wall[False], "wall_rollouts_per_s_on": n / wall[True],
            "record_ms": recording_ms(task, round(sum(samples) / len(samples))),
            "bytes_off": sum(size[False]) / len(size[False]),
            "bytes_on": sum(size[True]) / len(size[True]),
            "samples": sum(samples) / len(samples)}


def recording_ms(task: str, samples: int, repeats: int = 20) -> float:
    """Return the ms one episode's recording costs alone: `samples` pose samples and their
    encoding into the event."""
    from coordbench.envs.physical.env import PhysicalEnv
    from coordbench.envs.physical.tasks import get_task
    from coordbench.suites.physical.episode import PoseTrack, pose

    env = PhysicalEnv(get_task(task))
    env.reset(1)
    lay = pose.pose_layout(env.model, env.n)
    start = time.process_time()
    for _ in range(repeats):
        track = PoseTrack(lay)
        for k in range(samples):
            env.steps = k  # a new step each time; the state itself does not matter here
            track.add(env)
        track.event()
    return 1000 * (time.process_time() - start) / repeats


def render_cost(task: str, width: int, height: int) -> dict:
    """Return the seconds, frames and file size of seed 1's video."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.suites.physical.episode import run
    from coordbench.suites.physical.video import render_video

    tr = run(task, ExpertPolicy(0.0), [1])[0][0]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "v.mp4"
        start = time.perf_counter()
        info = render_video(tr, out, width=width, height=height)
        wall = time.perf_counter() - start
        return {"render_s": wall, "frames": info.frames, "ms_per_frame": 1000 * wall / info.frames,
                "mp4_bytes": out.stat().st_size}


def main() -> None:
    from coordbench.envs.physical.tasks import TASKS

    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--tasks", default="all")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    tasks = list(TASKS) if args.tasks == "all" else args.tasks.split(",")
    load = os.getloadavg()[0]
    rows = []
    for task in tasks:
        row = measure(task, args.rollouts, args.repeats)
        row.update(render_cost(task, width, height))
        rows.append(row)
        print(task, {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
              flush=True)
    meta = {"python": platform.python_version(), "load_avg_at_start": load,
            "load_avg_at_end": os.getloadavg()[0], "size": [width, height]}
    off = sum(r["rollouts_per_s_off"] for r in rows) / len(rows)
    on = sum(r["rollouts_per_s_on"] for r in rows) / len(rows)
    grow = sum(r["bytes_on"] / r["bytes_off"] for r in rows) / len(rows)
    # the recording's own cost against an episode's CPU time without it
    share = [r["record_ms"] * r["rollouts_per_s_off"] / 1000 for r in rows]
    lines = ["# Physical replay: cost of recording poses, size, rendering", "",
             f"`python benchmarks/physical_replay.py --rollouts {args.rollouts} --repeats "
             f"{args.repeats} --size {args.size}`; one process, load average {load:.1f} at "
             f"the start and {meta['load_avg_at_end']:.1f} at the end (2-core machine shared "
             "with other work). Expert rollouts in lockstep batches of 16, with and without "
             "pose recording, interleaved batch by batch; every recorded trajectory equals the "
             "unrecorded one once its physical_poses line is taken out.", "",
             f"Mean over tasks (CPU time of this process): {off:.2f} rollouts/s without poses, "
             f"{on:.2f} with ({on / off - 1:+.1%}); trajectories {grow:.1f}x larger on average. "
             "Rollouts/s are by CPU time; wall-time rates are in the JSON. `recording ms`: one "
             "episode's pose samples and their encoding, timed alone: "
             f"{min(r['record_ms'] for r in rows):.1f}-{max(r['record_ms'] for r in rows):.1f} "
             f"ms, {min(share):.2%}-{max(share):.2%} of an episode's CPU time; the A/B "
             "changes per task are the machine's noise around that.", "",
             "| task | rollouts/s without | with poses | change | recording ms per episode | "
             "samples per episode | bytes per episode without | with poses | video s "
             f"(seed 1) | frames | ms per frame {width}x{height} | MP4 KB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['rollouts_per_s_off']:.2f} | {r['rollouts_per_s_on']:.2f} | "
            f"{r['rollouts_per_s_on'] / r['rollouts_per_s_off'] - 1:+.1%} | "
            f"{r['record_ms']:.1f} | {r['samples']:.0f} | {r['bytes_off']:,.0f} | "
            f"{r['bytes_on']:,.0f} | "
            f"{r['render_s']:.1f} | {r['frames']} | {r['ms_per_frame']:.0f} | "
            f"{r['mp4_bytes'] / 1024:.0f} |")
    write_results("physical_replay", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
