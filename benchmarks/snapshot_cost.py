"""What resumable training costs: a training run's rate with snapshots taken at several
intervals against none, side by side in one process, and the size and save time of one
snapshot (learn/snapshot.py; the job engine writes them under RUN/.jobs/).

Usage:  python benchmarks/snapshot_cost.py [--steps 64000] [--every 60,10,2]
Writes benchmarks/results/snapshot_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from coordbench.learn.methods import make, train, train_configs
from coordbench.runner.jobs import JobContext

RESULTS = Path(__file__).parent / "results"
CASES = [("qmix", "5A-25T-50x30"), ("mappo", "5A-25T-50x30"), ("qmix", "3A-6T-10x6")]


class CountingStore:
    """The job engine's snapshot store (a JobContext) that also counts and times saves."""

    def __init__(self, root: str, every_s: float) -> None:
        self.ctx, self.every_s = JobContext(root, "bench", every_s), every_s
        self.saves, self.save_s, self.size = 0, 0.0, 0

    def resume(self) -> bytes | None:
        return None

    def save(self, blob: bytes) -> None:
        t0 = time.perf_counter()
        self.ctx.save(blob)
        self.save_s += time.perf_counter() - t0
        self.saves, self.size = self.saves + 1, len(blob)


def one(algo: str, config: str, steps: int, every: float | None) -> dict:
    """Train once; return the rate and, with `every`, the snapshot numbers."""
    tc = train_configs(config, algo, [0], steps=steps, eval_every=steps, eval_episodes=4)[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = CountingStore(tmp, every) if every is not None else None
        t0 = time.perf_counter()
        res = train(tc, make(tc), snapshots=store)
        wall = time.perf_counter() - t0
    out = {"algo": algo, "config": config, "every_s": every, "steps": steps, "wall_s": wall,
           "steps_per_s": steps / wall, "final_return": res["final_return"]}
    if store is not None:
        out.update(snapshots=store.saves, save_s=store.save_s, snapshot_mb=store.size / 2**20)
    return out


def main() -> None:
    """Run every case without snapshots and at each interval; write the results."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=64_000)
    ap.add_argument("--every", default="60,10,2")
    args = ap.parse_args()
    intervals = [float(x) for x in args.every.split(",")]
    rows = []
    for algo, config in CASES:
        base = one(algo, config, args.steps, None)
        rows.append(base)
        for every in intervals:
            r = one(algo, config, args.steps, every)
            r["rate_vs_none"] = r["steps_per_s"] / base["steps_per_s"]
            if r["snapshots"]:  # the whole cost of one snapshot: state, serialise, write
                r["s_per_snapshot"] = max(0.0, r["wall_s"] - base["wall_s"]) / r["snapshots"]
            assert r["final_return"] == base["final_return"], "snapshots changed the run"
            rows.append(r)
            print(json.dumps(r))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "snapshot_cost.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["# Snapshot cost of resumable training", "",
             f"One thread, {args.steps:,} environment steps per run, each case without "
             "snapshots and with one every N seconds, in one process (`python "
             "benchmarks/snapshot_cost.py`). The final return is identical in every row of a "
             "case (asserted).", "",
             "| method | config | snapshot every | steps/s | vs none | snapshots | "
             "MB each | s per snapshot | share of a 60 s interval |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        every = "none" if r["every_s"] is None else f"{r['every_s']:g} s"
        lines.append(f"| {r['algo']} | {r['config']} | {every} | {r['steps_per_s']:,.0f} | "
                     f"{r.get('rate_vs_none', 1.0):.3f} | {r.get('snapshots', 0)} | "
                     f"{r.get('snapshot_mb', 0):.1f} | {r.get('s_per_snapshot', 0):.3f} | "
                     f"{r.get('s_per_snapshot', 0) / 60:.2%} |")
    lines += ["", "Rows with no snapshot measure the noise between two runs of the same work. "
              "A snapshot holds the replay buffer's filled rows, so an off-policy run's grows "
              "with the buffer (100,000 transitions at most); the default interval "
              "(`--snapshot-every 60`) costs the share in the last column."]
    (RESULTS / "snapshot_cost.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
