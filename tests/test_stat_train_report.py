"""Training tables and curves: bold/dagger marks, reference rows, CSV, plots, CLI, Ray."""

import csv
import io
import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.stats import welch_test
from coordbench.report import stat_train_report as rep


def fake_result(algo, config, seed, finals, peak=None):
    """A result file whose curve ends at `finals` (return) with a peak of `peak`."""
    base = {"conflict_rate": 0.05, "conflicts_per_task": 0.1, "throughput": 0.5,
            "diversity_per_decision_agent": 1.0}
    curve = [{"step": 0, "return": 100.0, **base},
             {"step": 10_000, "return": peak if peak is not None else finals, **base},
             {"step": 20_000, "return": finals, **{**base, "conflict_rate": 0.01 * (seed + 1)}}]
    return {"config": {"algo": algo, "config": config, "seed": seed, "eval_episodes": 5},
            "curve": curve, "final_return": finals, "final": curve[-1]}


def write(tmp_path, rows):
    for r in rows:
        tc = r["config"]
        path = tmp_path / f"{tc['algo']}_{tc['config']}_seed{tc['seed']}.json"
        path.write_text(json.dumps(r))


def test_best_is_bold_and_daggers_follow_welch(tmp_path):
    a = [215.0, 215.5, 214.8, 215.2, 215.1]
    b = [215.2, 214.0, 215.9, 214.6, 215.3]  # close to a: not significantly different
    c = [210.0, 210.4, 209.8, 210.1, 210.3]  # clearly worse
    rows = [fake_result("qmix", "3A-6T-5x3", s, v, peak=v + 1) for s, v in enumerate(a)]
    rows += [fake_result("vdn", "3A-6T-5x3", s, v) for s, v in enumerate(b)]
    rows += [fake_result("iql", "3A-6T-5x3", s, v) for s, v in enumerate(c)]
    write(tmp_path, rows)
    built = rep.build(rep.load_results([tmp_path]), references=False)
    cells = built["tables"]["final_return"]
    assert cells[("qmix", "3A-6T-5x3")].best
    assert welch_test(b, a).p >= 0.05 and cells[("vdn", "3A-6T-5x3")].tied
    assert not cells[("iql", "3A-6T-5x3")].tied and not cells[("iql", "3A-6T-5x3")].best
    assert cells[("qmix", "3A-6T-5x3")].est.mean == pytest.approx(np.mean(a))
    peak = built["tables"]["max_return"][("qmix", "3A-6T-5x3")]
    assert peak.est.mean == pytest.approx(np.mean(a) + 1) and peak.peak_step == 10_000
    # lower is better for conflicts: identical per-seed values tie, so all three are daggered
    conf = built["tables"]["conflict_rate"]
    assert sum(conf[(m, "3A-6T-5x3")].best for m in ("qmix", "vdn", "iql")) == 1
    md = rep.markdown(built)
    assert "| QMIX | **215.12 ± 0.32** |" in md and "| VDN | 215.00 ± 0.90† |" in md
    assert "@10k" in md
    rows_csv = list(csv.DictReader(io.StringIO(rep.csv_text(built))))
    iql = [r for r in rows_csv if r["table"] == "final_return" and r["method"] == "iql"][0]
    assert iql["n"] == "5" and iql["best"] == "0" and float(iql["welch_p"]) < 0.05


def test_reference_rows_and_plots_from_the_cli(tmp_path):
    rows = [fake_result("qmix", "3A-6T-5x3", s, 214.0 + s) for s in range(3)]
    write(tmp_path, rows)
    plots = tmp_path / "plots"
    res = CliRunner().invoke(app, ["stat", "table", str(tmp_path), "--plots", str(plots)])
    assert res.exit_code == 0, res.output
    assert "| *Hungarian* |" in res.stdout and "| *random valid* |" in res.stdout
    png = plots / "curves_3A-6T-5x3.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # references evaluated on the same layouts as the learners: seeds 0-2, 5 episodes each
    built = rep.build(rep.load_results([tmp_path]))
    hung = built["tables"]["final_return"][("hungarian", "3A-6T-5x3")]
    rand = built["tables"]["final_return"][("random", "3A-6T-5x3")]
    assert hung.est.n == 3 and hung.est.mean > rand.est.mean
    # gap closed, per seed against that seed's references: random 0%, Hungarian 100%
    gap = built["tables"]["gap_closed"]
    assert gap[("random", "3A-6T-5x3")].samples == [0.0, 0.0, 0.0]
    assert gap[("hungarian", "3A-6T-5x3")].samples == pytest.approx([100.0] * 3)
    refs = built["reference_samples"]
    want = [100 * (214.0 + s - refs[("3A-6T-5x3", "random")][s]["return"])
            / (refs[("3A-6T-5x3", "hungarian")][s]["return"]
               - refs[("3A-6T-5x3", "random")][s]["return"]) for s in range(3)]
    assert gap[("qmix", "3A-6T-5x3")].samples == pytest.approx(want)
    assert "Share of the gap from random valid play" in res.stdout
    assert np.isnan(rep.gap_closed(200.0, 210.0, 210.0)) and rep.gap_closed(5, 0, 10) == 0.5
    res = CliRunner().invoke(app, ["stat", "table", str(tmp_path), "--format", "csv",
                                   "--no-references"])
    assert res.exit_code == 0 and res.stdout.startswith("table,config,method")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                           text=True, timeout=300)


def test_seed_ranges_and_lists():
    from coordbench.learn.sweep import parse_seeds

    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("3") == [3]
    assert parse_seeds("0,2,5") == [0, 2, 5]


def test_table_and_training_bad_input_is_one_line(tmp_path):
    cases = [
        (["stat", "table", str(tmp_path)], "holds no training results"),
        (["stat", "table", str(tmp_path), "--format", "xls"], "--format must be md or csv"),
        (["stat", "train", "--config", "5A-12T-10x6", "--algo", "dqn"],
         "dqn enumerates joint actions: 5A-12T-10x6 has (3+12)^5 = 759,375"),
        (["stat", "train", "--config", "3A-6T-5x3", "--algo", "ppo"], "unknown algorithm"),
        (["stat", "train", "--config", "3A-6T-5x3", "--algo", "qmix", "--executor", "slurm"],
         "unknown executor 'slurm'"),
        (["stat", "train", "--config", "3A-6T-5x3", "--algo", "qmix", "--seeds", "0..4"],
         "--seeds must look like 0-4 or 0,2,5"),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", str(tmp_path / "x.pt")],
         "does not exist"),
    ]
    for args, msg in cases:
        res = cli(*args)
        assert res.returncode == 2 and msg in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    (tmp_path / "qmix_3A-6T-5x3_seed0.json").write_text("{not json")
    res = cli("stat", "table", str(tmp_path))
    assert res.returncode == 2 and "is corrupt" in res.stderr


def test_table9_is_compared_with_the_convention_each_paper_cell_uses(tmp_path):
    from types import SimpleNamespace

    from coordbench.reproduce.stat import table9_by_convention

    rows = []
    for algo, pre, post in (("dqn", 1.1, 2.5), ("qmix", 1.05, 2.4)):
        for s in range(3):
            r = fake_result(algo, "3A-6T-5x3", s, 214.0)
            for point in r["curve"]:
                point.update(diversity_per_decision_agent=pre,
                             diversity_per_decision_agent_post=post)
            rows.append(r)
    write(tmp_path, rows)
    built = rep.build(rep.load_results([tmp_path]), references=False)
    assert built["tables"]["assignment_diversity_per_agent_post"][
        ("dqn", "3A-6T-5x3")].est.mean == pytest.approx(2.5)
    text = table9_by_convention(SimpleNamespace(built=built, configs=built["configs"]))
    # DQN's published 2.275 is set beside the after-the-step count, QMIX's 1.092 before
    few = " (n=3: too few)"
    assert (f"| 3A-6T-5x3 | DQN | 2.275 | after | 2.500 ± 0.000{few} | 1.100 ± 0.000{few} | "
            f"2.500 ± 0.000{few} |") in text
    assert "| 3A-6T-5x3 | QMIX | 1.086 | before | 1.050 ± 0.000 (n=3: too few) |" in text
    # a result written before the after-the-step count was recorded: no cell, no error
    old = [fake_result("vdn", "3A-6T-5x3", 0, 214.0)]
    (tmp_path / "old").mkdir()
    write(tmp_path / "old", old)
    built = rep.build(rep.load_results([tmp_path / "old"]), references=False)
    assert ("vdn", "3A-6T-5x3") not in built["tables"]["assignment_diversity_per_agent_post"]
