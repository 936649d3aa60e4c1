"""Live training logs (learn/train_log.py): every train command writes its scalars under
OUT/logs/<run>/ as it trains (a CSV row and TensorBoard events per evaluation, read back here
with TensorBoard's own reader), a killed run's resume continues the same curves without a
duplicated step, --log is checked before any training, and `stat table --format marl-eval`
writes the sweep as marl-eval's raw JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.learn.train_log import CSV_NAME, TrainLog, read_csv
from tests.cli_errors import error_line

runner = CliRunner()
STAT = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "mappo", "--steps", "2048",
        "--eval-every", "1024", "--eval-episodes", "2", "--executor", "local", "--json"]


def _events(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Return {tag: [(step, value)]} of a run's event files, read by TensorBoard's own loader
    (one file expected)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = [p for p in folder.iterdir() if ".tfevents." in p.name]
    assert len(files) == 1, files
    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)]
            for tag in acc.Tags()["scalars"]}


def _increasing(events: dict[str, list[tuple[int, float]]]) -> bool:
    return all(all(a[0] < b[0] for a, b in zip(v, v[1:], strict=False))
               for v in events.values())


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """A two-seed `stat train` with both logs."""
    out = tmp_path_factory.mktemp("sweep")
    res = runner.invoke(app, [*STAT, "--seeds", "0-1", "--log", "tensorboard,csv",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_stat_train_logs_a_csv_row_and_events_per_evaluation(sweep_dir):
    for seed in (0, 1):
        run = f"mappo_3A-6T-5x3_seed{seed}"
        result = json.loads((sweep_dir / f"{run}.json").read_text())
        curve = result["curve"]
        rows = read_csv(sweep_dir / "logs" / run)
        assert [r["step"] for r in rows] == [c["step"] for c in curve] == [0, 1024, 2048]
        assert [r["eval/return"] for r in rows] == [c["return"] for c in curve]
        assert all(r["wall_s"] >= 0 and "speed/steps_per_s" in r for r in rows)
        # PPO's losses and entropy, from the first update on (none before it)
        assert all({"loss/policy", "loss/value", "explore/entropy"} <= set(r) for r in rows[1:])
        events = _events(sweep_dir / "logs" / run)
        assert [s for s, _ in events["eval/return"]] == [c["step"] for c in curve]
        assert [v for _, v in events["eval/return"]] == pytest.approx(
            [c["return"] for c in curve])
        assert {"time/wall_s", "speed/steps_per_s", "explore/entropy"} <= set(events)
        assert _increasing(events)


class _Killed(Exception):
    pass


class _Store:
    """A job's snapshot store (runner.jobs.JobContext's surface) that keeps the first
    `keep` snapshots, drops the later ones and 'kills' the run at snapshot `kill_at`: the
    evaluations logged between the kept snapshot and the kill must not survive the resume."""

    every_s = 0.0

    def __init__(self, root: Path, keep: int, kill_at: int | None) -> None:
        self.root, self.key = str(root), "job"
        self.blob, self.saves, self.keep, self.kill_at = None, 0, keep, kill_at

    def resume(self):
        return self.blob

    def save(self, blob: bytes) -> None:
        self.saves += 1
        if self.saves <= self.keep:
            self.blob = blob
        if self.saves == self.kill_at:
            raise _Killed


def test_a_killed_stat_train_resumes_one_stream_and_one_row_per_evaluation(tmp_path):
    from dataclasses import asdict

    from coordbench.learn.methods import train_configs
    from coordbench.learn.sweep import result_path, train_job
    from coordbench.learn.train_log import LogSpec

    tc = train_configs("3A-6T-5x3", "qmix", [0], steps=640, eval_every=160, eval_episodes=2,
                       num_envs=32)[0]
    run = result_path(tmp_path, tc).stem
    spec = LogSpec.of(tmp_path, run, ("tensorboard", "csv"))
    folder = tmp_path / "logs" / run
    # a snapshot at every 32-step iteration: the 6th is taken at step 160 (before that
    # step's evaluation), the kill comes at step 416, after the evaluations at 160 and 320
    store = _Store(tmp_path, keep=6, kill_at=14)
    with pytest.raises(_Killed):
        train_job((asdict(tc), None, spec), store)
    assert [r["step"] for r in read_csv(folder)] == [0, 160, 320]
    # what a kill -9 in the middle of writing leaves: a cut CSV line, a cut event record
    with open(folder / CSV_NAME, "a") as f:
        f.write("4")
    (event_file,) = [p for p in folder.iterdir() if ".tfevents." in p.name]
    with open(event_file, "ab") as f:
        f.write(b"\x20\x00\x00")
    store.kill_at = None
    out = train_job((asdict(tc), None, spec), store)
    curve = out.value["curve"]
    assert out.value["resumed_from_step"] == 160
    rows = read_csv(folder)
    assert [r["step"] for r in rows] == [c["step"] for c in curve] == [0, 160, 320, 480, 640]
    assert [r["eval/return"] for r in rows] == [c["return"] for c in curve]
    events = _events(folder)  # one file: the earlier attempt's was rewritten, then removed
    assert _increasing(events)
    assert [s for s, _ in events["eval/return"]] == [0, 160, 320, 480, 640]
    assert [s for s, _ in events["explore/epsilon"]] == [160, 320, 480, 640]


def test_a_rewrite_cut_short_by_a_kill_keeps_each_step_once(tmp_path):
    # a kill between writing the new stream and removing the old one leaves both files
    with TrainLog(tmp_path, ("tensorboard", "csv")) as log:
        for step in (0, 10, 20):
            log({"step": step, "wall_s": step / 10, "eval/return": float(step)})
    first = [p for p in tmp_path.iterdir() if ".tfevents." in p.name]
    keep = tmp_path / "old"
    keep.mkdir()
    (keep / first[0].name).write_bytes(first[0].read_bytes())
    with TrainLog(tmp_path, ("tensorboard",)) as log:
        log({"step": 10, "wall_s": 1.0, "eval/return": 10.0})
    (tmp_path / first[0].name).write_bytes((keep / first[0].name).read_bytes())
    (keep / first[0].name).unlink()
    keep.rmdir()
    with TrainLog(tmp_path, ("tensorboard",)) as log:
        log({"step": 20, "wall_s": 2.0, "eval/return": 20.0})
    events = _events(tmp_path)
    assert [s for s, _ in events["eval/return"]] == [0, 10, 20] and _increasing(events)


def test_constructs_train_logs_its_evaluations(tmp_path):
    res = runner.invoke(app, ["constructs", "train", "--construct", "D1", "--steps", "512",
                              "--log", "tensorboard,csv", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    folder = tmp_path / "logs" / "learned_D1_team2_seed0"
    training = json.loads((tmp_path / "learned_D1_team2_seed0.training.json").read_text())
    rows = read_csv(folder)
    assert [r["step"] for r in rows] == [c["step"] for c in training["curve"]] == [512]
    assert rows[0]["eval/success"] == training["curve"][0]["success"]
    assert {"loss/policy", "loss/value", "explore/entropy", "speed/steps_per_s"} <= set(rows[0])
    assert set(_events(folder)) >= {"eval/success", "eval/completion", "loss/value"}


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    from coordbench.suites.physical.demos import make_demos

    out = tmp_path_factory.mktemp("demos")
    make_demos("CoCarry", 3, out)
    return out


def test_physical_train_logs_train_and_validation_losses(tmp_path, demos):
    ckpt = tmp_path / "pol" / "cocarry.pt"
    args = ["physical", "train", "--task", "CoCarry", "--algo", "bc", "--steps", "40",
            "--batch", "8", "--rollouts", "0", "--demos", str(demos), "--json"]
    res = runner.invoke(app, [*args, "--out", str(ckpt), "--log", "tensorboard,csv"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    rows = read_csv(tmp_path / "pol" / "logs" / "cocarry")  # OUT: the checkpoint's folder
    # two robots, one network each, fitted one after the other: 20 rows each
    assert [r["step"] for r in rows] == list(range(2, 82, 2))
    assert all("loss/train_net0" in r for r in rows[:20])
    assert all("loss/train_net1" in r for r in rows[20:])
    assert sum("loss/val_net0" in r for r in rows) == 5
    # each network's last row has its validation loss: the result reports their mean
    assert (rows[19]["loss/val_net0"] + rows[-1]["loss/val_net1"]) / 2 == \
        pytest.approx(result["val_loss"])
    events = _events(tmp_path / "pol" / "logs" / "cocarry")
    assert _increasing(events) and "loss/val_net1" in events
    # the log changes nothing of the training: the same losses without it
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "b.pt"), "--log", "none"])
    assert json.loads(again.stdout)["train_loss"] == result["train_loss"]
    assert not (tmp_path / "logs").exists()


LINES = {
    "stat": ["stat", "train", "--config", "3A-6T-5x3", "--algo", "qmix", "--steps", "64"],
    "constructs": ["constructs", "train", "--construct", "D1", "--steps", "64"],
    "physical": ["physical", "train", "--task", "CoCarry", "--steps", "2", "--rollouts", "0",
                 "--demos", "."],
}


@pytest.mark.parametrize("command", sorted(LINES))
def test_log_tensorboard_without_tensorboard_is_one_line_before_training(
        command, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    out = tmp_path / "out"
    line = error_line([*LINES[command], "--log", "csv,tensorboard", "--out", str(out)],
                      tmp_path)
    assert "pip install 'coordbench[logs]'" in line
    assert not out.exists()  # nothing trained, nothing written


@pytest.mark.parametrize("command", sorted(LINES))
def test_a_bad_log_value_is_one_line_naming_the_choices(command, tmp_path):
    for bad in ("foo", "csv,none", ""):
        line = error_line([*LINES[command], "--log", bad, "--out", str(tmp_path / "o")],
                          tmp_path)
        assert "--log must be a comma list of tensorboard, csv, or none" in line
    assert not (tmp_path / "o").exists()


def test_log_none_writes_no_logs(tmp_path):
    res = runner.invoke(app, [*STAT, "--steps", "1024", "--seeds", "0", "--log", "none",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "mappo_3A-6T-5x3_seed0.json").is_file()
    assert not (tmp_path / "logs").exists()


def test_stat_table_writes_marl_eval_json(sweep_dir, tmp_path):
    target = tmp_path / "marl.json"
    res = runner.invoke(app, ["stat", "table", str(sweep_dir), "--format", "marl-eval",
                              "--output", str(target)])
    assert res.exit_code == 0, res.output
    data = json.loads(target.read_text())
    runs = data["stat"]["3A-6T-5x3"]["mappo"]
    assert list(data) == ["stat"] and list(runs) == ["seed_0", "seed_1"]
    for seed, run in runs.items():
        result = json.loads((sweep_dir / f"mappo_3A-6T-5x3_{seed.replace('_', '')}.json")
                            .read_text())
        curve = result["curve"]
        # step_0..step_k in order, then the absolute metrics last (marl-eval reads the last
        # key as them)
        assert list(run) == [f"step_{i}" for i in range(len(curve))] + ["absolute_metrics"]
        for i, row in enumerate(curve):
            step = run[f"step_{i}"]
            assert step["step_count"] == row["step"] and isinstance(step["step_count"], int)
            assert step["return"] == [row["return"]]
            assert set(step) - {"step_count"} == set(run["absolute_metrics"])
        assert run["absolute_metrics"]["return"] == [result["final_return"]]
    # on stdout too; the tables' formats are unchanged, and --scaling takes no marl-eval
    res = runner.invoke(app, ["stat", "table", str(sweep_dir), "--format", "marl-eval"])
    assert json.loads(res.stdout) == data
    line = error_line(["stat", "table", str(sweep_dir), "--format", "marl-eval",
                       "--scaling"], tmp_path)
    assert "give one or the other" in line


def test_a_log_that_cannot_be_written_stops_logging_not_training(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    log = TrainLog(tmp_path / "file" / "run", ("tensorboard", "csv"))
    log({"step": 0, "wall_s": 0.0, "eval/return": 1.0})  # no exception: the run trains on
    log({"step": 1, "wall_s": 0.1, "eval/return": 2.0})
    log.close()
    err = capsys.readouterr().err
    assert err.count("training log") == 1 and "off" in err
