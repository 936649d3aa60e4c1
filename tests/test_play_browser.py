"""A person in a seat, in a real browser: Debian's chromium driven headless by playwright
plays whole household and STAT episodes through `coordbench play` (clicks and a message),
and the trajectories say so; a tab closed mid-episode leaves an errored episode; a second
tab only watches."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordbench.core.rundir import RunDir
from tests.test_viewer_browser import ARGS, CHROMIUM, sync_api

pytestmark = pytest.mark.xdist_group("play_browser")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        yield b
        b.close()


def _start(args: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "coordbench", "play", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and "?token=" in url, proc.stderr.read()
    return proc, url


def _play(page, proc: subprocess.Popen, message: str, deadline: float = 120.0) -> int:
    """Answer every question until the command ends: the message in the first talking
    phase, silence after it, the first legal action otherwise; return the clicks."""
    clicks, said = 0, False
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() - start < deadline:
        if page.locator("#say").is_visible():
            if not said:
                page.fill("#text", message)
                page.click("#send")
                said = True
            else:
                page.click("#silent")
            clicks += 1
        elif page.locator("#choices button").count():
            try:
                page.locator("#choices button").first.click(timeout=2000)
                clicks += 1
            except sync_api.Error:
                pass  # the question moved on while we clicked
        else:
            page.wait_for_timeout(50)
    return clicks


def _episodes(out: Path) -> list:
    run = RunDir.open(out)
    return [run.load_episode(c, k) for c in run.conditions for k in run.episode_keys(c)]


def test_a_person_plays_a_whole_household_episode(browser, tmp_path):
    out = tmp_path / "house"
    proc, url = _start(["mecobench", "--seat", "agent_0", "--team", "agent_0=human,"
                        "agent_1=rule", "--protocol", "broadcast", "--max-steps", "5",
                        "--out", str(out)])
    page = browser.new_page()
    page.goto(url)
    clicks = _play(page, proc, "I search the kitchen")
    assert proc.wait(30) == 0, proc.stderr.read()
    # the page ends on the episode's outcome, not on its last question
    page.wait_for_selector("#outcome:not([hidden])", timeout=10_000)
    ended = page.locator("#outcome").inner_text()
    assert "ended:" in ended and "after 5 steps" in ended and "coordbench view" in ended
    assert page.locator("#choices button").count() == 0
    page.close()
    (traj,) = _episodes(out)
    assert traj.header.team[0].driver == "human" and traj.header.team[1].driver == "rule"
    decisions = [e for e in traj.events if e.type == "human_decision"]
    assert len(decisions) == clicks == 10  # 5 steps: a message phase and an act each
    assert {d.phase for d in decisions} == {"broadcast", "act"}
    assert all(d.think_s >= 0 for d in decisions)
    said = [e for e in traj.events if e.type == "message" and e.sender == 0]
    assert [m.content for m in said] == ["I search the kitchen"]
    acted = [d.choice for d in decisions if d.phase == "act"]
    steps = [e for e in traj.events if e.type == "household_step"]
    assert len(steps) == 5 and traj.end.termination != "error"
    # what the person clicked is what the seat did: a label starts with its verb
    verbs = {"put": ("put_in", "put_on"), "walk": ("walk", "walk_to_room", "walk_to_door"),
             "hand": ("handover",), "done": ("done",)}
    for label, step in zip(acted, steps, strict=True):
        first = label.split(" ")[0]
        mine = next(a for a in step.actions if a.agent == 0)
        assert mine.action in verbs.get(first, (first,)), (label, mine)
    # the viewer's timeline carries the person's decisions with their think time
    from coordbench.viewer.timeline import build

    shown = build(traj)["decisions"]
    assert [(d["t"], d["phase"], d["choice"]) for d in shown] == [
        (d.t, d.phase, d.choice) for d in decisions]
    from urllib.parse import quote

    from tests.test_viewer_browser import Serving

    with Serving(out) as s:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        cond = traj.header.episode_id.split("/")[0]
        page.goto(f"{s.url}#cond={quote(cond)}&key=case0000&step=1")
        page.wait_for_function(f"document.body.dataset.episode === {cond + '/case0000'!r}")
        page.wait_for_selector("#details .decision")
        text = page.locator("#details").inner_text().lower()
        assert "a person's decisions at step 0" in text
        assert "s to decide: i search the kitchen" in text
        assert not errors
        page.close()


def test_a_person_plays_a_whole_stat_episode_and_a_second_tab_only_watches(browser, tmp_path):
    out = tmp_path / "stat"
    proc, url = _start(["stat", "--seat", "agent_1", "--config", "3A-6T-5x3",
                        "--protocol", "broadcast", "--out", str(out)])
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#stat-map", timeout=30_000)
    watcher = browser.new_page()
    watcher.goto(url)
    watcher.wait_for_function("document.getElementById('watch').textContent.length > 0",
                              timeout=10_000)
    assert watcher.locator("#choices button").count() == 0
    clicks = _play(page, proc, "I go right")
    assert proc.wait(30) == 0, proc.stderr.read()
    (traj,) = _episodes(out)
    assert [a.driver for a in traj.header.team] == ["rule", "human", "rule"]
    assert traj.end.termination == "success"
    decisions = [e for e in traj.events if e.type == "human_decision"]
    assert len(decisions) == clicks > 0
    picks = [d for d in decisions if d.phase == "act"]
    # every pick the person made is the task agent_1 selected at that step
    steps = {e.t: e for e in traj.events if e.type == "stat_step"}
    for d in picks:
        task = int(d.choice.split()[1])
        assert steps[d.t].actions[1] == 3 + task  # SELECT0 + task
    watcher.close()
    page.close()


def test_a_closed_tab_leaves_an_errored_episode(browser, tmp_path):
    out = tmp_path / "closed"
    proc, url = _start(["stat", "--seat", "agent_0", "--config", "3A-6T-5x3", "--episodes",
                        "2", "--page-timeout", "2", "--out", str(out)])
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#say:not([hidden]), #choices button", timeout=30_000)
    page.close()
    rc = proc.wait(60)
    err = proc.stderr.read()
    assert rc == 3, err  # errored episodes are not results: the command says so
    assert "play page" in err
    run = RunDir.open(out)
    (cond,) = run.conditions
    assert run.episode_keys(cond) == []  # no result
    errors = list((out / "errors").rglob("*.jsonl"))
    assert len(errors) == 1
    end = json.loads(errors[0].read_text().splitlines()[-1])
    assert end["termination"] == "error" and "play page" in end["detail"]


def test_a_person_drives_a_robot_through_its_skill_library(browser, tmp_path):
    out = tmp_path / "robot"
    proc, url = _start(["physical", "--seat", "agent_1", "--task", "Handover",
                        "--out", str(out)])
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#choices button", timeout=60_000)
    labels = page.locator("#choices button").all_text_contents()
    assert any("(suggested)" in label for label in labels)
    clicks = 0
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() - start < 120:
        try:
            page.wait_for_selector("#choices button", timeout=1000)
        except sync_api.Error:
            continue  # the robots are running their skills
        buttons = page.locator("#choices button")
        suggested = buttons.filter(has_text="(suggested)")
        try:
            (suggested if suggested.count() else buttons).first.click(timeout=1000)
            clicks += 1
        except sync_api.Error:
            pass  # the question moved on while we clicked
    assert proc.wait(30) == 0, proc.stderr.read()
    (traj,) = _episodes(out)
    assert [a.driver for a in traj.header.team] == ["scripted:expert", "human"]
    decisions = [e for e in traj.events if e.type == "human_decision"]
    assert len(decisions) == clicks > 0 and all(d.phase == "skill" for d in decisions)
    # following the controller's suggestion, the person and the scripted robot succeed
    assert traj.end.termination == "success"
    page.close()


def test_the_viewer_draws_a_crossplay_matrix_and_opens_its_cells(browser, tmp_path):
    from tests.test_viewer_browser import Serving

    out = tmp_path / "cross"
    res = subprocess.run([sys.executable, "-m", "coordbench", "crossplay", "stat", "--config",
                          "3A-6T-5x3", "--episodes", "3", "--partner", "g=scripted:greedy",
                          "--partner", "r=scripted:random", "--out", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    with Serving(out) as s:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(s.url)
        page.click(".crossplay-item")
        page.wait_for_selector("#cross-matrix td.cross-cell")
        assert page.locator("#cross-matrix td.cross-cell").count() == 4
        assert "cross-play: stat, return" in page.text_content("#cross-title")
        assert page.locator("#cross-partners tbody tr").count() == 2
        page.locator("#cross-matrix td.cross-cell").nth(1).click()  # greedy + random
        page.wait_for_selector("#listing:not([hidden]) #episodes tbody tr")
        assert "team-scripted-greedy+scripted-random" in page.text_content("#cond-title")
        assert not errors
        page.close()
