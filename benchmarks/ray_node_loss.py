"""A Ray node lost mid-study: wall time against the undisturbed run, side by side.

Usage:  python benchmarks/ray_node_loss.py [--episodes 24] [--latency 0.2]
Writes benchmarks/results/ray_node_loss.json and benchmarks/results/ray_node_loss.md.

A head (no CPU) and two worker nodes of one CPU each start on 127.0.0.1. A model study
(`mecobench run --agents llm`, 2 agents, 4 steps, against a loopback scripted server with
`latency` seconds a call) runs twice on that cluster through `--executor ray --workers 2`:
undisturbed, then with one worker node killed once a third of its calls are answered (both
start on two nodes). Per run: wall time, calls the server answered and episodes saved.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results_io import write_results  # noqa: E402
from coordbench.core.rundir import RunDir  # noqa: E402
from coordbench.llm.loopback import ScriptedServer  # noqa: E402
from tests.scripted_team import household_reply  # noqa: E402


def study(cluster, server, root: Path, name: str, episodes: int, lose: bool) -> dict:
    """Return one run's wall time, calls and episodes (killing a node mid-run if `lose`)."""
    models = root / "models.yaml"
    models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                      f"    model: scripted-1\n    max_connections: 4\n")
    out = root / name
    cmd = [sys.executable, "-m", "coordbench", "mecobench", "run", "--agents", "llm",
           "--model", "scripted", "--models", str(models), "--suite", "v1", "--structure",
           "parallel", "--team", "2", "--max-steps", "4", "--limit", str(episodes),
           "--no-cache", "--json", "--out", str(out), "--executor", "ray", "--workers", "2"]
    before = len(server.requests)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, "RAY_ADDRESS": cluster.address},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if lose:
        deadline = time.monotonic() + 300
        while len(server.requests) - before < episodes * 8 // 3 and proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the study never got under way")
            time.sleep(0.05)
        node = sorted(cluster.worker_nodes, key=lambda n: n.unique_id)[-1]
        cluster.remove_node(node, allow_graceful=False)
    _, err = proc.communicate(timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed: {err[-2000:]}")
    rd = RunDir.open(out)
    saved = sum(len(rd.episode_keys(c)) for c in rd.conditions)
    return {"run": name, "wall_s": round(wall, 2), "calls": len(server.requests) - before,
            "episodes": saved}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=24)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray.cluster_utils import Cluster

    local = {"node_ip_address": "127.0.0.1", "num_cpus": 1}
    cluster = Cluster(initialize_head=True, head_node_args={
        **local, "num_cpus": 0, "include_dashboard": False})
    rows = []
    try:
        cluster.add_node(**local)
        cluster.add_node(**local)
        with ScriptedServer(household_reply, latency=args.latency) as server, \
                tempfile.TemporaryDirectory() as tmp:
            rows.append(study(cluster, server, Path(tmp), "undisturbed", args.episodes, False))
            rows.append(study(cluster, server, Path(tmp), "a node lost", args.episodes, True))
    finally:
        cluster.shutdown()
    base = rows[0]["wall_s"]
    lines = ["# A Ray node lost mid-study", "",
             f"`python benchmarks/ray_node_loss.py`: a head and two 1-CPU worker nodes on "
             f"127.0.0.1; `mecobench run --agents llm` ({args.episodes} episodes, 2 agents, 4 "
             f"steps) against a loopback server answering in {args.latency:g} s, on "
             f"`--executor ray --workers 2`; the second run loses a worker node once a third "
             f"of its calls are answered. {platform.machine()}, {os.cpu_count()} CPUs.", "",
             "| run | wall (s) | vs undisturbed | calls answered | episodes saved |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['wall_s']} | {r['wall_s'] / base:.2f}x | "
                     f"{r['calls']} | {r['episodes']} |")
    lines += ["", "The lost node's unit is played again from its start on the node left: its "
              "calls before the loss are spent twice, its episodes are saved once."]
    write_results("ray_node_loss", {"episodes": args.episodes, "latency_s": args.latency,
                                    "runs": rows}, lines)


if __name__ == "__main__":
    main()
