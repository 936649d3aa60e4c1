"""Resume counts only episodes that are what their case says, and never mixes settings."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.errors import RunDirError
from tests.test_golden import trajectory_hashes

runner = CliRunner()
MECO = ["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team", "2",
        "--protocol", "broadcast", "--limit", "3", "--json"]


def test_another_step_cap_is_refused_not_mixed(tmp_path):
    out = str(tmp_path / "r")
    assert runner.invoke(app, [*MECO, "--max-steps", "4", "--out", out]).exit_code == 0
    res = runner.invoke(app, [*MECO, "--max-steps", "6", "--out", out])
    assert isinstance(res.exception, RunDirError)
    assert "max_steps=4, not 6" in str(res.exception)
    res = runner.invoke(app, [*MECO, "--out", out])  # no cap is another setting too
    assert isinstance(res.exception, RunDirError)
    assert runner.invoke(app, [*MECO, "--max-steps", "4", "--out", out]).exit_code == 0


def test_damaged_misplaced_and_half_written_files_are_replayed(tmp_path):
    clean, out = tmp_path / "clean", tmp_path / "r"
    assert runner.invoke(app, [*MECO, "--out", str(clean)]).exit_code == 0
    assert runner.invoke(app, [*MECO, "--out", str(out)]).exit_code == 0
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    folder = out / "episodes" / cond
    # the --limit 3 sample's cases (stratified: their indices in the set, not 0, 1, 2)
    first, second, third = rd.episode_keys(cond)
    text = (folder / f"{first}.jsonl").read_text()
    (folder / f"{second}.jsonl").write_text(text)  # another case's episode under its name
    (folder / f"{third}.jsonl").write_text(text[: len(text) // 2])  # truncated
    (folder / ".case0003.jsonl.x1.tmp").write_text("half")  # a killed writer's leftover
    (out / "images").mkdir(exist_ok=True)  # a killed --images run's half-written view
    (out / "images" / f".{'a' * 64}.png.x2.tmp").write_bytes(b"half")
    with pytest.raises(RunDirError, match="holds another episode"):
        rd.load_episode(cond, second)
    assert runner.invoke(app, [*MECO, "--out", str(out)]).exit_code == 0
    assert trajectory_hashes(out) == trajectory_hashes(clean)
    assert sorted(p.name for p in (out / "damaged" / cond).iterdir()) == [
        f"{second}.jsonl", f"{third}.jsonl"]  # set aside, not deleted
    assert not list(folder.glob("*.tmp")) and not list((out / "images").glob(".*.tmp"))


def test_one_writer_at_a_time(tmp_path):
    rd = RunDir.create_or_open(tmp_path / "r")
    with rd.lock(), pytest.raises(RunDirError, match="another coordbench command"):
        with RunDir.open(tmp_path / "r").lock():
            pass
    with rd.lock():  # released
        pass


KILLABLE = {
    "run": ["run", "--configs", "3A-6T-5x3", "--policies", "greedy,hungarian", "--episodes",
            "10", "--cases", "3", "--physical", "1"],
    "stat": ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes",
             "40"],
    "mecobench": ["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team",
                  "3", "--protocol", "discuss", "--limit", "12"],
    "constructs": ["constructs", "run", "--subset", "rep240", "--construct", "D2", "--limit",
                   "10"],
    "physical": ["physical", "eval", "--task", "Handover", "--policy", "expert", "--rollouts",
                 "6"],
}


def _kill_when_started(cmd: list[str], out: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "coordbench", *cmd, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if any((out / "episodes").glob("*/*.jsonl")):
                break
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.mark.parametrize("family", sorted(KILLABLE))
def test_kill_9_then_resume_matches_an_uninterrupted_run(tmp_path, family):
    cmd = KILLABLE[family]
    out, clean = tmp_path / "killed", tmp_path / "clean"
    _kill_when_started(cmd, out)
    n_before = len(list((out / "episodes").glob("*/*.jsonl")))
    quiet = [] if family == "run" else ["--json"]
    res = runner.invoke(app, [*cmd, "--out", str(out), *quiet])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, [*cmd, "--out", str(clean), *quiet]).exit_code == 0
    got, want = trajectory_hashes(out), trajectory_hashes(clean)
    assert got == want and 1 <= n_before <= len(want)
    shutil.rmtree(tmp_path)


def test_a_run_whose_episodes_folder_is_a_file_is_one_line(tmp_path):
    import shutil
    import subprocess
    import sys

    from tests.cli_errors import error_line

    run = tmp_path / "r"
    assert subprocess.run([sys.executable, "-m", "coordbench", "stat", "eval", "--config",
                           "3A-6T-5x3", "--policy", "greedy", "--episodes", "2", "--out",
                           str(run), "--json"], capture_output=True, timeout=300).returncode == 0
    shutil.rmtree(run / "episodes")
    (run / "episodes").write_text("x")
    for args in (["report", str(run)], ["table", str(run)]):
        assert "episodes is not a folder" in error_line(args, tmp_path)
