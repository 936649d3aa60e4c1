"""Wall time of every README.md command line, run as written, in order, in one fresh folder.

Usage:  python benchmarks/readme_lines.py [--limit-s 300] [--out benchmarks/results]

Each line runs in a shell with the environment's `coordbench` on PATH, as a reader who ran
`make test` would; `make run` runs as `coordbench run --out runs/default`. A line that runs
past --limit-s is stopped and recorded as such (the training lines at the papers' budgets
take hours). Model lines (models.yaml) talk to a scripted OpenAI-compatible server on
127.0.0.1; the bundled `smollm2` lines play the real model. The lines tests/test_doc_lines.py
does not run are not run here either. Writes readme_lines.json and readme_lines.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coordbench.llm.loopback import ScriptedServer  # noqa: E402
from tests.test_doc_lines import NOT_RUN, command_lines, models_yaml, reply  # noqa: E402


def run(line: str, cwd: Path, env: dict[str, str], limit_s: float) -> tuple[str, float]:
    """Return (outcome, seconds) of one line: "exit N" or "stopped"."""
    start = time.monotonic()
    proc = subprocess.Popen(line, shell=True, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = proc.wait(timeout=limit_s)
        return f"exit {code}", time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return "stopped", time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-s", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(reply) as server:
        cwd = Path(tmp)
        for name in ("src", "docs"):
            (cwd / name).symlink_to(ROOT / name)
        (cwd / ".venv").symlink_to(bin_dir.parent)
        (cwd / "models.yaml").write_text(models_yaml(server.base_url))
        for line in command_lines(ROOT / "README.md"):
            if ("README.md", line) in NOT_RUN:
                continue
            if line.startswith(("coordbench view runs/mine", "coordbench play ")) \
                    and "--export" not in line:
                continue  # serves until stopped: tests/test_doc_lines.py opens its page
            shell = "coordbench run --out runs/default" if line == "make run" else line
            outcome, took = run(shell, cwd, env, args.limit_s)
            if line.startswith("cp docs/models.example.yaml"):
                (cwd / "models.yaml").write_text(models_yaml(server.base_url))
            rows.append({"line": line, "outcome": outcome, "seconds": round(took, 1)})
            print(f"{took:7.1f} s  {outcome:8s} {line}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "readme_lines.json").write_text(json.dumps(rows, indent=1) + "\n")
    md = ["# README lines, as written, in order (2 cores)", "",
          f"`python benchmarks/readme_lines.py --limit-s {args.limit_s:.0f}`: each line of "
          "README.md's command block in one fresh folder; `stopped` is a line stopped at the "
          "limit. Model lines against a scripted loopback server; `smollm2` lines play the "
          "bundled model.", "", "| line | outcome | wall s |", "|---|---|---|"]
    md += [f"| `{r['line']}` | {r['outcome']} | {r['seconds']} |" for r in rows]
    (args.out / "readme_lines.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
