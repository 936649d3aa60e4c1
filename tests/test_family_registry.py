"""One record per family: a toy family registered by one `Family` and no other edit runs
through `coordbench run`, `report`, the viewer's API, `profile`, `load_run`, the API and its
own command group; every dispatch table of coordbench iterates the registry."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest
from typer.testing import CliRunner

from coordbench.runner.family import families, family, register, suite_object, unregister
from tests import toy_family


@pytest.fixture
def toy():
    register(toy_family.FAMILY)
    yield toy_family.FAMILY
    unregister("toy")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def test_the_built_in_families_are_records_with_every_piece_loadable():
    names = [f.name for f in families()]
    assert names[:5] == ["stat", "mecobench", "constructs", "physical", "stat_train"]
    pieces = ("suite", "plan", "condition", "report", "figures", "replay", "warm", "profile",
              "commands", "counterfactual")
    for f in families():
        for piece in pieces:
            if getattr(f, piece) is not None:
                assert f.get(piece) is not None, (f.name, piece)
    assert suite_object("mecobench").name == "mecobench"
    assert family("stat_train").headline_metrics() == ("final_return", "max_return")
    assert family("nope") is None and suite_object("stat_train") is None


def test_a_toy_family_runs_through_every_layer_from_one_record(toy, tmp_path):
    import coordbench
    from coordbench.cli import add_family_commands, app
    from coordbench.report.profile_table import collect
    from coordbench.viewer.server import make_server, url_of

    add_family_commands()
    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--families", "toy", "--out", str(out)])
    assert res.exit_code == 0, res.output
    # tokens 5 and 8 (+ the case number), 3 episodes each: 2 agents, agent 1 rests 1 in 3
    results = json.loads((out / "results.json").read_text())["conditions"]
    assert set(results) == {"toy_t5_c10", "toy_t8_c10"}
    assert results["toy_t5_c10"]["suite"] == "toy"
    assert results["toy_t5_c10"]["metrics"]["success"]["mean"] == 1.0
    assert results["toy_t5_c10"]["metrics"]["steps"]["mean"] == pytest.approx((3 + 4 + 4) / 3)
    # pile 10 needs 6 steps at most; pile 8..10 all finish within the cap of 10 steps
    assert results["toy_t8_c10"]["metrics"]["success"]["n"] == 3
    assert "## Toy tokens" in (out / "report.md").read_text()
    assert "<svg" in (out / "report.html").read_text()  # the family's figures

    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0 and json.loads((out / "results.json").read_text())[
        "conditions"] == results

    run = coordbench.load_run(out)
    episodes = run.episodes()
    assert len(episodes) == 6 and set(episodes["suite"]) == {"toy"}
    assert sorted(episodes["steps"])[:3] == [3.0, 4.0, 4.0]
    prof = run.profile()
    assert len(prof) == 6 and prof["division_of_labour"].between(0.5, 1.0).all()

    from coordbench.core.rundir import RunDir

    table = collect([RunDir.open(out)])
    assert {r["condition"] for r in table.rows} == {"toy_t5_c10", "toy_t8_c10"}

    server, _ = make_server(out, 0)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    try:
        url = url_of(server)
        run_name = _get(url + "api/runs")["runs"][0]["name"]
        listing = _get(f"{url}api/episodes?run={run_name}&cond=toy_t5_c10")
        assert listing["headline"] == ["success", "steps"]
        ep = _get(f"{url}api/episode?run={run_name}&cond=toy_t5_c10&key=ep000")
        assert ep["picture"]["kind"] == "toy" and ep["picture"]["replay"]["ok"]
        assert [s["pile"] for s in ep["picture"]["states"]] == [5, 3, 1, 0]
        assert ep["profile"]["division_of_labour"] == pytest.approx(3 / 5)
        assert ep["metrics"]["steps"] == 3.0
    finally:
        server.shutdown()
        server.server_close()

    summary = coordbench.evaluate("toy", out=tmp_path / "api", tokens=4, episodes=2)
    assert summary["metrics"]["success"]["n"] == 2
    res = runner.invoke(app, ["toy", "count", "--tokens", "4"])
    assert res.exit_code == 0 and res.output.strip() == "2"


def test_unknown_families_are_one_line_errors(tmp_path):
    from coordbench.cli import app

    res = CliRunner().invoke(app, ["run", "--families", "nope", "--out", str(tmp_path / "r")])
    assert res.exit_code != 0 and "unknown family nope" in str(res.exception)
    res = CliRunner().invoke(app, ["run", "--families", "mecobench", "--no-household",
                                   "--out", str(tmp_path / "r")])
    assert res.exit_code != 0 and "leave nothing to run" in str(res.exception)
    assert not (tmp_path / "r").exists()
    import coordbench
    from coordbench.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown suite 'nope'"):
        coordbench.evaluate("nope", out=tmp_path / "x")


def test_every_team_factory_builds_a_runner_team():
    """`runner.Team` is the contract the household episode and the physical runner drive:
    each family's team factory returns an object with `name`, `reset` and `act`."""
    from coordbench.agents.physical.expert import ExpertPolicy
    from coordbench.envs.household.engine import HouseholdEnv
    from coordbench.envs.household.task import load_tasks
    from coordbench.runner import Team
    from coordbench.suites.constructs.episode import (
        ConstructSpec,
        InstanceTeam,
        make_team,
    )
    from coordbench.suites.household_episode import HouseholdTeam
    from coordbench.suites.mecobench.episode import HouseholdSpec, make_case_team
    from coordbench.suites.mecobench.instances import PARALLEL_EXAMPLES

    task = load_tasks(PARALLEL_EXAMPLES)[0]
    env = HouseholdEnv(task, 2, 0)
    teams = [ExpertPolicy(0.0)]
    for agents in ("oracle", "rule"):
        teams.append(make_case_team(env, task, HouseholdSpec("parallel", 2, agents=agents), 0,
                                    5))
    for planner in ("central", "decentralized", "decentralized_comm"):
        teams.append(InstanceTeam(make_team(ConstructSpec(planner, "rule")), 2, 10, "index"))
    for team in teams:
        assert isinstance(team, Team), type(team).__name__
    assert all(isinstance(t, HouseholdTeam) for t in teams[1:])


def test_a_package_registers_a_family_through_its_entry_point(tmp_path, monkeypatch):
    """A family outside coordbench needs no edit of coordbench: an installed distribution
    names its record in the entry-point group `coordbench.families`."""
    import sys

    from coordbench.runner import family as registry

    dist = tmp_path / "toyplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[coordbench.families]\ntoy = tests.toy_family:FAMILY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_entry_points_read", False)
    try:
        assert registry.family("toy") is toy_family.FAMILY
        assert registry.suite_object("toy") is toy_family.SUITE
        (dist / "entry_points.txt").write_text(
            "[coordbench.families]\nbroken = tests.no_such_module:FAMILY\n")
        monkeypatch.setattr(registry, "_entry_points_read", False)
        with pytest.raises(Exception, match="entry point 'broken'.*cannot be loaded"):
            registry.families()
        with pytest.raises(Exception, match="entry point 'broken'"):  # every time, not once
            registry.family("stat")
        # the command line says it in one line, whatever the command
        import subprocess

        env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}"}
        res = subprocess.run([sys.executable, "-m", "coordbench", "version"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and "Traceback" not in res.stderr
        assert "entry point 'broken'" in res.stderr
    finally:
        unregister("toy")
        monkeypatch.setattr(registry, "_entry_points_read", True)
    assert "tests.toy_family" in sys.modules


def test_the_toy_family_gets_run_crossplay_and_play_from_its_record(toy, tmp_path,
                                                                    monkeypatch):
    """The toy's record alone (options, seats, summary) gives it `toy run`, a crossplay
    matrix and a seat a person plays through the page's API; no file outside its own
    changes."""
    import http.client
    import time

    import coordbench.play.server as play_server
    from coordbench.cli import add_family_commands, app

    add_family_commands()
    runner = CliRunner()
    res = runner.invoke(app, ["toy", "run", "--tokens", "5", "--episodes", "2", "--out",
                              str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["success"]["mean"] == 1.0  # piles 5 and 6 take 3 and 4 steps
    assert got["steps"]["mean"] == pytest.approx(3.5)
    from tests.cli_errors import error_line

    assert "--tokens must be >= 1" in error_line(["toy", "run", "--tokens", "0", "--out", "b"],
                                                 tmp_path)
    assert not (tmp_path / "b").exists()

    # a cell of two partners: greedy + greedy takes 2 a step, rule + rule rests every third
    res = runner.invoke(app, ["crossplay", "toy", "--partner", "g=scripted:greedy",
                              "--partner", "r=rule", "--tokens", "6", "--episodes", "2",
                              "--metric", "steps", "--out", str(tmp_path / "cross"), "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)
    assert m["family"] == "toy" and m["partners"] == ["g", "r"]
    assert m["matrix"][0][0]["mean"] == pytest.approx((3 + 4) / 2)  # piles 6 and 7
    assert m["matrix"][1][1]["mean"] == pytest.approx((4 + 5) / 2)
    assert all(c["n"] == 2 for row in m["matrix"] for c in row)

    # a person's seat, played by a script through the page's API: it always skips, so the
    # greedy partner alone empties a pile of 3 in 3 steps
    servers: list = []
    real = play_server.make_server

    def recording(session, port):
        server = real(session, port)
        servers.append((server, session))
        return server

    monkeypatch.setattr(play_server, "make_server", recording)
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(res=runner.invoke(app, [
        "play", "toy", "--seat", "agent_1", "--team", "agent_0=scripted:greedy",
        "--tokens", "3", "--out", str(tmp_path / "play")])))
    thread.start()
    deadline = time.monotonic() + 60
    asked, last = 0, 0
    while thread.is_alive() and time.monotonic() < deadline:
        if not servers:
            time.sleep(0.05)
            continue
        server, session = servers[0]
        port = server.server_address[1]
        assert server.server_address[0] == "127.0.0.1"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", f"/api/state?token={session.token}&client=me&after={last}")
            state = json.loads(conn.getresponse().read())
            q = state.get("question")
            if q and q["id"] != last:
                last = q["id"]
                conn.request("POST", f"/api/answer?token={session.token}&client=me",
                             body=json.dumps({"question": q["id"], "choice": 1}))
                conn.getresponse().read()
                asked += 1
        except (ConnectionError, OSError):
            pass  # the session ended between two requests
        finally:
            conn.close()
        time.sleep(0.02)
    thread.join(30)
    assert result["res"].exit_code == 0, result["res"].output
    assert asked == 2  # steps 0 and 1: at step 2 the greedy partner takes the last token
    from coordbench.core.rundir import RunDir

    run = RunDir.open(tmp_path / "play")
    (cond,) = run.conditions
    traj = run.load_episode(cond, run.episode_keys(cond)[0])
    assert traj.end.success and traj.end.t == 3
    assert [a.driver for a in traj.header.team] == ["scripted:greedy", "human"]
    # the page learns how the episode ended, and where to open it in the viewer
    (ended,) = servers[0][1].outcomes
    assert ended["success"] and ended["steps"] == 3 and ended["metrics"]["success"] == 1.0
    assert ended["viewer"]["url"].endswith(f"#run=play&cond={cond}&key=ep000")
