"""The job engine (runner/jobs.py) and resumable training: finished jobs are skipped, files
land atomically with the `done` file last, and a training killed mid-run continues from its
last snapshot to exactly the result an uninterrupted run gives, on every executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from coordbench.runner.jobs import SNAPSHOTS, Job, JobContext, JobOutput, run_jobs


def _square(arg: int, ctx: JobContext) -> JobOutput:
    prior = ctx.resume()
    ctx.save(b"half")  # a long job would save its progress as it goes
    return JobOutput({f"sq{arg}.txt": str(arg * arg).encode(),
                      f"sq{arg}.done": (prior or b"fresh")}, arg * arg)


def test_run_jobs_skips_done_jobs_writes_done_last_and_drops_snapshots(tmp_path):
    jobs = [Job(f"sq{k}", f"sq{k}.done", _square, k) for k in range(3)]
    seen = []
    ran = run_jobs(tmp_path, jobs, on_done=lambda j, o: seen.append((j.key, o.value)))
    assert [j.key for j in ran] == ["sq0", "sq1", "sq2"] and seen[1] == ("sq1", 1)
    assert (tmp_path / "sq2.txt").read_text() == "4"
    assert not (tmp_path / SNAPSHOTS).exists()  # snapshots go once their job is done
    assert run_jobs(tmp_path, jobs) == []  # a rerun runs nothing
    # a job left half done by a killed run finds its snapshot
    JobContext(str(tmp_path), "sq7").save(b"from the snapshot")
    run_jobs(tmp_path, [Job("sq7", "sq7.done", _square, 7)])
    assert (tmp_path / "sq7.done").read_bytes() == b"from the snapshot"
    # redo: run again although done (what it made is out of date)
    (tmp_path / "sq0.txt").write_text("stale")
    assert len(run_jobs(tmp_path, [Job("sq0", "sq0.done", _square, 0, redo=True)])) == 1
    assert (tmp_path / "sq0.txt").read_text() == "0"
    with pytest.raises(ValueError, match="distinct"):
        run_jobs(tmp_path, [jobs[0], jobs[0]])


class _Killed(Exception):
    pass


class _Store:
    """A snapshot store that 'kills' the run right after its k-th snapshot."""

    every_s = 0.0

    def __init__(self, kill_after: int | None) -> None:
        self.blob, self.saves, self.kill_after = None, 0, kill_after

    def resume(self):
        return self.blob

    def save(self, blob: bytes) -> None:
        self.blob, self.saves = blob, self.saves + 1
        if self.kill_after is not None and self.saves >= self.kill_after:
            raise _Killed


@pytest.mark.parametrize("algo,kill", [("qmix", 70), ("mappo", 3), ("coma", 12)])
def test_a_killed_stat_training_resumes_to_the_uninterrupted_result(algo, kill):
    from coordbench.learn.methods import checkpoint_bytes, make, train, train_configs

    tc = train_configs("3A-6T-10x6", algo, [0], steps=2560, eval_every=640, eval_episodes=4,
                       num_envs=32 if algo != "coma" else 8)[0]
    whole = make(tc)
    expected = train(tc, whole)
    store = _Store(kill)
    with pytest.raises(_Killed):
        train(tc, make(tc), snapshots=store)
    store.kill_after = None
    method = make(tc)
    got = train(tc, method, snapshots=store)
    assert got["resumed_from_step"] > 0
    assert [c["return"] for c in got["curve"]] == [c["return"] for c in expected["curve"]]
    assert got["updates"] == expected["updates"] and got["updates"] > 0
    assert checkpoint_bytes(tc, method) == checkpoint_bytes(tc, whole)


def test_a_killed_construct_training_resumes_to_the_uninterrupted_result():
    import torch

    from coordbench.learn import menu_ppo
    from coordbench.suites.constructs.learning import family

    train_eps, test_eps = family("D1", 2)
    cfg = menu_ppo.MenuPPOConfig(steps=2000, seed=0, eval_every=1000)
    net, expected = menu_ppo.train(cfg, train_eps, test_eps, 2)
    store = _Store(3)
    with pytest.raises(_Killed):
        menu_ppo.train(cfg, train_eps, test_eps, 2, snapshots=store)
    store.kill_after = None
    got_net, got = menu_ppo.train(cfg, train_eps, test_eps, 2, snapshots=store)
    assert [(r["success"], r["completion"]) for r in got["curve"]] == \
        [(r["success"], r["completion"]) for r in expected["curve"]]
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(),
                                                 got_net.state_dict().values(), strict=True))


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    from coordbench.suites.physical.demos import make_demos

    out = tmp_path_factory.mktemp("demos")
    make_demos("CoCarry", 3, out)
    return out


@pytest.mark.parametrize("kill", [5, 27])  # in the first fit; in the DAgger round's fit
def test_a_killed_imitation_training_resumes_to_the_uninterrupted_result(demos, kill):
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.learn.imitation import default_config
    from coordbench.suites.physical.learning import fit_on

    cfg = default_config("CoCarry", "act", 2, steps=12, batch=8, hidden=16, dagger=1,
                         dagger_episodes=2, dagger_steps=6)
    data = load_demos(demos / "CoCarry_train.npz")
    expected, blob = fit_on(cfg, data, None)
    store = _Store(kill)
    with pytest.raises(_Killed):
        fit_on(cfg, data, None, store)
    store.kill_after = None
    got, got_blob = fit_on(cfg, data, None, store)
    assert got["resumed_from"][0] == (0 if kill < 24 else 1)
    assert got_blob == blob and got["train_loss"] == expected["train_loss"]
    assert got["dagger_rounds"] == expected["dagger_rounds"]


def _cli(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "coordbench", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill the command and everything it started (pool workers, a local Ray instance)."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    psutil.wait_procs(family, timeout=30)


def _kill_after_snapshots(proc: subprocess.Popen, snapshots: Path, writes: int = 3,
                          timeout_s: float = 240) -> None:
    """Kill `proc` once its snapshot file has been written `writes` times (bounded wait)."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while len(seen) < writes:
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "no snapshot appeared"
        for f in snapshots.glob("*.snapshot"):
            try:
                seen.add(f.stat().st_mtime_ns)
            except OSError:
                pass
        time.sleep(0.05)
    _kill_tree(proc)


EXECUTORS = ["local", "process", pytest.param("ray", marks=pytest.mark.xdist_group("ray"))]
STAT_ARGS = ["stat", "train", "--config", "3A-6T-10x6", "--algo", "qmix", "--seeds", "0",
             "--steps", "9600", "--eval-every", "1600", "--eval-episodes", "4", "--json"]
STAT_RESULT = "qmix_3A-6T-10x6_seed0"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "coordbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})
    return done


@pytest.fixture(scope="module")
def stat_reference(tmp_path_factory):
    """An uninterrupted sweep (results do not depend on the executor: tested elsewhere)."""
    out = tmp_path_factory.mktemp("stat_whole")
    done = _run(*STAT_ARGS, "--out", str(out), cwd=out)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / f"{STAT_RESULT}.json").read_text()), \
        (out / f"{STAT_RESULT}.pt").read_bytes()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_killed_stat_train_sweep_resumes_on_every_executor(tmp_path, executor,
                                                             stat_reference):
    args = [*STAT_ARGS, "--snapshot-every", "0.2", "--executor", executor, "--out",
            str(tmp_path / "run")]
    proc = _cli(*args, cwd=tmp_path)
    _kill_after_snapshots(proc, tmp_path / "run" / SNAPSHOTS)
    result = tmp_path / "run" / f"{STAT_RESULT}.json"
    assert not result.exists() and list((tmp_path / "run" / SNAPSHOTS).glob("*.snapshot"))
    done = _run(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = json.loads(result.read_text())
    expected, ckpt = stat_reference
    assert resumed["resumed_from_step"] > 0
    assert not (tmp_path / "run" / SNAPSHOTS).exists()
    assert [c["return"] for c in resumed["curve"]] == [c["return"] for c in expected["curve"]]
    assert resumed["updates"] == expected["updates"]
    assert (tmp_path / "run" / f"{STAT_RESULT}.pt").read_bytes() == ckpt


PHYS_ARGS = ["physical", "train", "--task", "CoCarry", "--algo", "bc", "--steps", "3000",
             "--batch", "8", "--rollouts", "0", "--json"]


@pytest.fixture(scope="module")
def physical_reference(tmp_path_factory, demos):
    out = tmp_path_factory.mktemp("physical_whole") / "cocarry.pt"
    done = _run(*PHYS_ARGS, "--demos", str(demos), "--out", str(out), cwd=out.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout), out.read_bytes()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_killed_physical_train_resumes_on_every_executor(tmp_path, demos, executor,
                                                           physical_reference):
    ckpt = tmp_path / "run" / "cocarry.pt"
    args = [*PHYS_ARGS, "--demos", str(demos), "--snapshot-every", "0.2", "--executor",
            executor, "--out", str(ckpt)]
    proc = _cli(*args, cwd=tmp_path)
    _kill_after_snapshots(proc, ckpt.parent / SNAPSHOTS)
    assert not ckpt.exists()
    done = _run(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = json.loads(done.stdout)
    expected, blob = physical_reference
    assert resumed["resumed_from"][1:] != [0, 0]
    assert ckpt.read_bytes() == blob and resumed["train_loss"] == expected["train_loss"]
    if executor != "local":
        return
    # a rerun trains nothing; other settings in the same place are refused in one line
    again = _run(*args, cwd=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["train_loss"] == \
        resumed["train_loss"]
    bad = _run(*[a if a != "3000" else "2999" for a in args], cwd=tmp_path)
    assert bad.returncode == 2 and "trained with other settings (steps)" in bad.stderr
    assert "Traceback" not in bad.stderr and ckpt.read_bytes() == blob


def test_a_fit_reports_its_own_losses_after_dagger_stages(demos):
    """train_loss is the last fit's (as before snapshots): a new stage starts its losses."""
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.learn.imitation import Trainer, default_config

    cfg = default_config("CoCarry", "bc", 2, steps=2, batch=8, hidden=16)
    trainer = Trainer(cfg, load_demos(demos / "CoCarry_train.npz"))
    trainer.fit(2)
    first = list(trainer.losses)
    trainer.fit(2, stage=1)
    assert len(first) == len(trainer.losses) == 2 and trainer.position == [2, 0, 0]
    trainer.fit(2, stage=1)  # a stage already done is skipped
    assert trainer.position == [2, 0, 0]


def test_a_policy_trained_on_other_demonstrations_is_refused_not_kept(tmp_path, demos):
    from coordbench.errors import ConfigError
    from coordbench.learn.imitation import default_config
    from coordbench.suites.physical.learning import train_jobs

    cfg = default_config("CoCarry", "bc", 2, steps=2)
    (tmp_path / "p.json").write_text(json.dumps({"config": json.loads(json.dumps(
        __import__("dataclasses").asdict(cfg))), "demos_digest": "0123456789abcdef"}))
    with pytest.raises(ConfigError, match="trained on other demonstrations"):
        train_jobs(tmp_path, [(cfg, "p.pt")], demos)
    (tmp_path / "p.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="is not a training result"):
        train_jobs(tmp_path, [(cfg, "p.pt")], demos)
