"""LeRobotDataset v3.0 export and import (`physical export --format lerobot`, `physical
train --demos lerobot:DIR`). LeRobot itself reads these files in
benchmarks/lerobot_check.py (its own environment: it pins another torch); here the files are
read back with pyarrow and checked field by field against the demonstrations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from coordbench.envs.physical.demo_files import load_demos
from coordbench.envs.physical.embodiment import KINDS, obs_names
from coordbench.suites.physical.demos import make_demos
from tests.cli_errors import error_line

TASK = "Handover"


def cli(*args: str, cwd: Path) -> dict | list:
    """Run `coordbench ARGS --json` in this process; return its JSON."""
    import contextlib
    import io
    import os
    import sys

    from coordbench.cli import main

    out, here, argv = io.StringIO(), Path.cwd(), sys.argv
    try:
        os.chdir(cwd)
        sys.argv = ["coordbench", *args, "--json"]
        with contextlib.redirect_stdout(out):
            try:
                main()
            except SystemExit as e:
                assert not e.code, out.getvalue()
    finally:
        os.chdir(here)
        sys.argv = argv
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demos")
    make_demos(TASK, 3, out)
    return out


@pytest.fixture(scope="module")
def dataset(demos, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sets") / "handover"
    res = cli("physical", "export", str(demos), "--format", "lerobot", "--out", str(out),
              cwd=out.parent)
    assert res["episodes"] == 3 and res["splits"] == {"train": 2, "val": 1}
    return out


def _table(root: Path):
    return pq.read_table(root / "data/chunk-000/file-000.parquet")


def _matrix(table, key: str) -> np.ndarray:
    col = table[key].combine_chunks()
    return col.flatten().to_numpy().reshape(len(col), -1)


def test_the_dataset_is_lerobots_v3_layout(dataset):
    files = sorted(str(p.relative_to(dataset)) for p in dataset.rglob("*") if p.is_file())
    assert files == ["data/chunk-000/file-000.parquet",
                     "meta/episodes/chunk-000/file-000.parquet", "meta/info.json",
                     "meta/stats.json", "meta/tasks.parquet"]
    info = json.loads((dataset / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 50
    assert info["robot_type"] == "coordbench_cobot" and info["total_tasks"] == 1
    assert info["splits"] == {"train": "0:2", "val": "2:3"} and info["video_path"] is None
    feats = info["features"]
    width, adim = len(obs_names(TASK)), KINDS["cobot"].action_dim
    assert feats["observation.state"]["shape"] == [2 * width]
    assert feats["observation.state.agent_1"]["names"] == list(obs_names(TASK))
    assert feats["action"]["names"][adim] == "agent_1.base_vx"
    assert list(feats)[-5:] == ["timestamp", "frame_index", "episode_index", "index",
                                "task_index"]
    table = _table(dataset)
    assert info["total_frames"] == table.num_rows
    # LeRobot's own writer leaves the datasets library's schema in the file
    hf = json.loads(table.schema.metadata[b"huggingface"])["info"]["features"]
    assert hf["action"] == {"feature": {"dtype": "float32", "_type": "Value"},
                            "length": 2 * adim, "_type": "List"}
    assert hf["phase"] == {"dtype": "int64", "_type": "Value"}
    tasks = pq.read_table(dataset / "meta/tasks.parquet").to_pandas()
    assert list(tasks["task_index"]) == [0] and tasks.index[0].startswith("Hand the bottle")
    stats = json.loads((dataset / "meta/stats.json").read_text())
    assert set(stats["action"]) == {"min", "max", "mean", "std", "count", "q01", "q10", "q50",
                                    "q90", "q99"}
    assert stats["index"]["count"] == [table.num_rows]
    assert stats["index"]["max"] == [table.num_rows - 1]


def test_the_frames_are_the_demonstrations(demos, dataset):
    parts = [load_demos(demos / f"{TASK}_{s}.npz") for s in ("train", "val")]
    obs = np.concatenate([p["obs"] for p in parts])
    act = np.concatenate([p["actions"] for p in parts])
    table = _table(dataset)
    n = obs.shape[1]
    assert np.array_equal(_matrix(table, "observation.state"), obs.reshape(len(obs), -1))
    assert np.array_equal(_matrix(table, "action"), act.reshape(len(act), -1))
    for i in range(n):
        assert np.array_equal(_matrix(table, f"observation.state.agent_{i}"), obs[:, i])
        assert np.array_equal(_matrix(table, f"action.agent_{i}"), act[:, i])
    executed = np.concatenate([p["executed"] for p in parts]).astype(np.float32)
    assert np.array_equal(_matrix(table, "action.executed"), executed.reshape(len(obs), -1))
    assert np.array_equal(table["phase"].to_numpy(),
                          np.concatenate([p["phase"] for p in parts]))
    lengths = np.concatenate([np.diff(p["episode_start"]) for p in parts])
    ep = table["episode_index"].to_numpy()
    assert np.array_equal(np.bincount(ep), lengths)
    assert np.array_equal(table["index"].to_numpy(), np.arange(len(obs)))
    frame = table["frame_index"].to_numpy()
    assert np.array_equal(frame, np.concatenate([np.arange(k) for k in lengths]))
    assert np.allclose(table["timestamp"].to_numpy(), frame / 50, atol=1e-6)
    episodes = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    starts = np.cumsum([0, *lengths])
    seeds = np.concatenate([p["seeds"] for p in parts])
    for e, row in enumerate(episodes):
        assert (row["dataset_from_index"], row["dataset_to_index"]) == (starts[e],
                                                                        starts[e + 1])
        assert row["length"] == lengths[e] and row["seed"] == seeds[e]
        assert row["stats/action/count"] == [lengths[e]]


def test_training_on_the_dataset_gives_the_same_policy(demos, dataset, tmp_path):
    a = cli("physical", "train", "--task", TASK, "--demos", str(demos), "--steps", "20",
            "--rollouts", "0", "--out", str(tmp_path / "a.pt"), cwd=tmp_path)
    b = cli("physical", "train", "--task", TASK, "--demos", f"lerobot:{dataset}", "--steps",
            "20", "--rollouts", "0", "--out", str(tmp_path / "b.pt"), cwd=tmp_path)
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert a["val_loss"] == b["val_loss"] and a["demos_digest"] == b["demos_digest"]


def test_a_thinner_frame_rate_keeps_every_nth_step(demos, tmp_path):
    res = cli("physical", "export", str(demos), "--format", "lerobot", "--out",
              str(tmp_path / "ds"), "--fps", "10", cwd=tmp_path)
    parts = [load_demos(demos / f"{TASK}_{s}.npz") for s in ("train", "val")]
    lengths = np.concatenate([np.diff(p["episode_start"]) for p in parts])
    assert res["frames"] == int(sum(-(-lengths // 5)))
    table = _table(tmp_path / "ds")
    obs = parts[0]["obs"]
    assert np.array_equal(_matrix(table, "observation.state")[:3], obs[[0, 5, 10]].reshape(3, -1))
    assert np.allclose(table["timestamp"].to_numpy()[:3], [0.0, 0.1, 0.2])
    # training runs at the control rate: a thinned dataset is refused, naming why
    line = error_line(["physical", "train", "--task", TASK, "--demos",
                       f"lerobot:{tmp_path / 'ds'}", "--rollouts", "0"], tmp_path)
    assert "10 frames a second" in line


def test_camera_views_are_videos_with_one_frame_per_row(demos, tmp_path):
    import av

    res = cli("physical", "export", str(demos), "--format", "lerobot", "--out",
              str(tmp_path / "ds"), "--images", "--size", "32", "--fps", "25", cwd=tmp_path)
    root = tmp_path / "ds"
    info = json.loads((root / "meta/info.json").read_text())
    feat = info["features"]["observation.images.agent_0"]
    assert feat["dtype"] == "video" and feat["shape"] == [32, 32, 3]
    assert feat["info"]["video.fps"] == 25 and feat["info"]["video.codec"] == "h264"
    for i in range(2):
        path = root / f"videos/observation.images.agent_{i}/chunk-000/file-000.mp4"
        with av.open(str(path)) as c:
            frames = [f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])]
        assert len(frames) == res["frames"] and frames[0].shape == (32, 32, 3)
        assert frames[0].std() > 5  # a rendered scene, not a blank frame
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    key = "videos/observation.images.agent_0"
    assert episodes[0][f"{key}/from_timestamp"] == 0.0
    assert episodes[1][f"{key}/from_timestamp"] == pytest.approx(episodes[0]["length"] / 25)
    assert episodes[-1][f"{key}/to_timestamp"] == pytest.approx(res["frames"] / 25)
    stats = json.loads((root / "meta/stats.json").read_text())["observation.images.agent_0"]
    assert np.array(stats["mean"]).shape == (3, 1, 1)


def test_a_runs_rollouts_are_replayed_and_checked(tmp_path):
    from coordbench.core.rundir import RunDir

    cli("physical", "eval", "--task", TASK, "--policy", "expert", "--rollouts", "2", "--out",
        str(tmp_path / "run"), cwd=tmp_path)
    res = cli("physical", "export", str(tmp_path / "run"), "--format", "lerobot", "--out",
              str(tmp_path / "ds"), cwd=tmp_path)
    run = RunDir.open(tmp_path / "run")
    (cond,) = run.conditions
    ends = sorted((tr.header.seed, tr.end.t) for tr in run.load_episodes(cond))
    assert res["episodes"] == 2 and res["frames"] == sum(t for _, t in ends)
    episodes = pq.read_table(tmp_path / "ds/meta/episodes/chunk-000/file-000.parquet")
    assert episodes["seed"].to_pylist() == [s for s, _ in ends]
    # a run whose episodes the policy does not reproduce is refused, and nothing is written
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    manifest["conditions"][cond]["policy"] = "expert_noisy"
    (tmp_path / "run/manifest.json").write_text(json.dumps(manifest))
    line = error_line(["physical", "export", str(tmp_path / "run"), "--format", "lerobot",
                       "--out", str(tmp_path / "ds2")], tmp_path)
    assert "did not replay as it was recorded" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "run"]


@pytest.mark.parametrize("case,msg", [
    ("format", "--format must be one of lerobot"),
    ("missing", "does not exist"),
    ("empty", "holds no demonstrations"),
    ("damaged", "is corrupt"),
    ("exists", "already exists"),
    ("fps", "--fps must divide the control rate 50"),
    ("task", "holds no demonstrations of CoCarry"),
])
def test_bad_exports_are_one_line_and_write_nothing(demos, tmp_path, case, msg):
    src = tmp_path / "src"
    shutil.copytree(demos, src)
    args = ["physical", "export", str(src), "--format", "lerobot", "--out",
            str(tmp_path / "out")]
    if case == "format":
        args[4] = "hdf5"
    elif case == "missing":
        args[2] = str(tmp_path / "nowhere")
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args[2] = str(tmp_path / "empty")
    elif case == "damaged":
        (src / f"{TASK}_val.npz").write_bytes(b"not a zip archive")
    elif case == "exists":
        (tmp_path / "out").mkdir()
    elif case == "fps":
        args += ["--fps", "7"]
    elif case == "task":
        args += ["--only", "CoCarry"]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert msg in error_line(args, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_dataset_that_does_not_fit_the_task_is_refused_naming_the_feature(dataset, tmp_path):
    line = error_line(["physical", "train", "--task", "CoCarry", "--demos",
                       f"lerobot:{dataset}", "--rollouts", "0"], tmp_path)
    assert "holds Handover demonstrations, not CoCarry" in line
    # a dataset recorded elsewhere (no coordbench block) with a narrower action
    other = tmp_path / "other"
    shutil.copytree(dataset, other)
    info = json.loads((other / "meta/info.json").read_text())
    del info["coordbench"]
    info["features"]["action.agent_1"]["shape"] = [7]
    (other / "meta/info.json").write_text(json.dumps(info))
    line = error_line(["physical", "train", "--task", TASK, "--demos", f"lerobot:{other}",
                       "--rollouts", "0"], tmp_path)
    assert "'action.agent_1'" in line and "shape [7]" in line and "[9]" in line
    del info["features"]["observation.state.agent_1"]
    del info["features"]["observation.state"]
    (other / "meta/info.json").write_text(json.dumps(info))
    line = error_line(["physical", "train", "--task", TASK, "--demos", f"lerobot:{other}",
                       "--rollouts", "0"], tmp_path)
    assert "no feature 'observation.state'" in line
    line = error_line(["physical", "train", "--task", TASK, "--demos",
                       f"lerobot:{tmp_path / 'nowhere'}", "--rollouts", "0"], tmp_path)
    assert "does not exist" in line
    assert not (tmp_path / "runs").exists()


def test_a_changed_dataset_converts_again_wherever_it_lies(dataset, tmp_path):
    from coordbench.suites.physical.lerobot import to_demos

    root = tmp_path / "videos" / "ds"  # a folder named like the datasets' own videos folder
    shutil.copytree(dataset, root)
    first = to_demos(root, [TASK], "cobot", tmp_path / "cache")
    assert to_demos(root, [TASK], "cobot", tmp_path / "cache") == first  # converted once
    info = json.loads((root / "meta/info.json").read_text())
    info["splits"] = {"train": "0:3"}
    (root / "meta/info.json").write_text(json.dumps(info))
    again = to_demos(root, [TASK], "cobot", tmp_path / "cache")
    assert again != first and not (again / f"{TASK}_val.npz").exists()
