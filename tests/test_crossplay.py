"""Cross-play: the matrix's contract, self-play cells that are the family's own runs, the
gap that partners with different conventions imply, and the play server's gate."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.play.server import make_server
from coordbench.play.session import SeatLeft, SeatSession
from tests.cli_errors import error_line

runner = CliRunner()
STAT = ["crossplay", "stat", "--config", "3A-6T-5x3", "--episodes", "6"]


def _json(args: list[str]) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_the_json_contract_and_the_matrix_layout(tmp_path):
    got = _json([*STAT, "--partner", "g=scripted:greedy", "--partner", "h=scripted:hungarian",
                 "--partner", "r=scripted:random", "--out", str(tmp_path / "m")])
    assert set(got) >= {"family", "partners", "metric", "matrix", "self_play", "cross_play",
                        "gap"}
    assert got["family"] == "stat" and got["partners"] == ["g", "h", "r"]
    assert got["metric"] == "return"
    assert len(got["matrix"]) == 3 and all(len(row) == 3 for row in got["matrix"])
    for row in got["matrix"]:
        for cell in row:
            assert set(cell) == {"mean", "ci95", "n", "lo", "hi"} and cell["n"] == 6
    for i, name in enumerate(got["partners"]):
        assert got["self_play"][name] == got["matrix"][i][i]
        assert got["cross_play"][name]["n"] == 6 * 4  # row and column off the diagonal
        gap = got["self_play"][name]["mean"] - got["cross_play"][name]["mean"]
        assert got["gap"][name]["mean"] == pytest.approx(gap)
    # the random allocator in every seat conflicts most: the lowest self-play
    assert got["self_play"]["r"]["mean"] < min(got["self_play"]["g"]["mean"],
                                               got["self_play"]["h"]["mean"])


def test_a_diagonal_cell_is_that_partners_self_play_run(tmp_path):
    cross = tmp_path / "cross"
    _json([*STAT, "--partner", "g=scripted:greedy", "--partner", "r=scripted:random",
           "--out", str(cross)])
    own = tmp_path / "own"
    res = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy",
                              "--episodes", "6", "--out", str(own), "--json"])
    assert res.exit_code == 0, res.output
    a, b = RunDir.open(cross), RunDir.open(own)
    (cond,) = b.conditions
    assert cond in a.conditions
    for key in b.episode_keys(cond):
        x, y = a.load_episode(cond, key), b.load_episode(cond, key)
        assert x.events == y.events and x.header.team == y.header.team


def test_rule_minds_with_opposite_claim_conventions_show_the_gap_they_imply(tmp_path):
    got = _json([*STAT, "--partner", "low=rule", "--partner", "rev=rule:reverse",
                 "--protocol", "broadcast", "--metric", "conflict_rate",
                 "--out", str(tmp_path / "c")])
    m = got["matrix"]
    # lower-index claims keep a task, agents speak in index order: never a conflict
    assert m[0][0]["mean"] == 0.0
    # agent_0 keeps its claim while the reverse-minded teammates ignore lower claims: they
    # go for the same tasks
    assert m[0][1]["mean"] > 0.0
    # a reverse-minded agent_0 yields to its higher teammates, who yield to it: no conflict
    assert m[1][0]["mean"] == 0.0
    assert got["cross_play"]["low"]["mean"] > got["self_play"]["low"]["mean"]
    md = (tmp_path / "c" / "report.md").read_text()
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in md.splitlines()
            if line.startswith("| low |") or line.startswith("| rev |")}
    assert "Per cell, the coordination profile" in md
    # each cell's profile: duplicated claims (redundancy) only where the conventions clash
    redundancy = {k: float(v.split("|")[3]) for k, v in rows.items() if len(k) == 2
                  and k[1] in ("low", "rev") and v.count("|") > 6}
    assert redundancy[("low", "low")] == 0.0 < redundancy[("low", "rev")]
    # the same run again (another metric): resumed, nothing played twice
    before = {c: len(RunDir.open(tmp_path / "c").episode_keys(c))
              for c in RunDir.open(tmp_path / "c").conditions}
    again = _json([*STAT, "--partner", "low=rule", "--partner", "rev=rule:reverse",
                   "--protocol", "broadcast", "--out", str(tmp_path / "c")])
    assert again["metric"] == "return" and all(n == 6 for n in before.values())
    assert {c: len(RunDir.open(tmp_path / "c").episode_keys(c)) for c in before} == before
    import coordbench

    rows = coordbench.load_run(tmp_path / "c").episodes()
    pairs = rows.groupby(["partner_first", "partner_others"]).size()
    assert dict(pairs) == {(a, b): 6 for a in ("low", "rev") for b in ("low", "rev")}
    mixed = rows[(rows.partner_first == "low") & (rows.partner_others == "rev")]
    assert set(mixed.team) == {"agent_0=rule,agent_1=rule:reverse,agent_2=rule:reverse"}


def test_constructs_and_household_cells_play(tmp_path):
    got = _json(["crossplay", "constructs", "--construct", "D1", "--limit", "3",
                 "--partner", "low=rule", "--partner", "rev=rule:reverse",
                 "--out", str(tmp_path / "k")])
    assert got["family"] == "constructs" and got["matrix"][0][0]["n"] == 3
    got = _json(["crossplay", "mecobench", "--limit", "1", "--max-steps", "8",
                 "--partner", "r=rule", "--partner", "lossy=rule:message_loss=1",
                 "--out", str(tmp_path / "h")])
    assert got["family"] == "mecobench" and got["matrix"][1][1]["n"] == 1
    md = (tmp_path / "h" / "report.md").read_text()
    assert "## Cross-play: mecobench, SR" in md
    assert "Cross-play matrix" in (tmp_path / "h" / "report.html").read_text()


@pytest.mark.parametrize(("args", "expected"), [
    ([*STAT, "--partner", "x=scripted:nope", "--partner", "g=scripted:greedy"],
     "unknown STAT policy 'nope'"),
    ([*STAT], "give at least two --partner"),
    ([*STAT, "--partner", "g=scripted:greedy"], "needs two partners at least"),
    ([*STAT, "--partner", "a=rule", "--partner", "A=rule:reverse"], "names 'A' twice"),
    ([*STAT, "--partner", "x" * 33 + "=rule", "--partner", "b=rule:reverse"],
     "a name is 1 to 32 letters"),
    ([*STAT, "--partner", "greedy"], "write NAME=SPEC"),
    ([*STAT, "--partner", "a=rule", "--partner", "a=rule"], "names 'a' twice"),
    ([*STAT, "--partner", "a=oracle"], "a STAT seat is one of"),
    ([*STAT, "--partner", "a=human"], "a person plays through `coordbench play`"),
    ([*STAT, "--partner", "a=rule:sideways", "--partner", "g=scripted:greedy"],
     "is neither reverse"),
    ([*STAT, "--partner", "a=learned:missing.pt", "--partner", "g=scripted:greedy"],
     "missing.pt"),
    ([*STAT, "--partner", "a=rule", "--partner", "g=scripted:greedy", "--metric", "nope"],
     "not a metric of STAT"),
    (["play", "stat", "--seat", "agent_7"], "--seat agent_7 is not in the team"),
    (["play", "stat", "--seat", "agent_0", "--team", "agent_0=rule,agent_1=rule,agent_2=rule"],
     "is the person's, but --team gives it to rule"),
    (["play", "mecobench", "--seat", "agent_0", "--team", "agent_0=human,agent_1=human"],
     "one person, one seat"),
    ([*STAT, "--partner", "a=rule:memory=8", "--partner", "g=scripted:greedy"],
     "seat agent_0: rule:memory=8: memory: STAT"),
    ([*STAT, "--partner", "a=rule", "--partner", "b=rule"], "the same partner twice"),
    (["crossplay", "physical", "--task", "Handover", "--partner", "e=expert", "--partner",
      "m=llm:smollm2"], "pairs models with models"),
    (["crossplay", "physical", "--task", "Handover", "--partner", "x=scripted:bogus",
      "--partner", "e=expert"],
     "bogus"),
    (["play", "stat", "--seat", "agent_0", "--executor", "process"],
     "play runs its episodes in this process"),
    (["play", "constructs", "--seat", "agent_0", "--team", "\u00b2"], "--team"),
    (["play", "stat", "--seat", "agent_\u00b2"], "--seat 'agent_\u00b2': write agent_K"),
])
def test_bad_input_is_one_line(tmp_path, args, expected):
    assert expected in error_line([*args, "--out", str(tmp_path / "bad")], tmp_path)
    assert not (tmp_path / "bad" / "episodes").exists()
    assert not (tmp_path / "bad" / "crossplay.json").exists()


def test_a_longer_earlier_run_in_the_folder_does_not_change_the_matrix(tmp_path):
    out = str(tmp_path / "m")
    _json([*STAT, "--partner", "g=scripted:greedy", "--partner", "r=scripted:random",
           "--out", out])
    short = _json(["crossplay", "stat", "--config", "3A-6T-5x3", "--episodes", "3",
                   "--partner", "g=scripted:greedy", "--partner", "r=scripted:random",
                   "--partner", "h=scripted:hungarian", "--out", out])
    # every cell, old and new, on the same three layouts
    assert all(c["n"] == 3 for row in short["matrix"] for c in row)


def _request(port: int, method: str, path: str, host: str | None = None,
             body: dict | None = None) -> tuple[int, dict]:
    """Return (status, JSON body; {} for the page itself)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Host": host or f"127.0.0.1:{port}"}
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers=headers)
    res = conn.getresponse()
    raw = res.read()
    payload = json.loads(raw) if res.getheader("Content-Type") == "application/json" else {}
    conn.close()
    return res.status, payload


def test_the_play_server_binds_loopback_and_gates_every_request():
    session = SeatSession(0, decision_timeout=5)
    server = make_server(session, 0)
    assert server.server_address[0] == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    tok = session.token
    try:
        assert _request(port, "GET", "/api/state")[0] == 403  # no token
        assert _request(port, "GET", "/api/state?token=wrong")[0] == 403
        status, body = _request(port, "GET", f"/api/state?token={tok}", host="evil.example")
        assert status == 403 and "127.0.0.1 only" in body["error"]
        assert _request(port, "GET", f"/?token={tok}", host=f"localhost:{port}")[0] == 200

        async def episode() -> tuple:
            return await session.ask("ep", 3, "act", {"text": "x"},
                                     [{"id": 0, "label": "a"}, {"id": 1, "label": "b"}])

        result: dict = {}
        t = threading.Thread(target=lambda: result.update(v=asyncio.run(episode())))
        t.start()
        for _ in range(100):
            status, state = _request(port, "GET", f"/api/state?token={tok}&client=me")
            if state["question"]:
                break
        qid = state["question"]["id"]
        assert state["playing"]
        _, other = _request(port, "GET", f"/api/state?token={tok}&client=you")
        assert not other["playing"]  # a second tab only watches
        status, body = _request(port, "POST", f"/api/answer?token={tok}&client=you",
                                body={"question": qid, "choice": 0})
        assert status == 409 and "only watch" in body["error"]
        status, body = _request(port, "POST", f"/api/answer?token={tok}&client=me",
                                body={"question": qid, "choice": 7})
        assert status == 409 and "not a legal action for agent_0 at step 3" in body["error"]
        status, body = _request(port, "POST", f"/api/answer?token={tok}&client=me",
                                body={"question": qid, "choice": 1})
        assert status == 200
        t.join(5)
        assert result["v"][0] == 1 and result["v"][1] >= 0
        # answers that only look like a legal one, and broken requests, are refused
        t = threading.Thread(target=lambda: result.update(v=asyncio.run(episode())))
        t.start()
        for _ in range(100):
            _, state = _request(port, "GET", f"/api/state?token={tok}&client=me&after={qid}")
            if state["question"] and state["question"]["id"] != qid:
                break
        qid = state["question"]["id"]
        for bad in ({"question": qid, "choice": True}, {"question": qid, "choice": 1.0},
                    {"question": str(qid), "choice": 1}):
            status, body = _request(port, "POST", f"/api/answer?token={tok}&client=me",
                                    body=bad)
            assert status == 409, bad
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.putrequest("POST", f"/api/answer?token={tok}&client=me")
        conn.putheader("Content-Length", "-1")
        conn.endheaders()
        res = conn.getresponse()
        assert res.status == 400 and b"Content-Length" in res.read()
        conn.close()
        assert _request(port, "GET", f"/api/state?token={tok}&client=me&after=%C2%B2")[0] == 200
        # a reload: the page says it closes, and the same seat's next page takes over
        session.leave("me")
        assert _request(port, "GET", f"/api/state?token={tok}&client=new")[1]["playing"]
        assert _request(port, "POST", f"/api/answer?token={tok}&client=new",
                        body={"question": qid, "choice": 0})[0] == 200
        t.join(5)
        assert result["v"][0] == 0
        # a timeout leaves the seat unplayed: SeatLeft, never an action
        session.decision_timeout = 0.3
        with pytest.raises(SeatLeft, match="decision-timeout"):
            asyncio.run(episode())
    finally:
        session.stop("test over")
        server.shutdown()
        server.server_close()


def test_physical_crossplay_pairs_learned_robots_from_separate_runs(tmp_path):
    from coordbench.learn.imitation import default_config
    from coordbench.suites.physical.demos import make_demos
    from coordbench.suites.physical.learning import train_policy

    demos = tmp_path / "demos"
    make_demos("CoCarry", 2, demos)
    for seed in (0, 1):  # two runs: separately trained per-robot networks
        cfg = default_config("CoCarry", "bc", 2, steps=3, batch=8, hidden=32, seed=seed)
        train_policy(cfg, demos, tmp_path / f"bc{seed}.pt")
    got = _json(["crossplay", "physical", "--task", "CoCarry", "--rollouts", "1",
                 "--partner", "e=expert", "--partner", f"a=learned:{tmp_path / 'bc0.pt'}",
                 "--partner", f"b=learned:{tmp_path / 'bc1.pt'}", "--metric", "p1",
                 "--out", str(tmp_path / "p")])
    assert got["partners"] == ["e", "a", "b"]
    assert all(cell["n"] == 1 for row in got["matrix"] for cell in row)
    run = RunDir.open(tmp_path / "p")
    mixed = [c for c in run.conditions if "team-" in c]
    assert len(mixed) == 6
    teams = {tuple(a.driver for a in run.load_episode(c, "seed0001").header.team)
             for c in mixed}
    assert ("scripted:expert", f"learned:{tmp_path / 'bc1.pt'}") in teams
    assert (f"learned:{tmp_path / 'bc0.pt'}", f"learned:{tmp_path / 'bc1.pt'}") in teams
    # the expert's self-play cell is `physical eval --policy expert`'s condition
    assert "physical_CoCarry_expert_main" in run.conditions
    # a learned robot cannot sit in a skill-controlled team
    line = error_line(["physical", "eval", "--task", "CoCarry", "--policy", "llm", "--team",
                       f"agent_0=llm:x,agent_1=learned:{tmp_path / 'bc0.pt'}",
                       "--out", str(tmp_path / "bad")], tmp_path)
    assert "learned robots play without skills" in line


def test_learned_stat_partners_pair_seat_by_seat_and_a_foreign_checkpoint_is_refused(tmp_path):
    for algo in ("iql", "vdn"):  # two methods, trained in separate runs
        res = runner.invoke(app, ["stat", "train", "--config", "3A-6T-5x3", "--algo", algo,
                                  "--steps", "64", "--seeds", "0", "--executor", "local",
                                  "--workers", "1", "--eval-episodes", "2",
                                  "--out", str(tmp_path / algo), "--json"])
        assert res.exit_code == 0, res.output
    iql = next((tmp_path / "iql").rglob("iql_3A-6T-5x3_seed0.pt"))
    vdn = next((tmp_path / "vdn").rglob("vdn_3A-6T-5x3_seed0.pt"))
    got = _json([*STAT, "--partner", f"i=learned:{iql}", "--partner", f"v=learned:{vdn}",
                 "--partner", "g=scripted:greedy", "--out", str(tmp_path / "m")])
    assert all(c["n"] == 6 for row in got["matrix"] for c in row)
    run = RunDir.open(tmp_path / "m")
    drivers = {tuple(a.driver for a in run.load_episode(c, "ep00000").header.team)
               for c in run.conditions}
    assert (f"learned:{iql}", f"learned:{vdn}", f"learned:{vdn}") in drivers
    line = error_line(["crossplay", "stat", "--config", "3A-6T-10x6", "--partner",
                       f"i=learned:{iql}", "--partner", "g=scripted:greedy", "--out",
                       str(tmp_path / "bad")], tmp_path)
    assert "was trained on 3A-6T-5x3, not 3A-6T-10x6" in line


def test_the_play_server_answers_malformed_and_slow_requests_with_one_4xx_line(monkeypatch):
    import socket

    import coordbench.play.server as play_server

    monkeypatch.setattr(play_server, "BODY_TIMEOUT_S", 0.5)
    session = SeatSession(0, decision_timeout=5)
    server = make_server(session, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port, tok = server.server_address[1], session.token
    try:
        deep = b"[" * 30_000 + b"]" * 30_000  # under the size cap, past the parser
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", f"/api/answer?token={tok}&client=me", body=deep,
                     headers={"Host": f"127.0.0.1:{port}"})
        res = conn.getresponse()
        body = json.loads(res.read())
        assert res.status == 400 and "nested too deep" in body["error"]
        conn.close()
        # a body that stalls: 408 once its time is up, never a 500 or a hung thread
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(f"POST /api/answer?token={tok}&client=me HTTP/1.1\r\nHost: 127.0.0.1:"
                     f"{port}\r\nContent-Length: 100\r\n\r\n{{\"quest".encode())
        # the headers and the body can come in separate segments: read until the server closes
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        reply = b"".join(chunks).decode()
        sock.close()
        assert reply.startswith("HTTP/1.0 408") and "did not arrive within" in reply
        # the session is unharmed
        status, state = _request(port, "GET", f"/api/state?token={tok}&client=me")
        assert status == 200 and state["playing"]
    finally:
        session.stop("test over")
        server.shutdown()
        server.server_close()


def test_a_team_spec_that_leaves_out_the_persons_seat_gets_it_from_seat():
    from coordbench.agents.team.seats import Seat
    from coordbench.commands.play import seats_for, with_person

    team = with_person("agent_1=rule,agent_2=scripted:greedy", "agent_0")
    assert team == "agent_1=rule,agent_2=scripted:greedy,agent_0=human"
    seats = seats_for("agent_0", team, 3, ("llm", "rule", "scripted"), "STAT", Seat("rule"))
    assert [s.driver for s in seats] == ["human", "rule", "scripted:greedy"]
    # a spec that names the seat, a plain size, or no spec at all is left as it is
    assert with_person("agent_0=human,agent_1=rule", "agent_0") == "agent_0=human,agent_1=rule"
    assert with_person("3", "agent_0") == "3" and with_person(None, "agent_0") is None
