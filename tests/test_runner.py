"""The one runner, through a fake family: resume, token and cost limits, every executor."""

from __future__ import annotations

import json

import pytest

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.errors import ConfigError, RunDirError
from coordbench.runner import Limits, run_condition, run_conditions
from tests.fake_suite import SUITE, FakeSpec, double
from tests.ray_sockets import LOOPBACK, ray_listen_ips

# Ray starts one local instance at a time: every test of this file runs in one xdist worker
pytestmark = pytest.mark.xdist_group("ray")


def _episodes(run: RunDir, cond: str) -> dict[str, str]:
    """Return {key: trajectory JSON without the creation time and the checkout's sha (a
    worker reads it when it starts)."""
    out = {}
    for key in run.episode_keys(cond):
        t = run.load_episode(cond, key)
        out[key] = json.dumps([t.header.model_dump(mode="json", exclude={"created", "git_sha"}),
                               [e.model_dump(mode="json") for e in t.events]])
    return out


def test_resume_plays_only_the_missing_cases(tmp_path):
    run = RunDir.create_or_open(tmp_path / "r")
    cond = run_condition(run, SUITE, FakeSpec(), limit=4)
    assert run.conditions[cond]["suite"] == "fake"
    first = _episodes(run, cond)
    assert len(first) == 4
    run.episode_path(cond, "case002").unlink()
    played = []

    class Watch:
        def start(self, condition, label, total, done):
            played.append(("start", total, done))

        def advance(self, condition, n):
            played.append(("advance", n))

    run_condition(RunDir.open(tmp_path / "r"), SUITE, FakeSpec(), limit=6, progress=Watch())
    assert played[0] == ("start", 6, 3) and sum(n for k, n in played[1:]) == 3
    again = _episodes(RunDir.open(tmp_path / "r"), cond)
    assert len(again) == 6 and all(again[k] == v for k, v in first.items())
    assert not list((tmp_path / "r").rglob("*.tmp"))


def test_the_token_budget_ends_an_episode_and_it_is_kept(tmp_path):
    run = RunDir.create_or_open(tmp_path / "r")
    cond = run_condition(run, SUITE, FakeSpec(tokens=10), limit=2,
                         limits=Limits(max_tokens_per_episode=25))
    for key in run.episode_keys(cond):
        t = run.load_episode(cond, key)
        assert t.end.termination == "normal_stop"
        assert t.end.detail == "token budget of 25 exhausted"
        assert len(t.steps(ModelCallEvent)) == 3  # 10, 20, 30 >= 25
    assert len(run.episode_keys(cond)) == 2


@pytest.mark.parametrize("concurrent", [False, True])
def test_the_cost_limit_stops_the_run_and_a_rerun_finishes_it(tmp_path, concurrent):
    spec = FakeSpec(cost=0.01, steps=4, concurrent=concurrent)
    run = RunDir.create_or_open(tmp_path / "r")
    cond = run_condition(run, SUITE, spec, limits=Limits(cost_limit=0.1), in_flight=2)
    kept = run.episode_keys(cond)
    # each episode costs 0.04: the limit of 0.10 is reached during the third episode, which
    # (and every later one) is not written
    assert 0 < len(kept) < 6
    for key in kept:
        assert run.load_episode(cond, key).end.termination == "success"
    run_condition(RunDir.open(tmp_path / "r"), SUITE, spec, limits=Limits(cost_limit=10.0))
    assert len(RunDir.open(tmp_path / "r").episode_keys(cond)) == 6


@pytest.mark.parametrize("executor", ["process", "ray"])
def test_every_executor_writes_the_same_trajectories(tmp_path, executor):
    if executor == "ray":
        pytest.importorskip("ray")
    plan = [(SUITE, FakeSpec("a")), (SUITE, FakeSpec("b", steps=2, concurrent=True))]
    local = RunDir.create_or_open(tmp_path / "local")
    names = run_conditions(local, plan)
    other = RunDir.create_or_open(tmp_path / executor)
    assert run_conditions(other, plan, executor=executor, workers=2) == names
    for cond in names:
        assert _episodes(other, cond) == _episodes(local, cond)
    assert other.manifest["conditions"] == local.manifest["conditions"]


def test_a_local_ray_instance_listens_on_loopback_only():
    pytest.importorskip("ray")
    from coordbench.runner.executors import RayExecutor

    with RayExecutor(1) as ex:
        assert sorted(ex.map(double, [1, 2])) == [2, 4]
        ips = ray_listen_ips()
    assert ips, "no listening Ray socket was found"
    assert all(ip in LOOPBACK for ip in ips), ips


def test_bad_executors_and_unreachable_clusters_are_one_line(tmp_path, monkeypatch):
    run = RunDir.create_or_open(tmp_path / "r")
    with pytest.raises(ConfigError, match="unknown executor 'slurm'"):
        run_condition(run, SUITE, FakeSpec(), executor="slurm")
    with pytest.raises(ConfigError, match="--workers must be >= 1"):
        run_condition(run, SUITE, FakeSpec(), executor="process", workers=0)
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster at RAY_ADDRESS"):
        run_condition(run, SUITE, FakeSpec(), executor="ray")
    assert run.episode_keys("fake_a") == []


def test_manifests_of_another_version_are_refused_and_left_alone(tmp_path):
    run = RunDir.create_or_open(tmp_path / "r")
    run_condition(run, SUITE, FakeSpec(), limit=1)
    path = tmp_path / "r" / "manifest.json"
    m = json.loads(path.read_text())
    m["format_version"] = 99
    path.write_text(json.dumps(m))
    before = path.read_bytes()
    with pytest.raises(RunDirError, match="format version 99"):
        RunDir.open(tmp_path / "r")
    assert path.read_bytes() == before
    assert (tmp_path / "r" / "episodes" / "fake_a" / "case000.jsonl").is_file()


def test_a_manifest_without_suites_is_upgraded_not_refused(tmp_path):
    run = RunDir.create_or_open(tmp_path / "r")
    spec = FakeSpec()
    cond = run_condition(run, SUITE, spec, limit=2)
    del run.conditions[cond]["suite"]
    run.save_manifest()
    run = RunDir.open(tmp_path / "r")
    run_condition(run, SUITE, spec, limit=3)
    assert RunDir.open(tmp_path / "r").conditions[cond]["suite"] == "fake"
    assert len(run.episode_keys(cond)) == 3


def test_concurrent_model_calls_are_recorded_in_the_order_they_were_made():
    import asyncio

    from coordbench.core.trajectory import AgentSpec
    from coordbench.runner import Recorder
    from coordbench.runner.episode import record_model_call, reserve_model_call

    async def call(agent: int, delay: float) -> None:
        slot = reserve_model_call()
        await asyncio.sleep(delay)
        record_model_call({"agent": agent, "role": "agent", "phase": "act", "model": "m",
                           "request_hash": str(agent)}, slot)

    async def step() -> Recorder:
        rec = Recorder(suite="fake", episode_id="x", task_id="t", seed=0,
                       team=[AgentSpec(id="agent_0", driver="m")])
        with rec:
            await asyncio.gather(call(0, 0.05), call(1, 0.0), call(2, 0.02))
            rec.flush_calls()
        return rec

    rec = asyncio.run(step())
    assert [e.agent for e in rec.events] == [0, 1, 2]  # replies came back 1, 2, 0
