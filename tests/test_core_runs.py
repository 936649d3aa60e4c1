"""Trajectory files, run directories, atomic writes and resumption."""

import json

import pytest

from coordbench.core.atomic import write_atomic
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import SCHEMA_VERSION, Trajectory, json_schema
from coordbench.errors import RunDirError
from coordbench.runner import Case, PlayContext, run_condition
from coordbench.suites.stat.suite import SUITE, StatEvalSpec, condition_metrics, episode_key
from tests.test_metrics_stat import hand_made


def play(run: RunDir, spec: StatEvalSpec, episodes: int) -> int:
    """Play the missing episodes of `spec`; return how many were new."""
    before = len(run.episode_keys(spec.condition))
    run_condition(run, SUITE, spec, limit=episodes)
    return len(run.episode_keys(spec.condition)) - before


def test_jsonl_round_trip_and_schema():
    t = hand_made()
    text = t.to_jsonl()
    assert len(text.splitlines()) == 1 + len(t.events)
    assert json.loads(text.splitlines()[0])["schema_version"] == SCHEMA_VERSION
    back = Trajectory.from_jsonl(text)
    assert back == t and back.end.success
    schema = json_schema()
    assert "stat_step" in json.dumps(schema["event"]) and schema["header"]["type"] == "object"


def test_newer_major_schema_is_refused():
    lines = hand_made().to_jsonl().splitlines()
    head = json.loads(lines[0])
    head["schema_version"] = "2.0"
    with pytest.raises(ValueError, match="schema version 2.0"):
        Trajectory.from_jsonl("\n".join([json.dumps(head), *lines[1:]]))


def test_atomic_write_leaves_no_temp_files(tmp_path):
    p = tmp_path / "a" / "f.txt"
    write_atomic(p, "one")
    write_atomic(p, "two")
    assert p.read_text() == "two"
    assert [x.name for x in p.parent.iterdir()] == ["f.txt"]


def test_run_resumes_and_skips_finished_episodes(tmp_path):
    spec = StatEvalSpec("3A-6T-5x3", "random", "paper", seed=4)
    run = RunDir.create_or_open(tmp_path / "run")
    assert play(run, spec, 5) == 5
    first = condition_metrics(run, spec.condition)["return"]
    # lose one episode (as if the process died before writing it) and rerun
    run.episode_path(spec.condition, episode_key(2)).unlink()
    run2 = RunDir.open(tmp_path / "run")
    assert play(run2, spec, 5) == 1
    assert condition_metrics(run2, spec.condition)["return"] == first
    assert play(run2, spec, 7) == 2  # extending plays only the new ones


def test_episode_results_do_not_depend_on_batching():
    spec = StatEvalSpec("5A-12T-10x6", "random", "uniform", seed=2)
    got: dict[int, list] = {}
    cases = [Case(episode_key(k), k) for k in range(4)]
    for batch in (1, 3):
        suite = type(SUITE)()
        suite.batch = batch
        got[batch] = [(c.data, t.events) for c, t in suite.play(spec, cases, PlayContext("."))]
    assert sorted(got[1]) == sorted(got[3])


def test_spec_mismatch_and_corruption_are_clear_errors(tmp_path):
    run = RunDir.create_or_open(tmp_path / "run")
    spec = StatEvalSpec("3A-6T-5x3", "greedy")
    play(run, spec, 2)
    run.conditions[spec.condition]["seed"] = 99
    with pytest.raises(RunDirError, match="different spec"):
        run.register(spec.condition, {"config": "3A-6T-5x3"})
    path = run.episode_path(spec.condition, episode_key(1))
    path.write_text(path.read_text()[:200])
    with pytest.raises(RunDirError, match=r"corrupt episode file .*ep00001"):
        condition_metrics(RunDir.open(tmp_path / "run"), spec.condition)
    (tmp_path / "run" / "manifest.json").write_text("{not json")
    with pytest.raises(RunDirError, match="manifest.json is corrupt"):
        RunDir.open(tmp_path / "run")
    with pytest.raises(RunDirError, match="does not exist"):
        RunDir.open(tmp_path / "nope")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(RunDirError, match="not empty"):
        RunDir.create_or_open(tmp_path / "full")


def test_saved_trajectory_replays_to_the_same_rewards(tmp_path):
    import numpy as np

    from coordbench.envs.stat.config import get_config
    from coordbench.envs.stat.vec import StatVecEnv

    run = RunDir.create_or_open(tmp_path / "run")
    spec = StatEvalSpec("5A-25T-25x15", "random", "paper")
    play(run, spec, 1)
    traj = run.load_episode(spec.condition, episode_key(0))
    cfg = get_config("5A-25T-25x15")
    env = StatVecEnv(cfg, 1, auto_reset=False)
    env.reset(np.array([traj.header.params["task_positions"]]))
    for e in traj.events[:-1]:
        _, _, _, info = env.step(np.array([e.actions]))
        assert info.agent_rewards[0].tolist() == e.rewards
    assert traj.end.success and traj.end.t == len(traj.events) - 1


@pytest.mark.parametrize("name,spec,why", [
    ("../../../outside", {"suite": "stat"}, "is not a name a run directory stores"),
    ("a/b", {"suite": "stat"}, "is not a name a run directory stores"),
    (".hidden", {"suite": "stat"}, "is not a name a run directory stores"),
    ("stat_ok", "a string", "records str, not its spec"),
    ("stat_ok", ["a", "list"], "records list, not its spec"),
])
def test_a_crafted_manifest_is_refused_where_a_run_is_opened(tmp_path, name, spec, why):
    """Condition names become folders and specs are read as dicts: a manifest naming a path
    outside the run, or a condition whose spec is not an object, is one line, nothing read."""
    import subprocess
    import sys

    run = RunDir.create_or_open(tmp_path / "run")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"kind": "header"}\n')
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["conditions"] = {name: spec}
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDirError, match=why):
        RunDir.open(run.path)
    for cmd in (["report", str(run.path)], ["export", str(run.path), "--format", "csv",
                                             "--out", str(tmp_path / "x")]):
        res = subprocess.run([sys.executable, "-m", "coordbench", *cmd], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 2 and "Traceback" not in res.stderr and why in res.stderr
