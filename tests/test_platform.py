"""The platform around the runner: every family on Ray and in worker processes, the public
Python API, the Gymnasium registration, --version."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import coordbench
from coordbench.cli import app
from coordbench.errors import ConfigError
from coordbench.report.format import contract_json
from tests.test_golden import trajectory_hashes

# Ray starts one local instance at a time: every test of this file runs in one xdist worker
pytestmark = pytest.mark.xdist_group("ray")

runner = CliRunner()


def _run(*args: str) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


TASK_FAMILIES = {
    "mecobench": ["mecobench", "run", "--suite", "v1", "--team", "3", "--protocol",
                  "broadcast", "--limit", "4"],
    "constructs": ["constructs", "run", "--subset", "rep240", "--planner",
                   "decentralized_comm", "--limit", "6"],
    "physical": ["physical", "eval", "--task", "Handover", "--rollouts", "3"],
}


@pytest.mark.parametrize("family", TASK_FAMILIES)
def test_ray_and_local_give_the_same_runs(tmp_path, family):
    pytest.importorskip("ray")
    cmd = TASK_FAMILIES[family]
    local = _run(*cmd, "--out", str(tmp_path / "local"))
    on_ray = _run(*cmd, "--out", str(tmp_path / "ray"), "--executor", "ray", "--workers", "2")
    assert on_ray == local
    assert trajectory_hashes(tmp_path / "ray") == trajectory_hashes(tmp_path / "local")


def test_demos_in_worker_processes_match_one_process(tmp_path):
    cmd = ["physical", "demos", "--task", "Handover,CoCarry", "--n", "2"]
    a = _run(*cmd, "--out", str(tmp_path / "a"))
    b = _run(*cmd, "--out", str(tmp_path / "b"), "--executor", "process", "--workers", "2")
    assert list(a) == list(b) == ["Handover", "CoCarry"]
    assert a == b
    for name in ("Handover_train.npz", "CoCarry_train.npz"):
        with np.load(tmp_path / "a" / name) as x, np.load(tmp_path / "b" / name) as y:
            assert sorted(x.files) == sorted(y.files)
            assert all(np.array_equal(x[k], y[k]) for k in x.files)


def test_python_api_gives_what_the_cli_prints(tmp_path):
    cli = _run("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes",
               "5", "--out", str(tmp_path / "cli"))
    got = coordbench.evaluate("stat", config="3A-6T-5x3", policy="greedy", episodes=5,
                              out=tmp_path / "api")
    assert got["suite"] == "stat" and got["spec"]["config"] == "3A-6T-5x3"
    # the API keeps each interval's ends; the --json contract is its mean, ci95 and n
    assert contract_json(got["metrics"]) == cli
    assert got["metrics"]["success"]["interval"] == "wilson"
    assert contract_json(coordbench.results(tmp_path / "api")[got["condition"]]["metrics"]) == cli
    with pytest.raises(ConfigError, match="unknown suite 'chess'"):
        coordbench.evaluate("chess")
    with pytest.raises(ConfigError, match="stat: .*unexpected keyword"):
        coordbench.evaluate("stat", config="3A-6T-5x3", policy="greedy", colour="red")


def test_gymnasium_make_after_import_and_version_flag():
    code = ("import coordbench, gymnasium; "
            "env = gymnasium.make('coordbench/STAT-v0', config='3A-6T-5x3'); "
            "obs, info = env.reset(seed=0); print(sorted(obs))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "agent_masks" in out.stdout
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == coordbench.__version__


def test_help_names_every_family_and_every_physical_task():
    from coordbench.envs.physical.tasks import TASKS

    text = runner.invoke(app, ["run", "--help"], terminal_width=200).stdout
    for word in ("STAT", "MECoBench", "constructs", "Physical"):
        assert word in text
    text = runner.invoke(app, ["physical", "eval", "--help"], terminal_width=300).stdout
    flat = " ".join(text.replace("│", " ").split())
    for name in TASKS:
        assert name in flat, name


def test_bad_runner_input_is_one_line_and_loses_nothing(tmp_path):
    import os

    out = tmp_path / "r"
    ok = _run("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes",
              "2", "--out", str(out))
    before = sorted(p.name for p in out.rglob("*"))
    manifest = (out / "manifest.json").read_bytes()
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1"}
    cases = [
        (["run", "--executor", "slurm", "--out", str(out)], "unknown executor 'slurm'", None),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--workers", "0",
          "--out", str(out)], "--workers must be >= 1", None),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes", "4",
          "--executor", "ray", "--out", str(out)], "cannot reach the Ray cluster", env),
    ]
    for args, msg, e in cases:
        res = subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                             text=True, timeout=120, env=e)
        assert res.returncode == 2 and msg in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert sorted(p.name for p in out.rglob("*")) == before
    assert (out / "manifest.json").read_bytes() == manifest
    assert _run("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes",
                "2", "--out", str(out)) == ok
