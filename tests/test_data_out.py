"""Data out: load_run DataFrames, `coordbench export` and `coordbench table` across runs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import coordbench
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.runner.family import suite_object
from tests import viewer_runs

# one worker reads the shared small runs (built once per test process)
pytestmark = pytest.mark.xdist_group("small_runs")


@pytest.fixture(scope="module")
def run_dir(small_runs):
    return small_runs["run"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=300)


def test_episodes_frame_has_one_row_per_episode_with_every_metric(run_dir):
    run = coordbench.load_run(run_dir)
    eps = run.episodes()
    files = sorted(p for p in (run_dir / "episodes").rglob("*.jsonl"))
    assert len(eps) == len(files)
    assert set(eps["suite"]) == {"stat", "mecobench", "constructs", "physical"}
    for col in ("suite", "condition", "episode_id", "seed", "success"):
        assert col in eps.columns
    assert eps["success"].dtype == bool
    # every metric of every family, as its Suite.metrics computes it from the file
    for _, row in eps.iterrows():
        traj = run.run.load_episode(row["condition"], row["key"])
        for name, value in suite_object(row["suite"]).metrics(traj).items():
            if name in ("success",):
                continue
            got = row[name]
            if value is None or (isinstance(value, float) and np.isnan(value)):
                assert pd.isna(got), (row["episode_id"], name)
            else:
                assert got == pytest.approx(value), (row["episode_id"], name)


def test_steps_calls_and_messages_hold_what_the_trajectories_record(run_dir):
    run = coordbench.load_run(run_dir)
    steps, eps = run.steps(), run.episodes()
    stat = steps[steps["suite"] == "stat"]
    # per-agent rewards add up to each episode's return
    returns = stat.groupby("episode_id")["reward"].sum()
    want = eps[eps["suite"] == "stat"].set_index("episode_id")["return"]
    assert returns.sort_index().to_numpy() == pytest.approx(want.sort_index().to_numpy())
    house = steps[steps["suite"] == "mecobench"]
    assert set(house["outcome"]) >= {"ok"} and house["agent"].isin([0, 1]).all()
    calls = run.calls()
    assert len(calls) > 0 and {"prompt_tokens", "latency_s", "parse_status", "reply"} <= set(
        calls.columns)
    assert set(calls["suite"]) == {"mecobench"}
    prompts = run.prompts()
    assert set(calls["request_hash"]) == set(prompts["request_hash"])
    assert all(json.loads(m)[0]["role"] == "system" for m in prompts["messages"])
    conds = run.conditions()
    assert conds.set_index("condition").loc[viewer_runs.STAT, "episodes"] == 3
    events = run.events()
    assert len(events) == sum(len(run.run.load_episode(c, k).events)
                              for c, k in zip(eps["condition"], eps["key"], strict=True))
    assert all(json.loads(f) is not None for f in events["fields"].head(50))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_round_trips(run_dir, tmp_path, fmt):
    res = CliRunner().invoke(app, ["export", str(run_dir), "--format", fmt, "--out",
                                   str(tmp_path / fmt)])
    assert res.exit_code == 0, res.output
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    run = coordbench.load_run(run_dir)
    for name in ("episodes", "profile", "steps", "calls", "messages", "prompts",
                 "conditions"):
        back = read(tmp_path / fmt / f"{name}.{fmt}")
        assert back.shape == getattr(run, name)().shape, name
    back = read(tmp_path / fmt / f"episodes.{fmt}")
    assert back["return"].dropna().to_numpy() == pytest.approx(
        run.episodes()["return"].dropna().to_numpy())


def test_table_compares_conditions_across_runs_for_every_family(run_dir, tmp_path):
    other = tmp_path / "other"
    viewer_runs._invoke("stat", "eval", "--config", "3A-6T-5x3", "--policy", "hungarian",
                        "--episodes", "3", "--out", str(other))
    res = CliRunner().invoke(app, ["table", str(run_dir), str(other)])
    assert res.exit_code == 0, res.output
    md = res.stdout
    for suite in ("stat", "mecobench", "constructs", "physical"):
        assert f"## {suite}" in md
    assert "| run | other | " not in md and "| other | 3A-6T-5x3 hungarian | 3 |" in md
    res = CliRunner().invoke(app, ["table", str(run_dir), str(other), "--format", "csv"])
    rows = list(pd.read_csv(pd.io.common.StringIO(res.stdout)).itertuples())
    assert {r.run for r in rows} == {"run", "other"}
    assert any(r.metric == "SR" and r.interval == "wilson" for r in rows)
    out = tmp_path / "t.html"
    res = CliRunner().invoke(app, ["table", str(run_dir), "--format", "html", "--out",
                                   str(out)])
    assert res.exit_code == 0 and out.read_text().count("<table") == 4


def test_bad_input_is_one_line(run_dir, tmp_path):
    (tmp_path / "file").write_text("x")
    cases = [
        (("export", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")), "does not exist"),
        (("export", str(run_dir), "--format", "xlsx", "--out", str(tmp_path / "o")),
         "--format must be csv or parquet"),
        (("export", str(run_dir), "--out", str(tmp_path / "file")), "--out"),
        (("table", str(run_dir), "--format", "tex"), "--format must be one of"),
        (("table", str(tmp_path / "file")), "file"),
    ]
    for args, needle in cases:
        res = _cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_a_run_with_a_bad_episode_still_loads_and_names_it(run_dir, tmp_path):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(run_dir, run)
    bad = run / "episodes" / viewer_runs.STAT / "ep00001.jsonl"
    bad.write_text(bad.read_text()[:80])
    data = coordbench.load_run(run)
    assert len(data.episodes()) == len(coordbench.load_run(run_dir).episodes()) - 1
    problems = data.problems()
    assert list(problems["key"]) == ["ep00001"] and "corrupt" in problems["reason"][0]
    res = _cli("export", str(run), "--out", str(tmp_path / "t"))
    assert res.returncode == 0, res.stderr
    assert "1 episode file could not be read" in res.stderr
    assert len(pd.read_csv(tmp_path / "t" / "problems.csv")) == 1


def test_profile_frame_is_what_the_profile_command_averages(run_dir):
    from coordbench.metrics.profile import KEYS
    from coordbench.report.profile_table import collect

    frame = coordbench.load_run(run_dir).profile()
    assert list(frame.columns) == ["suite", "condition", "episode_id", *KEYS]
    assert set(frame["suite"]) == {"stat", "mecobench", "constructs", "physical"}
    table = collect([RunDir.open(run_dir)])
    for row in table.rows:
        values = frame[frame["condition"] == row["condition"]]
        assert len(values) == row["episodes"]
        for k in KEYS:
            column = values[k].dropna()
            assert (row[k] is None) == column.empty
            if row[k] is not None:
                assert row[k]["mean"] == pytest.approx(column.mean())
                assert row[k]["n"] == len(column)
