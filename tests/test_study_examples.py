"""The examples a study picks (MECoBench Tables 17 and 21, CoCoBench Figs. 4 and 11-14): every
excerpt in a report is a real step of a saved episode, and its viewer command opens it."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import HouseholdStepEvent, MessageEvent, ModelCallEvent
from coordbench.reproduce.examples import NONE_SHOWN, md_cell
from coordbench.viewer.episode import payload

runner = CliRunner()
REFS = {"mecobench": ("Table 17", "Table 21"), "cocobench": ("Figs. 4, 11-14",)}


def _reproduce(out: Path, paper: str, *args: str) -> None:
    # imperfect rule minds fail the ways the papers' teams do, so failure examples exist
    res = runner.invoke(app, ["reproduce", paper, "--quick", "--limit", "2",
                              "--offline-agents", "imperfect", *args, "--out", str(out),
                              "--json"])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("examples")
    _reproduce(base / "meco", "mecobench", "--max-steps", "20")
    _reproduce(base / "coco", "cocobench")
    return {"mecobench": base / "meco", "cocobench": base / "coco"}


def _examples(out: Path, ref: str) -> list[dict]:
    items = {i["ref"]: i for i in json.loads((out / "findings.json").read_text())["items"]}
    data = items[ref]["data"]
    assert data["run"] == str(out)
    return data["examples"]


def _check_event(traj, ev: dict) -> None:
    """The event is in the episode at its step, as the excerpt says."""
    t, agent, text = ev["t"], ev["agent"], ev["text"]
    if ev["kind"] == "message":
        assert any(m.t == t and m.sender == agent and m.content == text and m.phase == ev["phase"]
                   for m in traj.steps(MessageEvent)), ev
    elif ev["kind"] == "action":
        step = [e for e in traj.steps(HouseholdStepEvent) if e.t == t]
        assert len(step) == 1, ev
        assert any(a.agent == agent and a.action == ev["action"] and a.args == ev["args"]
                   and a.outcome == ev["outcome"] for a in step[0].actions), ev
        assert text.startswith(ev["action"] + "(") and ev["outcome"] in text
    elif ev["kind"] == "call":
        assert any(c.t == t and c.agent == agent and c.parse_status == "failed"
                   for c in traj.steps(ModelCallEvent)), ev
    else:
        assert ev["kind"] == "end" and traj.end is not None and traj.end.t == t, ev


def _check_viewer(run: RunDir, out: Path, ex: dict) -> None:
    """The viewer opens the episode the example names, at its step."""
    cond, key = ex["condition"], ex["key"]
    shown = payload(run, cond, key)["timeline"]
    for ev in ex["events"]:
        if ev["kind"] == "action":
            assert any(c["t"] == ev["t"] and c["agent"] == ev["agent"]
                       and c["code"] == ev["outcome"] for c in shown["cells"]), ev
        if ev["kind"] == "message":
            assert any(m["t"] == ev["t"] and m["content"] == ev["text"]
                       for m in shown["messages"]), ev
    cmd = shlex.split(ex["view"]["export"])
    assert cmd[:3] == ["coordbench", "view", str(out)] and cmd[3:5] == ["--episode",
                                                                          ex["episode"]]
    assert shlex.split(ex["view"]["serve"]) == ["coordbench", "view", str(out)]
    fragment = parse_qs(urlsplit(ex["view"]["url"]).fragment)
    assert fragment == {"run": [out.name], "cond": [cond], "key": [key],
                        "step": [str(ex["t"] + 1)]}


@pytest.mark.parametrize("paper", ["mecobench", "cocobench"])
def test_every_example_is_a_real_step_the_viewer_opens(runs, paper, tmp_path):
    out = runs[paper]
    run = RunDir.open(out)
    md = (out / "reproduce.md").read_text()
    html = (out / "reproduce.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing is fetched
    found = 0
    for ref in REFS[paper]:
        assert f"## {ref}:" in md
        for ex in _examples(out, ref):
            if not ex["found"]:
                assert ex["note"] == NONE_SHOWN and "episode" not in ex
                continue
            found += 1
            assert run.find_episode(ex["episode"]) == (ex["condition"], ex["key"])
            traj = run.load_episode(ex["condition"], ex["key"])
            assert traj.header.episode_id == ex["episode"]
            assert ex["events"] and all(ev["t"] == ex["t"] for ev in ex["events"])
            assert sorted({ev["agent"] for ev in ex["events"]} - {None}) == ex["agents"]
            for ev in ex["events"]:
                _check_event(traj, ev)
            if ex["match"]:  # the span that earned a tag is in the message
                assert ex["match"] in ex["events"][0]["text"]
            _check_viewer(run, out, ex)
            assert f"`{ex['episode']}`" in md
    assert found
    # the first example's export command writes the page of its episode
    first = next(ex for ref in REFS[paper] for ex in _examples(out, ref) if ex["found"])
    page = tmp_path / "episode.html"
    cmd = shlex.split(first["view"]["export"])
    res = runner.invoke(app, [*cmd[1:-1], str(page)])
    assert res.exit_code == 0, res.output
    assert first["key"] in page.read_text()


def test_the_examples_cover_what_these_teams_do(runs):
    meco = {ex["what"]: ex for ex in _examples(runs["mecobench"], "Table 17")}
    # rule minds claim, report positions and objects, ask at doors, assign and correct
    for tag in ("Info-Plan", "Info-Loc", "Info-Obj", "Coord-Q", "Task-Assign", "Correct."):
        assert meco[tag]["found"], tag
    # ... and never ask a teammate to fetch something: said, not invented
    assert not meco["Act-Del"]["found"] and meco["Act-Del"]["paper"]
    md = (runs["mecobench"] / "reproduce.md").read_text()
    assert f"| Act-Del | {md_cell(meco['Act-Del']['paper'])} | {NONE_SHOWN} |" in md
    modes = {ex["what"]: ex for ex in _examples(runs["mecobench"], "Table 21")}
    assert set(modes) >= {"grab_conflict", "hallucinated_completion",
                          "object_misidentification"}
    assert modes["grab_conflict"]["found"]
    coco = _examples(runs["cocobench"], "Figs. 4, 11-14")
    assert {ex["group"] for ex in coco} == {"D1", "D2", "D3", "D4"}
    shown = {ex["what"] for ex in coco if ex["found"]}
    assert {"success", "occupancy", "protocol_failure"} <= shown


def test_a_d2_ordering_violation_is_found_at_the_action_that_breaks_the_order(runs):
    from coordbench.core.trajectory import Trajectory
    from coordbench.metrics.constructs import construct_of, d2_counts
    from coordbench.reproduce.examples import construct_examples

    run = RunDir.open(runs["cocobench"])
    oracle = next(t for c in run.conditions if "oracle" in c for t in run.load_episodes(c)
                  if construct_of(t) == "D2")
    steps = oracle.steps(HouseholdStepEvent)
    boxes = oracle.header.params["construct"]["containers"]
    close = next(e for e in steps for a in e.actions
                 if a.action == "close" and a.args.get("obj") in boxes)
    act = next(a for a in close.actions if a.action == "close")
    # a goal container closed before anything is put in: an ordering violation whose
    # outcome is "ok", so only the D2 rule (not an outcome) finds it
    early = close.model_copy(update={"t": 0, "actions": [act]})
    traj = Trajectory(header=oracle.header, events=[early, *oracle.events])
    assert d2_counts(traj)[1] > 0
    ex = next(x for x in construct_examples([("oracle, moved close", traj)])
              if x.group == "D2" and x.what == "dependency")
    assert ex.found and ex.t == 0 and ex.lines[0].action == "close"
    assert ex.lines[0].outcome == "ok" and "order" in ex.why
