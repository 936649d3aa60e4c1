"""Bad input to any command is one clear line and a non-zero exit: never a traceback, never a
hang. Most cases run in-process (CliRunner, which bypasses `main()`, so they assert the
raised exception is a CoordbenchError with a one-line message naming the problem, or a usage
error); a few run the installed entry point to check the single `error:` line itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.errors import CoordbenchError
from coordbench.suites.mecobench.instances import PARALLEL_EXAMPLES

runner = CliRunner()
EVAL = ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "random", "--episodes", "1"]
TRAIN = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "iql", "--steps", "64",
         "--seeds", "0", "--executor", "local", "--workers", "1"]
SPEED = ["stat", "speed", "--config", "3A-6T-5x3", "--batch", "8", "--seconds", "0.1"]
MECO = ["mecobench", "run", "--limit", "1"]
LLM = [*MECO, "--agents", "llm", "--model", "smollm2"]
CONS = ["constructs", "run", "--limit", "1"]
DEMOS = ["physical", "demos", "--task", "Handover", "--n", "1"]
PEVAL = ["physical", "eval", "--task", "Handover", "--rollouts", "1"]
PTRAIN = ["physical", "train", "--task", "Handover", "--steps", "2"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Return named bad paths: a file, a folder, a non-UTF-8 file, a path under a file, a
    missing path, a model registry with an unknown generation key, a small run directory."""
    root = tmp_path_factory.mktemp("inputs")
    (root / "file.txt").write_text("not a folder\n")
    (root / "folder").mkdir()
    (root / "latin1.json").write_bytes(b'[{"task_id": "caf\xe9"}]')
    (root / "registry.yaml").write_text(
        "models:\n  m:\n    model: x\n    base_url: http://127.0.0.1:9/v1\n"
        "    generation: {temprature: 0.0}\n")
    (root / "nan.json").write_text('[{"task_id": NaN}]')
    run = root / "run"
    res = runner.invoke(app, [*EVAL, "--out", str(run), "--json"])
    assert res.exit_code == 0, res.output
    (run / "results.json").unlink(missing_ok=True)
    (run / "results.json").mkdir()
    return {"file": str(root / "file.txt"), "folder": str(root / "folder"),
            "latin1": str(root / "latin1.json"), "under_file": str(root / "file.txt" / "x"),
            "missing": str(root / "missing" / "x.json"), "registry": str(root / "registry.yaml"),
            "nan": str(root / "nan.json"), "run": str(run)}


CASES = [
    # the default benchmark
    (["run", "--episodes", "100000000000"], "--episodes must be >= 1"),
    (["run", "--seed", "-1"], "--seed must be >= 0"),
    (["run", "--physical", "-1"], "--physical must be >= 0"),
    (["run", "--configs", ","], "--configs names nothing"),
    (["run", "--workers", "0"], "--workers must be >= 1"),
    # STAT evaluation, training, speed, tables
    ([*EVAL, "--seed", "-1"], "--seed must be >= 0"),
    ([*EVAL, "--episodes", "0"], "--episodes must be >= 1"),
    ([*EVAL, "--episodes", "100000000000"], "--episodes must be >= 1 and <= 1000000"),
    ([*EVAL, "--episode-limit", "0"], "--episode-limit must be >= 1"),
    ([*EVAL, "--workers", "100000"], "--workers must be >= 1 and <= 1024"),
    ([*EVAL, "--out", "{under_file}"], "is a file, not a folder"),
    ([*EVAL, "--out", "{file}"], "exists and is not a folder"),
    ([*EVAL, "--out", "/proc/coordbench"], "is not writable"),
    ([*TRAIN, "--seeds", "5-1"], "--seeds range '5-1' is empty"),
    ([*TRAIN, "--seeds", "a-b"], "--seeds must look like 0-4"),
    ([*TRAIN, "--seeds", "-1"], "--seeds must look like 0-4"),
    ([*TRAIN, "--seeds", "0-100000"], "at most 1000"),
    ([*TRAIN, "--num-envs", "0"], "--num-envs must be >= 1"),
    ([*TRAIN, "--num-envs", "-1"], "--num-envs must be >= 1"),
    ([*TRAIN, "--steps", "0"], "--steps must be >= 1"),
    ([*TRAIN, "--utd", "inf"], "--utd must be"),
    ([*TRAIN, "--utd", "nan"], "--utd must be"),
    ([*TRAIN, "--eval-every", "0"], "--eval-every must be >= 1"),
    ([*TRAIN, "--eval-episodes", "-1"], "--eval-episodes must be >= 1"),
    ([*TRAIN, "--out", "{under_file}"], "is a file, not a folder"),
    ([*SPEED, "--batch", "100000000000"], "--batch must be >= 1 and <= 65536"),
    ([*SPEED, "--batch", "0"], "--batch must be >= 1"),
    ([*SPEED, "--seconds", "inf"], "--seconds must be"),
    ([*SPEED, "--seconds", "nan"], "--seconds must be"),
    ([*SPEED, "--seconds", "-1"], "--seconds must be"),
    ([*SPEED, "--threads", "0"], "--threads must be >= 1"),
    (["stat", "table", "{file}"], "is a file, expected a training directory"),
    (["stat", "table", "{missing}"], "no such training directory"),
    (["stat", "table", "{folder}", "--output", "{folder}"], "is a folder, expected a file"),
    # household teams
    ([*MECO, "--tasks", "{latin1}"], "not a UTF-8 text task file"),
    ([*MECO, "--tasks", "{folder}"], "is a folder, expected a task file"),
    ([*MECO, "--tasks", "{missing}"], "no such task file"),
    ([*MECO, "--tasks", "{nan}"], "NaN is not a JSON number"),
    ([*MECO, "--team", "1000"], "--team must be between 1 and 5"),
    ([*MECO, "--team", "0"], "--team must be >= 1"),
    ([*MECO, "--max-steps", "0"], "--max-steps must be >= 1"),
    ([*MECO, "--max-steps", "-1"], "--max-steps must be >= 1"),
    ([*MECO, "--cost-limit", "0"], "--cost-limit must be > 0 and <= 1000000"),
    ([*MECO, "--cost-limit", "-1"], "--cost-limit must be"),
    ([*MECO, "--cost-limit", "nan"], "--cost-limit must be"),
    ([*MECO, "--max-tokens-per-episode", "0"], "--max-tokens-per-episode must be >= 1"),
    ([*MECO, "--max-tokens-per-episode", "-5"], "--max-tokens-per-episode must be >= 1"),
    ([*MECO, "--max-reply-tokens", "0"], "--max-reply-tokens must be >= 1"),
    ([*MECO, "--max-connections", "0"], "--max-connections must be >= 1"),
    ([*MECO, "--in-flight", "0"], "--in-flight must be >= 1"),
    ([*MECO, "--seed", "-1"], "--seed must be >= 0"),
    ([*MECO, "--out", "{under_file}"], "is a file, not a folder"),
    ([*MECO, "--models", "{latin1}"], "not a UTF-8 text models file"),
    ([*MECO, "--cache-path", "{folder}"], "--cache-path {folder}: is a folder"),
    ([*CONS, "--models", "{registry}"], "generation.temprature"),
    ([*LLM, "--models", "{registry}", "--model", "m"], "generation.temprature"),
    ([*LLM, "--models", "{latin1}"], "not a UTF-8 text models file"),
    ([*LLM, "--cache-path", "{folder}"], "--cache-path"),
    ([*LLM, "--cache-path", "{file}"], "not a coordbench response cache"),
    # construct instances
    ([*CONS, "--instances", "{latin1}"], "not a UTF-8 text instance file"),
    ([*CONS, "--instances", "{folder}"], "is a folder, expected a instance file"),
    ([*CONS, "--instances", "{file}"], "not valid JSON"),
    ([*CONS, "--limit", "0"], "--limit must be >= 1"),
    ([*CONS, "--team", "1000"], "--team must be 2, 3 or 4"),
    ([*CONS, "--construct", "D9"], "--construct must be one of"),
    ([*CONS, "--seed", "-1"], "--seed must be >= 0"),
    ([*CONS, "--out", "{under_file}"], "is a file, not a folder"),
    # physical collaboration
    ([*DEMOS, "--n", "0"], "--n must be >= 1"),
    ([*DEMOS, "--size", "100000"], "--size must be >= 16 and <= 1024"),
    ([*DEMOS, "--out", "{under_file}"], "is a file, not a folder"),
    ([*PEVAL, "--rollouts", "0"], "--rollouts must be >= 1"),
    (["physical", "eval", "--task", " , "], "--task names no task"),
    ([*PEVAL, "--phase-level", "--demos", "{missing}"], "no such demonstrations folder"),
    ([*PEVAL, "--out", "{file}"], "exists and is not a folder"),
    ([*PTRAIN, "--steps", "0"], "--steps must be >= 1"),
    ([*PTRAIN, "--batch", "0"], "--batch must be >= 1"),
    ([*PTRAIN, "--demos", "{file}"], "is a file, expected a demonstrations folder"),
    ([*PTRAIN, "--demos", "{folder}", "--out", "{folder}"], "is a folder, expected a file"),
    # model registry, reports
    (["models", "list", "--models", "{registry}"], "generation.temprature"),
    (["models", "list", "--models", "{folder}"], "is a folder, expected a models file"),
    (["report", "{run}"], "results.json is a folder"),
    (["report", "{file}"], "is a file, not a run directory"),
]


def _fill(args: list[str], files: dict[str, str]) -> list[str]:
    return [a.format(**files) for a in args]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[" ".join(c[0][:2] + c[0][-2:])
                                                         for c in CASES])
def test_bad_input_is_one_clear_error(args, needle, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default output folders land here, not in the repository
    res = runner.invoke(app, _fill(args, files))
    assert res.exit_code != 0, res.output
    assert "Traceback" not in res.output
    exc = res.exception
    if isinstance(exc, SystemExit):  # a typer usage error: one message box, exit code 2
        assert res.exit_code == 2 and needle in res.output, res.output
        return
    assert isinstance(exc, CoordbenchError), repr(exc)
    message, needle = str(exc), needle.format(**files)
    assert needle in message and "\n" not in message, message


def _main(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize(("args", "needle"), [
    ([*EVAL, "--seed", "-1"], "--seed must be >= 0"),
    ([*SPEED, "--seconds", "inf"], "--seconds must be"),
    ([*TRAIN, "--num-envs", "0"], "--num-envs must be >= 1"),
    ([*MECO, "--tasks", "{latin1}"], "not a UTF-8 text task file"),
    (["report", "{run}"], "results.json is a folder"),
])
def test_the_entry_point_prints_one_error_line(args, needle, files, tmp_path):
    res = _main(*_fill(args, files), cwd=tmp_path)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert len(errors) == 1 and needle in errors[0], res.stderr


def test_a_refused_file_leaves_no_run_behind(files, tmp_path):
    """A task file refused on load is refused before the run directory is made."""
    bad = tmp_path / "tasks.json"
    task = json.loads(PARALLEL_EXAMPLES.read_text())[0]
    task["init_graph"]["nodes"][5]["id"] = True
    bad.write_text(json.dumps([task]))
    res = runner.invoke(app, [*MECO, "--tasks", str(bad), "--out", str(tmp_path / "out")])
    assert isinstance(res.exception, CoordbenchError)
    assert "tasks.json[0] (task_id 0): field 'init_graph.nodes[5].id'" in str(res.exception)
    assert not (tmp_path / "out").exists()
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
