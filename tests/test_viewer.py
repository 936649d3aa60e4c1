"""The episode viewer: listing, replayed states, the JSON API, export, bad input, the CLI."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import psutil
import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import HouseholdStepEvent, StatStepEvent, Trajectory
from coordbench.metrics.profile import episode_profile
from coordbench.suites.physical.replay import recorded_poses
from coordbench.viewer import index, replay, timeline
from coordbench.viewer.server import make_server, url_of
from tests import viewer_runs

runner = CliRunner()


# one worker reads the shared small runs (built once per test process)
pytestmark = pytest.mark.xdist_group("small_runs")


@pytest.fixture(scope="module")
def runs(small_runs) -> dict:
    return small_runs


@pytest.fixture()
def served(runs):
    """The viewer on the good run, serving in a thread; stopped afterwards."""
    server, viewer = make_server(runs["run"], 0)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    yield url_of(server), server
    server.shutdown()
    server.server_close()
    viewer.metrics.close()
    th.join(timeout=10)


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


# -- replay reproduces the record --------------------------------------------------------------
@pytest.mark.parametrize("family", ["stat", "mecobench", "constructs", "constructs_d4", "llm"])
def test_replay_reproduces_the_recorded_outcomes(runs, family):
    rd = RunDir.open(runs["run"])
    cond = runs["conds"][family]
    keys = rd.episode_keys(cond)
    assert keys
    for key in keys:
        tr = rd.load_episode(cond, key)
        pic = replay.picture(rd, cond, tr)
        rp = pic["replay"]
        assert rp["available"] and rp["ok"], rp
        steps = tr.steps(StatStepEvent) or tr.steps(HouseholdStepEvent)
        assert rp["checked"] > 0 and len(pic["states"]) == len(steps) + 1
        last = pic["states"][-1]
        if family == "stat":
            # the recorded success is every task completed in the replayed state
            assert all(last["completed"]) == tr.end.success
            assert len(last["pos"]) == tr.header.params["agents"]
        else:
            assert last["completion"] == pytest.approx(steps[-1].completion)
            assert last["satisfied"] == steps[-1].satisfied


def test_construct_pictures_show_the_knife_owner_and_buffers(runs):
    rd = RunDir.open(runs["run"])
    d3 = runs["conds"]["constructs"]
    tr = rd.load_episode(d3, rd.episode_keys(d3)[0])
    pic = replay.picture(rd, d3, tr)
    knife = pic["static"]["construct"]["knife"]
    assert any("knife" in n["tags"] for n in pic["static"]["nodes"] if n["id"] == knife)
    grabs = [(e.t, a.agent) for e in tr.steps(HouseholdStepEvent) for a in e.actions
             if a.action == "grab" and a.args.get("obj") == knife and a.outcome == "ok"]
    assert grabs, "the D3 episode never takes the knife"
    t, agent = grabs[0]
    assert pic["states"][t + 1]["knife_owner"] == agent
    d4 = runs["conds"]["constructs_d4"]
    tr = rd.load_episode(d4, rd.episode_keys(d4)[0])
    pic = replay.picture(rd, d4, tr)
    assert pic["static"]["buffers"]
    for e, state in zip(tr.steps(HouseholdStepEvent), pic["states"][1:], strict=True):
        assert state["buffers"] == {k: v for k, v in e.buffers.items()}


def test_a_tampered_record_is_caught_by_the_replay(runs):
    rd = RunDir.open(runs["run"])
    cond = runs["conds"]["mecobench"]
    tr = rd.load_episode(cond, runs["keys"]["mecobench"][0])
    steps = tr.steps(HouseholdStepEvent)
    first = steps[0]
    bad_action = first.actions[0].model_copy(update={"outcome": "too_far"})
    bad_step = first.model_copy(update={"actions": [bad_action, *first.actions[1:]]})
    events = [bad_step if e is first else e for e in tr.events]
    rp = replay.picture(rd, cond, tr.model_copy(update={"events": events}))["replay"]
    assert rp["available"] and not rp["ok"]
    assert "step 0, agent 0" in rp["mismatch"] and "recorded too_far" in rp["mismatch"]
    stat = runs["conds"]["stat"]
    tr = rd.load_episode(stat, "ep00000")
    e0 = tr.steps(StatStepEvent)[0]
    events = [e0.model_copy(update={"rewards": [5.0] * len(e0.rewards)}), *tr.events[1:]]
    rp = replay.picture(rd, stat, tr.model_copy(update={"events": events}))["replay"]
    assert not rp["ok"] and "rewards" in rp["mismatch"]


def test_no_replay_without_what_it_needs_says_why(runs):
    rd = RunDir.open(runs["run"])
    stat = runs["conds"]["stat"]
    tr = rd.load_episode(stat, "ep00000")
    params = {k: v for k, v in tr.header.params.items() if k != "task_positions"}
    tr = tr.model_copy(update={"header": tr.header.model_copy(update={"params": params})})
    pic = replay.picture(rd, stat, tr)
    assert not pic["replay"]["available"] and "task positions" in pic["replay"]["reason"]
    # a household condition whose task file is gone
    cond = runs["conds"]["mecobench"]
    tr = rd.load_episode(cond, runs["keys"]["mecobench"][0])
    moved = RunDir(rd.path, {**rd.manifest, "conditions": {cond: {
        **rd.conditions[cond], "instance_set": None, "source": "x",
        "tasks_file": str(rd.path / "gone.json")}}})
    pic = replay.picture(moved, cond, tr)
    assert not pic["replay"]["available"] and "gone.json" in pic["replay"]["reason"]


def _old_physical(tr):
    """The same episode as written before trajectory schema 1.5: no physical_poses line."""
    lines = [ln for ln in tr.to_jsonl().splitlines() if '"physical_poses"' not in ln]
    head = json.loads(lines[0])
    head["schema_version"] = "1.4"
    return Trajectory.from_jsonl("\n".join([json.dumps(head), *lines[1:]]))


def test_physical_picture_draws_the_recorded_poses_sample_by_sample(runs):
    import mujoco

    from coordbench.envs.physical import poses as pose
    from coordbench.envs.physical.env import PhysicalEnv
    from coordbench.envs.physical.tasks import get_task

    rd = RunDir.open(runs["run"])
    cond = runs["conds"]["physical"]
    tr = rd.load_episode(cond, "seed0001")
    rec = recorded_poses(tr)
    pic = replay.picture(rd, cond, tr)
    st = pic["static"]
    assert pic["kind"] == "physical" and pic["replay"]["available"] and pic["replay"]["recorded"]
    # one state per recorded sample: the slider's positions; steps map them to control steps
    assert st["poses"]["steps"] == rec.steps.tolist() and len(pic["states"]) == len(rec)
    assert st["poses"]["steps"][-1] == tr.end.t and st["poses"]["bodies"] == list(rec.bodies)
    x0, x1, y0, y1 = st["poses"]["extent"]
    for k, s in enumerate(pic["states"]):
        assert s["step"] == rec.steps[k] and len(s["robots"]) == len(tr.header.team) == 2
        for r, (x, y, yaw, hx, hy, _hz, grip) in enumerate(s["robots"]):
            assert (x, y, yaw) == pytest.approx(rec.robots[k, r, :3], abs=6e-4)
            assert x0 < min(x, hx) and max(x, hx) < x1 and y0 < min(y, hy) and max(y, hy) < y1
            assert 0 <= grip <= 1
        for b, name in enumerate(st["poses"]["bodies"]):
            assert s["bodies"][b][:3] == pytest.approx(rec.bodies[name][k, :3], abs=6e-4)
    # the hand drawn from the joints is where MuJoCo puts it in the recorded configuration
    env = PhysicalEnv(get_task(tr.header.task_id))
    env.reset(tr.header.seed)
    lay = pose.pose_layout(env)
    for k in (0, len(rec) // 2, len(rec) - 1):
        pose.apply(env.model, env.data, lay, rec.robots[k],
                   np.array([b[k] for b in rec.bodies.values()]),
                   np.array([j[k] for j in rec.joints.values()]))
        for r in range(env.n):
            hand = env.data.xpos[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY,
                                                   f"r{r}_hand")]
            assert pic["states"][k]["robots"][r][3:6] == pytest.approx(hand, abs=2e-3)
    # the phases and coupling events are still there; the page gets the video command
    assert [p["phase"] for p in st["latched"]] == [1, 2, 3] and st["coupling"]
    assert st["render"] == (f"coordbench physical render {rd.path} --episode {cond}/seed0001 "
                            "--out Handover_seed0001.mp4")
    assert len(json.dumps(pic)) < 40_000  # 86 samples of two robots and a bottle


def test_physical_picture_of_an_episode_without_poses_is_the_phase_timeline(runs):
    rd = RunDir.open(runs["run"])
    cond = runs["conds"]["physical"]
    tr = rd.load_episode(cond, "seed0001")
    pic = replay.picture(rd, cond, _old_physical(tr))
    assert pic["kind"] == "physical" and pic["states"] == []
    assert not pic["replay"]["available"] and not pic["replay"]["recorded"]
    assert "schema 1.4" in pic["replay"]["reason"] and "1.5" in pic["replay"]["reason"]
    st = pic["static"]
    assert st["poses"] is None and st["render"] is None and st["goals"] is None
    assert [p["phase"] for p in st["latched"]] == [1, 2, 3]


def test_timeline_holds_model_calls_as_recorded(runs):
    rd = RunDir.open(runs["run"])
    cond = runs["conds"]["llm"]
    tr = rd.load_episode(cond, rd.episode_keys(cond)[0])
    tl = timeline.build(tr)
    assert tl["calls"] and tl["messages"]
    call = tl["calls"][0]
    for k in ("reply", "parse_status", "prompt_tokens", "completion_tokens", "latency_s"):
        assert k in call
    # the prompts come with the episode's payload, as the run keeps them (by request hash)
    from coordbench.viewer.episode import payload

    prompts = payload(rd, cond, rd.episode_keys(cond)[0])["prompts"]
    assert set(prompts) == {c["request_hash"] for c in tl["calls"]}
    first = prompts[call["request_hash"]]
    assert first["model"] == "scripted-1" and first["messages"][0]["role"] == "system"
    assert {c["agent"] for c in tl["cells"]} == {0, 1}
    assert any(c["code"] == "protocol_failure" for c in tl["cells"])  # the script fails


def test_agent_views_are_served_and_inlined_in_exports(runs, served, tmp_path):
    url, _ = served
    rd = RunDir.open(runs["run"])
    cond = runs["conds"]["mecobench"]
    key = rd.episode_keys(cond)[0]
    team = timeline.build(rd.load_episode(cond, key))["team"]
    sha = team[0]["images"]["agent_0"]
    with urllib.request.urlopen(f"{url}api/image?run={runs['run'].name}&sha={sha}") as r:
        assert r.headers["Content-Type"] == "image/png"
        assert r.read() == (runs["run"] / "images" / f"{sha}.png").read_bytes()
    for bad in ("../manifest", "0" * 64):
        assert get(f"{url}api/image?run={runs['run'].name}&sha={bad}")[0] == 404
    out = tmp_path / "ep.html"
    res = runner.invoke(app, ["view", str(runs["run"]), "--episode", f"{cond}/{key}",
                              "--export", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    views = {h for t in team for h in t["images"].values()}
    assert text.count("data:image/png;base64,") == len(views)


# -- listing -----------------------------------------------------------------------------------
def test_listing_reads_only_first_and_last_lines(runs):
    rd = RunDir.open(runs["run"])
    rows = index.condition_rows(rd, runs["conds"]["stat"])
    assert [r.key for r in rows] == ["ep00000", "ep00001", "ep00002"]
    assert all(r.status == "ok" and r.termination == "success" and r.steps for r in rows)
    conds = {c["name"]: c for c in index.conditions(rd)}
    assert conds[runs["conds"]["physical"]]["suite"] == "physical"


def test_a_damaged_run_still_opens_and_lists_each_bad_episode_with_its_reason(runs):
    rd = RunDir.open(runs["bad"])
    rows = {r.key: r for r in index.condition_rows(rd, viewer_runs.STAT)}
    assert rows["ep00000"].status == "bad" and "truncated" in rows["ep00000"].problem
    assert rows["ep00001"].status == "missing"
    assert rows["ep00002"].status == "ok"
    assert rows["ep00003"].status == "errored" and "provider" in rows["ep00003"].problem
    rows = {r.key: r for r in index.condition_rows(rd, viewer_runs.HOUSEHOLD)}
    broken = runs["keys"]["mecobench"][1]  # the one damage() made unreadable
    assert rows[broken].status == "bad" and "unreadable" in rows[broken].problem
    rows = {r.key: r for r in index.condition_rows(rd, viewer_runs.PHYSICAL)}
    assert rows["seed0002"].status == "damaged"


# -- the API -----------------------------------------------------------------------------------
def test_api_lists_runs_conditions_episodes_and_serves_one_episode(served, runs):
    url, server = served
    assert server.server_address[0] == "127.0.0.1"
    status, data = get(url + "api/runs")
    assert status == 200 and len(data["runs"]) == 1
    names = {c["name"] for c in data["runs"][0]["conditions"]}
    assert set(runs["conds"].values()) <= names
    run = data["runs"][0]["name"]
    for family in ("stat", "mecobench", "constructs", "physical", "llm"):
        cond = runs["conds"][family]
        status, listing = get(f"{url}api/episodes?run={run}&cond={cond}")
        assert status == 200 and listing["rows"] and listing["headline"]
        key = listing["rows"][0]["key"]
        status, ep = get(f"{url}api/episode?run={run}&cond={cond}&key={key}")
        assert status == 200 and ep["id"] == f"{cond}/{key}"
        assert ep["timeline"]["agents"] and ep["metrics"]
        # the episode's coordination profile, the same numbers `coordbench profile` averages
        traj = RunDir.open(runs["run"]).load_episode(cond, key)
        assert ep["profile"] == episode_profile(traj) and ep["profile_error"] is None
        assert ep["picture"]["kind"] in ("stat", "household", "constructs", "physical")
        if family != "physical":
            assert ep["picture"]["replay"]["ok"]
    cond = runs["conds"]["stat"]
    deadline = time.monotonic() + 60
    while True:
        status, m = get(f"{url}api/metrics?run={run}&cond={cond}")
        if m["done"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert m["done"] and set(m["metrics"]) == {"ep00000", "ep00001", "ep00002"}
    assert "return" in m["metrics"]["ep00000"]
    status, page = 0, None
    with urllib.request.urlopen(url, timeout=10) as r:
        status, page = r.status, r.read().decode()
    assert status == 200 and "/static/app.js" in page
    assert get(f"{url}api/episodes?run={run}&cond=nope")[0] == 404
    status, ep = get(f"{url}api/episode?run={run}&cond={cond}&key=..%2Fmanifest")
    assert status == 200 and "cannot store" in ep["unavailable"]


def test_api_on_a_damaged_run(runs):
    server, viewer = make_server(runs["bad"], 0)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    try:
        url = url_of(server)
        _, data = get(url + "api/runs")
        run = data["runs"][0]["name"]
        _, listing = get(f"{url}api/episodes?run={run}&cond={viewer_runs.STAT}")
        assert {r["key"]: r["status"] for r in listing["rows"]} == {
            "ep00000": "bad", "ep00001": "missing", "ep00002": "ok", "ep00003": "errored"}
        status, ep = get(f"{url}api/episode?run={run}&cond={viewer_runs.STAT}&key=ep00000")
        assert status == 200 and "no episode_end" in ep["unavailable"]
        status, ep = get(f"{url}api/episode?run={run}&cond={viewer_runs.HOUSEHOLD}"
                         f"&key={runs['keys']['mecobench'][1]}")
        assert status == 200 and "corrupt episode file" in ep["unavailable"]
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()


# -- export ------------------------------------------------------------------------------------
def test_export_writes_one_self_contained_file(runs, tmp_path):
    cond = runs["conds"]["mecobench"]
    key = runs["keys"]["mecobench"][0]
    out = tmp_path / "episode.html"
    res = runner.invoke(app, ["view", str(runs["run"]), "--episode", f"{cond}/{key}",
                              "--export", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert '<script id="cb-data" type="application/json">' in page
    # nothing is loaded from anywhere: no external script, stylesheet, image or fetch target
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', page)
    assert "/static/" not in page.split("<script>")[0]
    data = json.loads(page.split('<script id="cb-data" type="application/json">')[1]
                      .split("</script>")[0].replace("<\\/", "</"))
    assert data["episode"]["id"] == f"{cond}/{key}"
    # a key only one condition has is enough
    res = runner.invoke(app, ["view", str(runs["run"]), "--episode", "seed0001", "--export",
                              str(tmp_path / "p.html")])
    assert res.exit_code == 0, res.output


# -- the command line --------------------------------------------------------------------------
def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_view_listens_on_loopback_only(runs):
    proc = subprocess.Popen([sys.executable, "-m", "coordbench", "view", str(runs["run"]),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://([\d.]+):(\d+)/", line)
        assert m, line + proc.stderr.read()
        assert m.group(1) == "127.0.0.1"
        listening = [c for c in psutil.Process(proc.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening and all(c.laddr.ip == "127.0.0.1" for c in listening)
        status, data = get(f"http://127.0.0.1:{m.group(2)}/api/runs")
        assert status == 200 and data["runs"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_bad_input_is_one_line(runs, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = _cli("view", str(runs["run"]), "--port", str(port))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert f"port {port} on 127.0.0.1 is in use" in res.stderr
    res = _cli("view", str(tmp_path / "nowhere"))
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0
    assert "does not exist" in res.stderr
    f = tmp_path / "file.txt"
    f.write_text("x")
    res = _cli("view", str(f))
    assert res.returncode == 2 and "is not a directory" in res.stderr
    assert res.stderr.strip().count("\n") == 0


def test_export_errors_name_the_episode(runs, tmp_path):
    res = runner.invoke(app, ["view", str(runs["run"]), "--episode", "nope/ep00000",
                              "--export", str(tmp_path / "x.html")])
    assert res.exit_code != 0 and "no condition 'nope'" in str(res.exception)
    res = runner.invoke(app, ["view", str(runs["run"]), "--episode", "x"])
    assert res.exit_code != 0 and "go together" in str(res.exception)
    assert not Path(tmp_path / "x.html").exists()


def test_listing_is_read_again_when_an_episode_file_changes(runs, tmp_path):
    import shutil

    from coordbench.viewer.server import Viewer

    run = tmp_path / "copy"
    shutil.copytree(runs["run"], run)
    viewer = Viewer(run)
    try:
        first = viewer.episodes_payload("copy", viewer_runs.STAT)["rows"]
        assert viewer.episodes_payload("copy", viewer_runs.STAT)["rows"] is first  # cached
        (run / "episodes" / viewer_runs.STAT / "ep00001.jsonl").unlink()
        rows = viewer.episodes_payload("copy", viewer_runs.STAT)["rows"]
        assert {r["key"]: r["status"] for r in rows}["ep00001"] == "missing"
    finally:
        viewer.metrics.close()


def test_a_folder_of_runs_is_searched_a_few_levels_down(tmp_path):
    for rel in ("default", "stat-eval/3A-6T-5x3-greedy", "api/x/deep", "a/b/c/too-deep",
                "default/episodes/inner"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "manifest.json").write_text("{}")
    (tmp_path / "empty" / "nothing").mkdir(parents=True)
    found = index.find_runs(tmp_path)
    # runs are named by their path; a run's own folders are not searched; the depth is bounded
    assert set(found) == {"default", "stat-eval/3A-6T-5x3-greedy", "api/x/deep"}
    (tmp_path / "linked").symlink_to(tmp_path / "default", target_is_directory=True)
    assert "linked" in index.find_runs(tmp_path)  # a linked run is listed
    # a foreign manifest among real runs is left out, not the end of `view`
    out = tmp_path / "two"
    for name in ("good", "foreign"):
        (out / name).mkdir(parents=True)
    (out / "foreign" / "manifest.json").write_text("{}")
    from coordbench.core.rundir import RunDir

    RunDir.create_or_open(out / "good").save_manifest()
    assert set(index.open_runs(out)) == {"good"}


def test_an_episode_line_nested_past_the_parser_is_a_bad_file_not_a_crash(tmp_path):
    from coordbench.core.rundir import RunDir
    from coordbench.viewer import index as vindex

    run = RunDir.create_or_open(tmp_path / "r")
    run.register("c", {"suite": "stat"})
    run.save_manifest()
    folder = tmp_path / "r" / "episodes" / "c"
    folder.mkdir(parents=True, exist_ok=True)
    deep = "[" * 100_000 + "]" * 100_000
    (folder / "k.jsonl").write_text(deep + "\n" + deep + "\n")
    assert run.episode_problem("c", "k").startswith("unreadable")
    row = vindex.episode_row(run, "c", "k")
    assert row.status == "bad"
    huge = '{"kind": "header", "x": "' + "a" * (2 << 20) + '"}'
    (folder / "h.jsonl").write_text(huge + "\n")
    assert "header line over" in run.episode_problem("c", "h")


def test_the_viewer_revalidates_a_cached_episode_and_takes_a_burst(tmp_path):
    import os
    import threading
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from typer.testing import CliRunner

    from coordbench.cli import app
    from coordbench.viewer.server import make_server, url_of

    out = tmp_path / "r"
    res = CliRunner().invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                   "greedy", "--episodes", "2", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    server, viewer = make_server(out, 0)
    assert server.request_queue_size >= 128 and server.server_address[0] == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        (name,) = viewer.runs
        (cond,) = viewer.runs[name].conditions
        first = viewer.episode_bytes(name, cond, "ep00000")
        assert viewer.episode_bytes(name, cond, "ep00000") is first  # cached
        path = out / "episodes" / cond / "ep00000.jsonl"
        lines = path.read_text().splitlines()
        path.write_text("\n".join(lines[:-1]) + "\n")  # the file changes (here: truncated)
        os.utime(path, ns=(1, 1))
        again = viewer.episode_bytes(name, cond, "ep00000")
        assert again != first and b"unavailable" in again
        url = url_of(server) + "/api/runs"

        def get(_):
            with urllib.request.urlopen(url, timeout=20) as r:
                return r.status

        with ThreadPoolExecutor(50) as pool:  # a burst: every request answered
            assert list(pool.map(get, range(300))) == [200] * 300
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
        thread.join(timeout=10)


def test_a_damaged_episode_is_set_aside_and_replayed_with_a_word(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "coordbench", "stat", "eval", "--config", "3A-6T-5x3",
           "--policy", "greedy", "--episodes", "2", "--out", str(tmp_path / "r"), "--json"]
    assert subprocess.run(cmd, capture_output=True, timeout=300).returncode == 0
    (path,) = [p for p in (tmp_path / "r" / "episodes").rglob("ep00001.jsonl")]
    path.write_text(path.read_text()[:200])  # a damaged file
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "1 damaged episode file(s) moved to" in res.stderr and "ep00001" in res.stderr
    assert list((tmp_path / "r" / "damaged").rglob("ep00001.jsonl"))  # kept, not deleted


def test_a_condition_name_too_long_to_store_leaves_its_run_out_not_the_folder(tmp_path):
    """A manifest whose condition name is over the run directory's limit (200 characters)
    is refused where the run is opened; in a folder of runs the viewer leaves that run out
    and serves the others (no 500), and registering such a name is one line."""
    from coordbench.errors import RunDirError

    good, bad = tmp_path / "runs" / "good", tmp_path / "runs" / "bad"
    for out in (good, bad):
        res = CliRunner().invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                       "greedy", "--episodes", "2", "--out", str(out),
                                       "--json"])
        assert res.exit_code == 0, res.output
    manifest = json.loads((bad / "manifest.json").read_text())
    (cond,) = manifest["conditions"]
    long = "x" * 300
    manifest["conditions"] = {long: manifest["conditions"][cond]}
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDirError, match="is not a name a run directory stores"):
        RunDir.open(bad)
    server, viewer = make_server(tmp_path / "runs", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, body = get(f"{url_of(server)}/api/runs")
        assert status == 200 and [r["name"] for r in body["runs"]] == ["good"]
        status, body = get(f"{url_of(server)}/api/metrics?run=good&cond={cond}")
        assert status == 200
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
    with pytest.raises(RunDirError, match="has 300 characters"):
        RunDir.open(good).register(long, {"suite": "stat"})


def test_an_episode_with_an_unknown_event_inside_is_listed_bad_once_found(tmp_path):
    """The listing reads first and last lines only; an episode whose middle line is an
    unknown event is listed bad as soon as opening it (or the metrics) finds it unreadable."""
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                   "greedy", "--episodes", "2", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    path = rd.episode_path(cond, "ep00001")
    lines = path.read_text().splitlines()
    lines[2] = json.dumps({"type": "teleport", "t": 0})
    path.write_text("\n".join(lines) + "\n")
    server, viewer = make_server(out, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = url_of(server)
    try:
        listing = f"{base}/api/episodes?run=run&cond={cond}"
        status, ep = get(f"{base}/api/episode?run=run&cond={cond}&key=ep00001")
        assert status == 200 and "unavailable" in ep
        rows = {r["key"]: r for r in get(listing)[1]["rows"]}
        assert rows["ep00001"]["status"] == "bad" and rows["ep00001"]["problem"]
        assert rows["ep00000"]["status"] == "ok"
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
