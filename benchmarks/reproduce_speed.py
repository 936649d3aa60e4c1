"""How long `coordbench reproduce` takes, quick and full, per paper, on this machine.

Usage:  python benchmarks/reproduce_speed.py [--papers mecobench cocobench stat metrics]
        [--skip-full]
Writes benchmarks/results/reproduce_speed.json and benchmarks/results/reproduce_speed.md.

Each run starts from an empty run directory (so every condition is played) and runs the
installed entry point as a user would (`python -m coordbench reproduce PAPER [--quick]
--json`), on the local executor; a second invocation on the same directory times the resume
(nothing to play: the study and its figures are recomputed from the saved trajectories).
The targets are under 3 minutes for `--quick` and under 30 minutes for a full offline run;
for stat (which trains) and metrics (the metric-validity study) under 5 minutes for
`--quick`, while its full study (the paper's 2M /
20M steps) runs for hours and is not timed here: docs/reproduce.md estimates it from the
training rates in stat_train_speed.md.
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
from datetime import UTC, datetime
from pathlib import Path

from results_io import write_results


def timed(paper: str, quick: bool, out: Path) -> tuple[float, dict]:
    """Return (seconds, findings JSON) of one `reproduce` run into `out`."""
    cmd = [sys.executable, "-m", "coordbench", "reproduce", paper, "--out", str(out), "--json"]
    if quick:
        cmd.append("--quick")
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    took = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(res.stderr[-2000:])
    return took, json.loads(res.stdout.strip().splitlines()[-1])


def episodes_in(out: Path) -> int:
    """Return how many episode files (or, for a study that trains, training runs) the run
    directory holds."""
    return (sum(1 for _ in out.glob("episodes/*/*.jsonl"))
            or sum(1 for _ in out.glob("*_seed*.json")))


RESULTS = Path(__file__).parent / "results" / "reproduce_speed.json"


def _previous() -> list[dict]:
    try:
        return json.loads(RESULTS.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        return []


def _row(e: dict) -> str:
    quick = e["quick"]
    target = (300 if e["paper"] in ("stat", "metrics") else 180) if quick else 1800
    return (f"| {e['paper']} | {'quick' if quick else 'full'} | {e['episodes']} | "
            f"{e['seconds']:.0f} s | {e['resume_seconds']:.0f} s | {target} s | {e['holds']} / "
            f"{e['does_not_hold']} / {e['undecided']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", nargs="+", default=["mecobench", "cocobench", "stat"])
    ap.add_argument("--skip-full", action="store_true", help="Time --quick runs only.")
    args = ap.parse_args()
    data = []
    for paper in args.papers:
        # the full STAT study trains for hours: only its --quick subset is timed
        for quick in (True, False) if not args.skip_full and paper != "stat" else (True,):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "run"
                first, payload = timed(paper, quick, out)
                again, _ = timed(paper, quick, out)
                n = episodes_in(out)
            verdicts = [f["holds"] for f in payload["findings"]]
            data.append({"paper": paper, "quick": quick, "seconds": round(first, 1),
                         "resume_seconds": round(again, 1), "episodes": n,
                         "findings": len(verdicts), "holds": verdicts.count(True),
                         "does_not_hold": verdicts.count(False),
                         "undecided": verdicts.count(None),
                         "date": datetime.now(UTC).isoformat(timespec="seconds")})
    # papers not measured this time keep their last measurement
    kept = [e for e in _previous() if e["paper"] not in args.papers]
    data = kept + data
    rows = [_row(e) for e in data]
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count()}
    lines = ["# coordbench reproduce: wall-clock per paper", "",
             f"{meta['date']}, {meta['cpus']} CPUs, local executor, offline agents (no "
             "model). First run from an empty directory; resume: the same command again "
             "(nothing left to play; the study is recomputed from the saved runs).", "",
             "| paper | run | episodes (stat: training runs) | first run | resume | target | "
             "holds / does not / "
             "undecided |", "|---|---|---|---|---|---|---|", *rows]
    write_results("reproduce_speed", {"meta": meta, "runs": data}, lines)


if __name__ == "__main__":
    main()
