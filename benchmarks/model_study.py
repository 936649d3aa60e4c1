"""A three-model study against the loopback server: wall time, calls, tokens, and where the
time goes.

Usage:  python benchmarks/model_study.py [--meco-limit 2] [--meco-steps 4] [--coco-limit 6]
Writes benchmarks/results/model_study.json and benchmarks/results/model_study.md.

Plays `reproduce mecobench --quick` and `reproduce cocobench --quick` with three models
(`--model good,err,never`) as a user would (the CLI in its own process, the loopback server
in this one, answering at once): CoCoBench with the three scripted planners of known skill
(tests/scripted_models.py), MECoBench with three aliases of the scripted household member
(tests/scripted_team.py). `--limit` and `--max-steps` keep it minutes long. Per study:
- wall: the whole command (plan, pilot, play, analyses, files);
- rerun: the same command again into the same run (nothing left to play: start-up, the
  analyses and the files), so wall minus rerun is what playing took;
- calls, tokens: the models' calls as recorded in the episodes;
- call time: the summed latency of those calls (the harness's request, the server's reply,
  parsing), and its share of the play time (calls of concurrent episodes overlap, so the
  share can exceed 1).
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted models live with the tests

from benchmarks.results_io import write_results  # noqa: E402
from coordbench.core.rundir import RunDir  # noqa: E402
from coordbench.core.trajectory import ModelCallEvent  # noqa: E402
from coordbench.llm.loopback import ScriptedServer  # noqa: E402
from tests.scripted_models import MODELS, oracle_plans, planner_reply  # noqa: E402
from tests.scripted_team import household_reply  # noqa: E402


def registry(path: Path, base_url: str) -> Path:
    f = path / "models.yaml"
    f.write_text("models:\n" + "".join(
        f"  {m}:\n    base_url: {base_url}\n    model: {m}\n    max_retries: 0\n"
        "    timeout_s: 10\n    max_connections: 8\n" for m in MODELS))
    return f


def study(paper: str, reply, args: list[str], work: Path) -> dict:
    out = work / paper
    with ScriptedServer(reply) as server:
        models = registry(work, server.base_url)
        cmd = [sys.executable, "-m", "coordbench", "reproduce", paper, "--quick",
               "--model", ",".join(MODELS), "--models", str(models), "--json", "--out",
               str(out), *args]
        walls = []
        for _ in range(2):  # the second run finds every episode on disk
            start = time.perf_counter()
            res = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
            walls.append(time.perf_counter() - start)
            if res.returncode != 0:
                raise SystemExit(f"{paper} study failed: {res.stderr[-2000:]}")
        served = len(server.requests)
    run = RunDir.open(out)
    calls = [c for cond in run.conditions for t in run.load_episodes(cond)
             for c in t.steps(ModelCallEvent)]
    episodes = sum(len(run.episode_keys(c)) for c in run.conditions)
    play = walls[0] - walls[1]
    call_s = sum(c.latency_s for c in calls)
    return {"paper": paper, "args": args, "episodes": episodes, "calls": len(calls),
            "requests_served": served,
            "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
            "wall_s": round(walls[0], 2), "rerun_s": round(walls[1], 2),
            "play_s": round(play, 2), "call_time_s": round(call_s, 2),
            "call_share_of_play": round(call_s / play, 3) if play > 0 else None,
            "ms_per_call": round(1000 * call_s / len(calls), 1) if calls else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--meco-limit", type=int, default=2)
    ap.add_argument("--meco-steps", type=int, default=4)
    ap.add_argument("--coco-limit", type=int, default=6)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plans = oracle_plans([(None, a.coco_limit), ("D4", a.coco_limit)])
        rows = [study("cocobench", planner_reply(plans), ["--limit", str(a.coco_limit)], work),
                study("mecobench", household_reply, ["--limit", str(a.meco_limit),
                                                     "--max-steps", str(a.meco_steps)], work)]
    data = {"meta": {"python": platform.python_version(), "machine": platform.machine(),
                     "models": list(MODELS)}, "studies": rows}
    lines = ["# A three-model study against the loopback server", "",
             "`python benchmarks/model_study.py` (defaults). Wall: the whole command; rerun: "
             "the same command with every episode on disk (start-up, analyses, files); play "
             "= wall - rerun. Call time: the summed latency of the recorded model calls (the "
             "harness's request, the server's answer, parsing); episodes play concurrently, so "
             "calls overlap and call time exceeds play time.", "",
             "| study | options | episodes | calls | tokens | wall (s) | rerun (s) | play (s) "
             "| call time (s) | call time / play | ms per call |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['paper']} --quick | {' '.join(r['args'])} | {r['episodes']} | "
                     f"{r['calls']} | {r['tokens']:,} | {r['wall_s']} | {r['rerun_s']} | "
                     f"{r['play_s']} | {r['call_time_s']} | {r['call_share_of_play']} | "
                     f"{r['ms_per_call']} |")
    write_results("model_study", data, lines)


if __name__ == "__main__":
    main()
