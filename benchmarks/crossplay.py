"""Cross-play at work, and a person's click on the play page.

Usage:  python benchmarks/crossplay.py [--train-steps 20000] [--episodes 100] [--clicks 60]
Writes benchmarks/results/crossplay.json and benchmarks/results/crossplay.md.

1. STAT 3A-6T-10x6, four learned partners: QMIX and VDN, two training seeds each
   (`stat train --steps N`, short runs: the point is the cross-play machinery and what
   separately trained agents do together, not the paper's returns), every ordered pair on
   the same 100 layouts: wall time, cells per minute, the matrix of return and conflict
   rate.
2. Constructs rep240 (teams of 2, broadcast), four rule partners: rule, rule:reverse (the
   opposite claim convention), rule:message_loss=0.3 and rule:perception=0.2: wall time,
   cells per minute, the SR matrix.
3. The play page in a real browser (Debian's chromium through playwright): a person's seat
   in STAT episodes, clicked as fast as the page allows; latency from a click to the next
   question on screen (p50/p99, loopback): the episode's steps up to the seat's next choice,
   the server's answer to the page's waiting request, and the page drawing it.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results_io import write_results  # noqa: E402

CLI = [sys.executable, "-m", "coordbench"]


def _cli(*args: str) -> dict:
    res = subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout)


def _timed(*args: str) -> tuple[dict, float]:
    t0 = time.perf_counter()
    out = _cli(*args)
    return out, time.perf_counter() - t0


def stat_learned(tmp: Path, steps: int, episodes: int) -> dict:
    ckpts = {}
    train_s = {}
    for algo in ("qmix", "vdn"):
        t0 = time.perf_counter()
        out = _cli("stat", "train", "--config", "3A-6T-10x6", "--algo", algo, "--steps",
                   str(steps), "--seeds", "0-1", "--eval-episodes", "5",
                   "--out", str(tmp / "train"))
        train_s[algo] = time.perf_counter() - t0
        del out
        for seed in (0, 1):
            ckpts[f"{algo}{seed}"] = next((tmp / "train").rglob(f"{algo}_3A-6T-10x6_seed{seed}.pt"))
    partners = [a for name, path in ckpts.items() for a in ("--partner", f"{name}=learned:{path}")]
    got, wall = _timed("crossplay", "stat", "--config", "3A-6T-10x6", "--episodes",
                       str(episodes), *partners, "--out", str(tmp / "cross"))
    conflicts = _cli("crossplay", "stat", "--config", "3A-6T-10x6", "--episodes",
                     str(episodes), *partners, "--metric", "conflict_rate",
                     "--out", str(tmp / "cross"))
    cells = len(got["partners"]) ** 2
    return {"partners": got["partners"], "train_s": train_s, "wall_s": wall,
            "cells": cells, "cells_per_min": cells / wall * 60, "episodes": episodes,
            "return": got, "conflict_rate": conflicts}


def constructs_rule(tmp: Path) -> dict:
    partners = ["rule=rule", "rev=rule:reverse", "lossy=rule:message_loss=0.3",
                "blurry=rule:perception=0.2"]
    args = [a for p in partners for a in ("--partner", p)]
    got, wall = _timed("crossplay", "constructs", "--subset", "rep240", "--team", "2",
                       "--protocol", "broadcast", *args, "--out", str(tmp / "cons"))
    cells = len(partners) ** 2
    return {"partners": got["partners"], "wall_s": wall, "cells": cells,
            "cells_per_min": cells / wall * 60, "instances": got["matrix"][0][0]["n"],
            "SR": got}


def play_latency(tmp: Path, clicks: int) -> dict:
    from playwright.sync_api import Error, sync_playwright

    from tests.test_viewer_browser import ARGS, CHROMIUM

    proc = subprocess.Popen([*CLI, "play", "stat", "--seat", "agent_0", "--config",
                             "3A-6T-10x6", "--episodes", "60", "--protocol", "none",
                             "--out", str(tmp / "play")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    lat: list[float] = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = b.new_page()
        page.goto(url)
        while proc.poll() is None and len(lat) < clicks:
            try:
                page.wait_for_selector("#choices button", timeout=5000)
            except Error:
                continue
            t0 = time.perf_counter()
            try:
                page.locator("#choices button").first.click(timeout=1000)
                page.wait_for_selector("#choices button", timeout=10_000)
            except Error:
                continue
            lat.append(time.perf_counter() - t0)
        page.close()
        b.close()
    proc.terminate()
    proc.wait(30)
    lat.sort()
    return {"clicks": len(lat), "p50_ms": statistics.median(lat) * 1000,
            "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000,
            "max_ms": lat[-1] * 1000}


def _matrix(m: dict, key: str = "mean") -> list[str]:
    names = m["partners"]
    rows = ["| agent_0 \\ others | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names)]
    for n, row in zip(names, m["matrix"], strict=True):
        rows.append(f"| {n} | " + " | ".join(f"{c[key]:.3f}" for c in row) + " |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-steps", type=int, default=20_000)
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--clicks", type=int, default=60)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        stat = stat_learned(tmp, a.train_steps, a.episodes)
        cons = constructs_rule(tmp)
        play = play_latency(tmp, a.clicks)
    data = {"machine": platform.platform(), "python": platform.python_version(),
            "stat": stat, "constructs": cons, "play": play}
    lines = ["# Cross-play and the play page", "",
             f"Machine: {platform.platform()}; timings are this run's.", "",
             f"## STAT 3A-6T-10x6, learned partners (QMIX, VDN x seeds 0-1, "
             f"{a.train_steps} training steps each)", "",
             f"{stat['cells']} cells x {stat['episodes']} episodes in {stat['wall_s']:.1f} s: "
             f"{stat['cells_per_min']:.1f} cells per minute (training: "
             + ", ".join(f"{k} {v:.0f} s" for k, v in stat["train_s"].items()) + ").", "",
             "Return:", "", *_matrix(stat["return"]), "",
             "Conflict rate:", "", *_matrix(stat["conflict_rate"]), "",
             "Gap (self - cross) of return: " + ", ".join(
                 f"{n} {g['mean']:+.2f} ± {g['ci95'] or 0:.2f}"
                 for n, g in stat["return"]["gap"].items()), "",
             f"## Constructs rep240, teams of 2, broadcast: rule partners "
             f"({cons['instances']} instances per cell)", "",
             f"{cons['cells']} cells in {cons['wall_s']:.1f} s: {cons['cells_per_min']:.1f} "
             "cells per minute.", "", "SR:", "", *_matrix(cons["SR"]), "",
             "Gap (self - cross) of SR: " + ", ".join(
                 f"{n} {g['mean']:+.3f} ± {g['ci95'] or 0:.3f}"
                 for n, g in cons["SR"]["gap"].items()), "",
             "## The play page (STAT, a person's seat, chromium on loopback)", "",
             f"{play['clicks']} clicks: from a click to the next question on screen "
             f"p50 {play['p50_ms']:.0f} ms, p99 {play['p99_ms']:.0f} ms (max "
             f"{play['max_ms']:.0f} ms): the team's steps up to the seat's next choice, the "
             "server's answer to the page's waiting request (long polling) and the page "
             "drawing the question."]
    write_results("crossplay", data, lines)


if __name__ == "__main__":
    main()
