"""The default job (`coordbench run`) on the local executor against worker processes.

Run: python benchmarks/runner_executors.py [--rounds 3] [--workers 2]

Each round runs `coordbench run` twice into fresh directories, A (--executor local) then B
(--executor process --workers N), as whole processes; the ratio local/process is taken pair by
pair, so a drift of the machine's speed hits both sides of a pair alike. Both runs must write
identical trajectories (checked with the golden test's hashes). Results:
benchmarks/results/runner_executors.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_io import write_results  # noqa: E402

from tests.test_golden import trajectory_hashes  # noqa: E402


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "coordbench", "run", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        timed(["--out", f"{tmp}/warm"])  # compile caches (numba) are warm for both sides
        for r in range(args.rounds):
            a, b = Path(tmp) / f"local{r}", Path(tmp) / f"process{r}"
            t_local = timed(["--out", str(a)])
            t_proc = timed(["--out", str(b), "--executor", "process", "--workers",
                            str(args.workers)])
            same = trajectory_hashes(a) == trajectory_hashes(b)
            rows.append({"local_s": t_local, "process_s": t_proc, "ratio": t_local / t_proc,
                         "identical_trajectories": same})
            print(f"round {r}: local {t_local:.1f} s, process {t_proc:.1f} s, "
                  f"ratio {t_local / t_proc:.2f}, identical {same}", flush=True)
    ratios = [x["ratio"] for x in rows]
    meta = {"date": datetime.now(UTC).date().isoformat(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "workers": args.workers,
            "rounds": args.rounds}
    lines = [f"# `coordbench run`: --executor local vs process --workers {args.workers}", "",
             f"{meta['date']}, {meta['cpus']} CPUs, Python {meta['python']}; whole processes, "
             "fresh run directories, pairs run back to back (A then B).", "",
             "| round | local (s) | process (s) | local / process | identical trajectories |",
             "|---|---|---|---|---|"]
    lines += [f"| {k} | {x['local_s']:.1f} | {x['process_s']:.1f} | {x['ratio']:.2f} | "
              f"{'yes' if x['identical_trajectories'] else 'NO'} |" for k, x in enumerate(rows)]
    lines += ["", f"Median ratio: {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})."]
    write_results("runner_executors", {"meta": meta, "rounds": rows,
                                       "median_ratio": statistics.median(ratios)}, lines)


if __name__ == "__main__":
    main()
