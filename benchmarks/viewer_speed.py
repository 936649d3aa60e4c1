"""Episode viewer speed: a 1,000-episode run opened in a real browser.

Usage:  python benchmarks/viewer_speed.py [--episodes 1000] [--repeats 5] [--keep DIR]
Writes benchmarks/results/viewer_speed.json and benchmarks/results/viewer_speed.md.

Builds a run directory with the CLI (`--episodes` STAT episodes of 5A-25T-50x30 with the
greedy allocator in one condition, the listing's worst case, plus 24 household episodes),
serves it with `coordbench view`'s server on 127.0.0.1, and drives Debian's chromium
headless through playwright:
- time to listing: navigation to the condition until every row of the table is drawn;
- time to episode: a click on a row until the frame after its timeline, slider and
  replayed picture are drawn, timed inside the page (a different episode each repeat, so no
  answer comes from the server's cache);
- the API's own answer times for the same requests (urllib, no browser).
Figures are medians over `--repeats`; the issue asks for under a second.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import sync_playwright
from results_io import write_results
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.viewer.server import make_server, url_of

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGE_ROWS = 200  # the listing's first page (viewer/static/app.js)
STAT = "stat_5A-25T-50x30_greedy_uniform_seed0_limit700"
HOUSEHOLD = "mecobench_suite-v1_parallel_n3_broadcast_rule_full_seed0"


def build(out: Path, episodes: int) -> None:
    """Write the benchmark's run directory with the CLI."""
    for args in (["stat", "eval", "--config", "5A-25T-50x30", "--policy", "greedy",
                  "--layouts", "uniform", "--episodes", str(episodes)],
                 ["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team",
                  "3", "--protocol", "broadcast", "--limit", "24"]):
        res = CliRunner().invoke(app, [*args, "--out", str(out)])
        if res.exit_code != 0:
            raise SystemExit(res.output)


def api_ms(url: str) -> float:
    """Return how long one GET takes, in milliseconds."""
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
    return 1000 * (time.perf_counter() - t)


_CLICK = """async ([key, id]) => {
  const t0 = performance.now();
  document.querySelector(`#episodes tbody tr[data-key="${key}"]`).click();
  while (document.body.dataset.episode !== id) {
    await new Promise((r) => setTimeout(r, 2));
  }
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""


def measure(page, url: str, cond: str, keys: list[str], rows: int) -> dict[str, list[float]]:
    """Return per-repeat listing and episode times (ms) for one condition."""
    listing, episode = [], []
    for key in keys:
        page.goto("about:blank")
        t = time.perf_counter()
        page.goto(f"{url}#cond={cond}")
        # the listing draws its first page of rows (200) and says how many there are
        page.wait_for_function(f"document.querySelectorAll('#episodes tbody tr').length "
                               f"=== {min(rows, PAGE_ROWS)}")
        listing.append(1000 * (time.perf_counter() - t))
        # timed inside the page, from the click to the frame after the episode is drawn:
        # playwright's own click (scrolling the row into view, waiting for it to be still)
        # would add its overhead to the figure
        episode.append(page.evaluate(_CLICK, [key, f"{cond}/{key}"]))
    return {"listing_ms": listing, "episode_ms": episode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="build the run here and keep it")
    a = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    run = a.keep or Path(tmp.name) / "run"
    t = time.perf_counter()
    if not (run / "manifest.json").exists():
        build(run, a.episodes)
    build_s = time.perf_counter() - t
    n_files = sum(1 for _ in (run / "episodes").glob("*/*.jsonl"))
    server, viewer = make_server(run, 0)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    url = url_of(server)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        time.sleep(3.0)  # the server warms household task sets in the background first
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            # keys on the listing's first page (failed first, then by key: all successes)
            step = max(1, min(a.episodes, PAGE_ROWS) // (a.repeats + 1))
            stat_keys = [f"ep{k * step:05d}" for k in range(1, a.repeats + 1)]
            hh_keys = [f"case{k:04d}" for k in range(1, a.repeats + 1)]
            results["stat"] = measure(page, url, STAT, stat_keys, a.episodes)
            results["household"] = measure(page, url, HOUSEHOLD, hh_keys, 24)
            browser.close()
            if errors:
                raise SystemExit(f"the page logged errors: {errors}")
        for fam, cond, keys in (("stat", STAT, [f"ep{k:05d}" for k in range(900, 905)]),
                                ("household", HOUSEHOLD, [f"case{k:04d}" for k in range(10, 15)])):
            results[fam]["api_listing_ms"] = [api_ms(f"{url}api/episodes?run={run.name}"
                                                     f"&cond={cond}") for _ in keys]
            results[fam]["api_episode_ms"] = [api_ms(f"{url}api/episode?run={run.name}"
                                                     f"&cond={cond}&key={k}") for k in keys]
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
    med = {f: {k: statistics.median(v) for k, v in r.items()} for f, r in results.items()}
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "date": datetime.now(UTC).date().isoformat(), "episodes": n_files,
                     "repeats": a.repeats, "build_s": round(build_s, 1)},
            "median_ms": med, "raw_ms": results}
    lines = ["# Viewer speed (a real browser: headless chromium via playwright)", "",
             f"python {platform.python_version()}, {data['meta']['date']}; a run of "
             f"{n_files} episode files ({a.episodes} STAT 5A-25T-50x30 greedy episodes on "
             f"uniform layouts in one condition, 24 household episodes); medians of "
             f"{a.repeats} repeats, each a "
             "different episode (no cached answer); 2 cores shared with other work.", "",
             "| condition | rows | time to listing | time to episode | API listing | "
             "API episode |", "|---|---|---|---|---|---|"]
    for fam, rows in (("stat", a.episodes), ("household", 24)):
        m = med[fam]
        lines.append(f"| {fam} | {rows} | {m['listing_ms']:.0f} ms | {m['episode_ms']:.0f} ms "
                     f"| {m['api_listing_ms']:.0f} ms | {m['api_episode_ms']:.0f} ms |")
    lines += ["", "Time to listing: navigation until the listing is drawn (its first 200 rows "
              "and the count; \"show more\" adds pages; metrics fill in afterwards, computed "
              "in the background). Time to episode: a click until the frame after the "
              "timeline and the replayed picture are drawn (timed in the page). The API "
              "columns time the same requests without a browser."]
    write_results("viewer_speed", data, lines)
    print(json.dumps(med))


if __name__ == "__main__":
    main()
