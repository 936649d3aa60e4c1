"""`coordbench stat tune`: the paper's selection rule on hand-made curves, and a small grid
run end to end (resumable, recorded)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.learn.tune import curve_return, final_share_return, select

runner = CliRunner()


def _run(returns: list[float]) -> dict:
    return {"curve": [{"step": i, "return": r} for i, r in enumerate(returns)]}


def test_final_share_is_the_last_fifth_of_checkpoints():
    res = _run([0, 0, 0, 0, 0, 0, 0, 0, 10, 20])
    assert final_share_return(res) == 15.0  # 2 of 10 checkpoints
    assert final_share_return(_run([1, 2, 3])) == 3.0  # at least one checkpoint
    assert curve_return(res) == 3.0


def test_select_takes_the_best_final_return_and_breaks_near_ties_by_the_curve():
    clear = [{"final": [10.0, 10.2, 10.1], "curve": [5.0, 5.0, 5.0]},
             {"final": [20.0, 20.1, 20.2], "curve": [1.0, 1.0, 1.0]}]
    assert select(clear) == 1  # clearly better at the end wins despite a worse curve
    close = [{"final": [20.0, 21.0, 19.0], "curve": [1.0, 1.2, 1.1]},
             {"final": [19.8, 20.9, 19.1], "curve": [5.0, 5.2, 5.1]}]
    assert select(close) == 1  # indistinguishable at the end: the better curve wins


@pytest.mark.xdist_group("tune")
def test_tune_runs_the_grid_and_records_the_choice(tmp_path):
    out = tmp_path / "tune"
    args = ["stat", "tune", "--config", "3A-6T-5x3", "--algo", "iql", "--lrs", "3e-4,1e-3",
            "--eps-fracs", "0.2", "--steps", "2000", "--seeds", "0-1", "--utd", "1",
            "--eval-every", "1000", "--eval-episodes", "3", "--executor", "local",
            "--workers", "1", "--out", str(out), "--json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    record = json.loads(res.stdout.strip().splitlines()[-1])
    assert [(p["lr"], p["eps_frac"]) for p in record["grid"]] == [(3e-4, 0.2), (1e-3, 0.2)]
    assert sum(p["chosen"] for p in record["grid"]) == 1
    chosen = next(p for p in record["grid"] if p["chosen"])
    assert record["chosen"] == {"lr": chosen["lr"], "eps_frac": chosen["eps_frac"]}
    assert "final 20%" in record["rule"]
    assert json.loads((out / "tune.json").read_text()) == record
    # each point trained with its own settings, into its own directory
    for p in record["grid"]:
        files = sorted((out / f"lr{p['lr']:g}_eps{p['eps_frac']:g}").glob("*_seed*.json"))
        assert len(files) == 2
        cfg = json.loads(files[0].read_text())["config"]
        assert cfg["lr"] == p["lr"] and cfg["eps_frac"] == p["eps_frac"]
    # a rerun resumes: the same record, nothing retrained
    stamps = {f: f.stat().st_mtime_ns for f in out.rglob("*_seed*.json")}
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert {f: f.stat().st_mtime_ns for f in out.rglob("*_seed*.json")} == stamps


def test_tune_bad_grid_is_one_line(tmp_path):
    from coordbench.errors import CoordbenchError

    for flag, value, msg in (("--lrs", "fast", "--lrs must be comma-separated numbers"),
                             ("--eps-fracs", "0.2,0.2", "distinct"),
                             ("--eps-fracs", "1.5", "--eps-fracs in (0, 1]")):
        res = runner.invoke(app, ["stat", "tune", "--config", "3A-6T-5x3", "--algo", "vdn",
                                  flag, value, "--out", str(tmp_path / "t")])
        assert isinstance(res.exception, CoordbenchError), res.output
        assert msg in str(res.exception) and "\n" not in str(res.exception)
