"""A 10-condition model-driven household sweep against a loopback OpenAI-compatible server,
played on the local executor and on Ray: no call lost, the same trajectories.

Run: python benchmarks/runner_llm_ray.py [--workers 2]

The server (coordbench.llm.loopback) answers as a scripted team member, so a reply depends on
the request alone. Both sweeps run without the response cache; every model call the server
saw must be a model_call event of some episode (and the reverse), and the two sweeps must
write the same trajectories apart from timings. Results:
benchmarks/results/runner_llm_ray.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_io import write_results  # noqa: E402

from coordbench.core.rundir import RunDir  # noqa: E402
from coordbench.core.trajectory import ModelCallEvent  # noqa: E402
from coordbench.llm.client import HarnessSettings  # noqa: E402
from coordbench.llm.loopback import ScriptedServer  # noqa: E402
from coordbench.runner import run_conditions  # noqa: E402
from coordbench.suites.mecobench.episode import HouseholdSpec  # noqa: E402
from coordbench.suites.mecobench.suite import (  # noqa: E402
    SUITE,
    MecobenchResources,
    mecobench_condition,
)
from tests.scripted_team import household_reply  # noqa: E402

PROTOCOLS = ("none", "broadcast", "discuss", "leader", "shared_memory")


def content(run: RunDir) -> dict[str, str]:
    """Return {condition/key: trajectory JSON without timings and provenance}."""
    out = {}
    for cond in run.conditions:
        for key in run.episode_keys(cond):
            t = run.load_episode(cond, key)
            events = [e.model_dump(mode="json", exclude={"latency_s"}) for e in t.events]
            head = t.header.model_dump(mode="json", exclude={"created", "git_sha"})
            out[f"{cond}/{key}"] = json.dumps([head, events], sort_keys=True)
    return out


def sweep(root: Path, base_url: str, executor: str, workers: int) -> tuple[RunDir, float]:
    root.mkdir(parents=True, exist_ok=True)
    models = root / "models.yaml"
    models.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                      "    max_retries: 3\n    timeout_s: 10\n    max_connections: 4\n")
    settings = HarnessSettings(str(models), cache=False, seed=0)
    plan = [(SUITE, mecobench_condition(None, "v1", HouseholdSpec(
        "parallel", 2, proto, "llm", seed=seed, model="scripted")), 2)
        for proto in PROTOCOLS for seed in (0, 1)]
    run = RunDir.create_or_open(root / "run")
    start = time.perf_counter()
    run_conditions(run, plan, executor=executor, workers=workers,
                   resources=MecobenchResources(settings, max_steps=4), in_flight=4)
    return run, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rows = {}
    contents = {}
    # one server for both sweeps: the request hashes (which name the endpoint) agree too
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(household_reply) as server:
        for executor in ("local", "ray"):
            before = len(server.requests)
            run, wall = sweep(Path(tmp) / executor, server.base_url, executor, args.workers)
            calls = sum(len(run.load_episode(c, k).steps(ModelCallEvent))
                        for c in run.conditions for k in run.episode_keys(c))
            episodes = sum(len(run.episode_keys(c)) for c in run.conditions)
            rows[executor] = {"conditions": len(run.conditions), "episodes": episodes,
                              "server_requests": len(server.requests) - before,
                              "recorded_calls": calls, "wall_s": wall}
            contents[executor] = content(run)
    same = contents["local"] == contents["ray"]
    ok = all(r["server_requests"] == r["recorded_calls"] for r in rows.values())
    lines = ["# A 10-condition model-driven sweep on the local executor and on Ray", "",
             f"{datetime.now(UTC).date().isoformat()}; loopback scripted server, no response "
             f"cache, Ray with {args.workers} workers (a local instance on 127.0.0.1).", "",
             "| executor | conditions | episodes | server requests | recorded model calls | "
             "wall (s) |", "|---|---|---|---|---|---|"]
    lines += [f"| {k} | {r['conditions']} | {r['episodes']} | {r['server_requests']} | "
              f"{r['recorded_calls']} | {r['wall_s']:.1f} |" for k, r in rows.items()]
    lines += ["", f"Every request recorded as a model_call event: {'yes' if ok else 'NO'}. "
              f"Same trajectories (apart from latencies and creation times): "
              f"{'yes' if same else 'NO'}."]
    write_results("runner_llm_ray", {"rows": rows, "no_call_lost": ok,
                                     "same_trajectories": same}, lines)
    if not (ok and same):
        sys.exit(1)


if __name__ == "__main__":
    main()
