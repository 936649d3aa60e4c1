"""A Ray node lost mid-study: a head and two worker nodes started on this machine (loopback
only); a worker node is killed while a model study plays and while a training sweep trains.
The study and the sweep complete on the node left, nothing is lost or counted twice, the
results equal an undisturbed run's, and a rerun plays nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.llm.loopback import ScriptedServer
from tests.ray_sockets import LOOPBACK, ray_listen_ips
from tests.scripted_team import household_reply
from tests.test_provider_faults import content

pytestmark = pytest.mark.xdist_group("ray")
WAIT_S = 120  # every wait below is bounded
STALL_S = 180  # a run that makes no progress this long has hung (a busy machine is slow,
CAP_S = 1800  # not stalled: the wait follows progress, capped at half an hour)


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray")
    # Ray keeps a loopback node address only with "clusters" off (see runner/executors.py)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray.cluster_utils import Cluster

    local = {"node_ip_address": "127.0.0.1", "num_cpus": 1}
    c = Cluster(initialize_head=True, head_node_args={
        **local, "num_cpus": 0, "include_dashboard": False})
    try:
        c.add_node(**local)
        c.add_node(**local)
        c.add_local = lambda: c.add_node(**local)
        yield c
    finally:
        c.shutdown()


def _start(cmd: list[str], address: str, logs) -> subprocess.Popen:
    """Start `coordbench CMD` against the cluster, its output in files under `logs` (a pipe
    nobody reads while we wait could fill and block it)."""
    env = {**os.environ, "RAY_ADDRESS": address}
    logs.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "coordbench", *cmd], env=env,
                            stdout=(logs / "out").open("w"), stderr=(logs / "err").open("w"),
                            text=True)


def _err(logs) -> str:
    return (logs / "err").read_text(errors="replace")


def _kill_a_worker_node_when(cluster, ready, proc: subprocess.Popen, logs) -> None:
    """Kill the processes of one worker node once `ready()` holds (bounded wait)."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert proc.poll() is None, _err(logs)[-2000:]
        assert time.monotonic() < deadline, "the run never got under way"
        time.sleep(0.05)
    node = sorted(cluster.worker_nodes, key=lambda n: n.unique_id)[-1]
    cluster.remove_node(node, allow_graceful=False)


def _finish(proc: subprocess.Popen, logs, progress) -> str:
    """Wait for the command while it makes progress (`progress()` changes at least every
    STALL_S seconds, CAP_S in all); return its stdout."""
    start = seen = time.monotonic()
    last = progress()
    while proc.poll() is None:
        time.sleep(0.5)
        now = progress()
        if now != last:
            last, seen = now, time.monotonic()
        stalled = time.monotonic() - seen
        if stalled > STALL_S or time.monotonic() - start > CAP_S:
            proc.kill()
            proc.wait(30)
            pytest.fail(f"no progress for {stalled:.0f} s: {_err(logs)[-2000:]}")
    err = _err(logs)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    return (logs / "out").read_text()


def _files(folder) -> tuple:
    """Return what changes while a sweep trains: its files' names, sizes and times (a file
    renamed or removed meanwhile is left out)."""
    seen = []
    for p in folder.rglob("*"):
        try:
            st = p.stat()
        except OSError:
            continue
        seen.append((str(p), st.st_size, st.st_mtime_ns))
    return tuple(sorted(seen))


def test_the_cluster_listens_on_loopback_only(cluster):
    ips = ray_listen_ips()
    assert ips and all(ip in LOOPBACK for ip in ips), ips
    assert {n.node_ip_address for n in cluster.list_all_nodes()} == {"127.0.0.1"}


def test_a_model_study_survives_a_lost_node(cluster, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(household_reply, latency=0.2) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                          f"    model: scripted-1\n    max_connections: 4\n")
        cmd = ["mecobench", "run", "--agents", "llm", "--model", "scripted", "--models",
               str(models), "--suite", "v1", "--structure", "parallel", "--team", "2",
               "--max-steps", "4", "--limit", "12", "--no-cache", "--json"]
        logs = tmp_path / "logs"
        proc = _start([*cmd, "--out", str(out), "--executor", "ray", "--workers", "2"],
                      cluster.address, logs)
        # 12 episodes of 4 steps and 2 agents: 96 calls; kill when a third are answered
        _kill_a_worker_node_when(cluster, lambda: len(server.requests) >= 32, proc, logs)
        _finish(proc, logs, lambda: (len(server.requests), _files(out)))
        lost_node_calls = len(server.requests)
        undisturbed = CliRunner().invoke(app, [*cmd, "--out", str(tmp_path / "clean")])
        assert undisturbed.exit_code == 0, undisturbed.output
        # the lost unit was played again: more calls than an undisturbed run makes
        assert lost_node_calls > len(server.requests) - lost_node_calls
        # a rerun plays nothing
        before = len(server.requests)
        rerun = CliRunner().invoke(app, [*cmd, "--out", str(out)])
        assert rerun.exit_code == 0 and len(server.requests) == before
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert len(rd.episode_keys(cond)) == 12 and rd.errored_keys(cond) == []
    assert content(out) == content(tmp_path / "clean")  # nothing lost, changed or doubled
    cluster.add_local()  # two worker nodes again for the next test


def test_a_training_sweep_survives_a_lost_node(cluster, tmp_path):
    out = tmp_path / "sweep"
    cmd = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "iql", "--steps", "40000",
           "--seeds", "0-1", "--num-envs", "16", "--eval-every", "10000", "--eval-episodes",
           "3", "--json"]
    logs = tmp_path / "logs"
    proc = _start([*cmd, "--out", str(out), "--executor", "ray", "--workers", "2",
                   "--snapshot-every", "0.3"], cluster.address, logs)
    jobs = out / ".jobs"
    # both seeds under way (each has saved a snapshot): the lost node held one of them
    _kill_a_worker_node_when(cluster, lambda: len(list(jobs.glob("*.snapshot"))) == 2, proc,
                             logs)
    payload = json.loads(_finish(proc, logs, lambda: (_files(out), _err(logs)))
                         .strip().splitlines()[-1])
    assert payload["final_return"]["n"] == 2
    results = sorted(out.glob("iql_3A-6T-5x3_seed*.json"))
    assert [p.name for p in results] == ["iql_3A-6T-5x3_seed0.json", "iql_3A-6T-5x3_seed1.json"]
    # the seed whose node was lost went on from its snapshot on the node left
    assert any(json.loads(p.read_text()).get("resumed_from_step") for p in results)
    clean = CliRunner().invoke(app, [*cmd, "--out", str(tmp_path / "clean"), "--executor",
                                     "local"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout.strip().splitlines()[-1])["final_return"] == \
        payload["final_return"]
    rerun = CliRunner().invoke(app, [*cmd, "--out", str(out), "--executor", "local"])
    assert rerun.exit_code == 0
    assert [p.stat().st_mtime_ns for p in results] == \
        [p.stat().st_mtime_ns for p in sorted(out.glob("iql_3A-6T-5x3_seed*.json"))]


class _FakeRay:
    """Just enough of Ray's task API for the executor's map: tasks listed in `lose` fail as
    lost with their node (after Ray's retries); with `cpus` 0 nothing ever finishes."""

    class exceptions:  # noqa: N801 (Ray's module name)
        class RayError(Exception):
            pass

        class RayTaskError(RayError):
            pass

        class NodeDiedError(RayError):
            pass

    def __init__(self, lose=(), cpus=2):
        self.lose, self.cpus, self.cancelled = set(lose), cpus, []

    def remote(self, **options):
        return lambda fn: type("Remote", (), {"remote": staticmethod(lambda item: (fn, item))})

    def wait(self, pending, num_returns, timeout):
        if not self.cpus:
            time.sleep(timeout)
            return [], pending
        return pending[:1], pending[1:]

    def get(self, ref):
        fn, item = ref
        if item in self.lose:
            raise self.exceptions.NodeDiedError(f"Task failed because the node died ({item})")
        return fn(item)

    def cluster_resources(self):
        return {"CPU": self.cpus}

    def cancel(self, ref, force):
        self.cancelled.append(ref)


def _fake_executor(fake):
    from coordbench.runner.executors import RayExecutor

    ex = RayExecutor(2)
    ex._ray, ex._remote = fake, {}
    return ex


def test_units_lost_for_good_stop_the_map_in_one_line_after_the_rest_came_back():
    from coordbench.runner import executors

    got = []
    with pytest.raises(executors.WorkersLost, match=r"1 work unit\(s\) were lost .* "
                       r"after 3 retries \(last: NodeDiedError: Task failed because the "
                       r"node died \(-2\)\)"):
        # 4 places (2 workers, 2 CPUs): -1..-4 start, -5 when -1 ends, then -2 is lost
        for x in _fake_executor(_FakeRay(lose={-2})).map(abs, range(-1, -9, -1)):
            got.append(x)
    assert got == [1, 3, 4, 5]  # the units under way came back; none started after the loss


def test_a_cluster_left_without_a_cpu_stops_in_one_line(monkeypatch):
    from coordbench.runner import executors

    monkeypatch.setattr(executors, "NO_CPU_WAIT_S", 0.2)
    monkeypatch.setattr(executors, "WAIT_S", 0.05)
    fake = _FakeRay(cpus=0)
    with pytest.raises(executors.WorkersLost, match="no CPU for 0.2 s with 2 units under way"):
        list(_fake_executor(fake).map(abs, [-1, -2]))
    assert len(fake.cancelled) == 2
