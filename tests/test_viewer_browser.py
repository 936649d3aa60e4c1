"""The viewer in a real browser: Debian's chromium driven headless by playwright.

Each family's episode opens with its lanes and its picture, the slider steps, the page logs
no JavaScript error; a physical episode is drawn from its recorded poses; a damaged run lists
its bad episodes; an exported episode and report.html open from file:// without any request.
Screenshots are saved as test artefacts (tmp_path, and a copy under $COORDBENCH_ARTIFACTS when
it is set).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from coordbench.viewer.server import make_server, url_of
from tests import viewer_runs

CHROMIUM = os.environ.get("COORDBENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install -e '.[dev]')")
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no chromium at {CHROMIUM} (make install-dev installs Debian's chromium)",
                allow_module_level=True)


# one worker reads the shared small runs (built once per test process)
pytestmark = pytest.mark.xdist_group("small_runs")


@pytest.fixture(scope="module")
def runs(small_runs) -> dict:
    return small_runs


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        yield b
        b.close()


class Serving:
    """The viewer on one run, in a thread, for the length of a `with` block."""

    def __init__(self, path: Path) -> None:
        self.server, self.viewer = make_server(path, 0)
        self.url = url_of(self.server)

    def __enter__(self) -> Serving:
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.viewer.metrics.close()
        self.thread.join(timeout=10)


def page_with_error_log(browser, errors: list[str]):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}")
            if m.type == "error" else None)
    return page


def shoot(page, tmp_path: Path, name: str) -> Path:
    """Save a full-page screenshot as a test artefact; return its path."""
    path = tmp_path / "artifacts" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("COORDBENCH_ARTIFACTS"):
        dest = Path(os.environ["COORDBENCH_ARTIFACTS"]) / "viewer"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest / path.name)
    return path


def open_episode(page, url: str, cond: str, key: str, step: int = 0) -> None:
    page.goto("about:blank")
    page.goto(f"{url}#cond={cond}&key={key}&step={step}")
    page.wait_for_function(f"document.body.dataset.episode === {f'{cond}/{key}'!r}")


# family -> (episode key, agents, a selector the picture must hold, how many); key None:
# the condition's first episode (a --limit run plays a stratified sample: runs["keys"])
EXPECT = {
    "stat": ("ep00000", 3, "#picture .task", 6),
    "mecobench": (None, 2, "#picture .agent", 2),
    "constructs": (None, 2, "#picture .agent", 2),
    "constructs_d4": (None, None, "#picture .agent", None),
    "physical": ("seed0001", 2, "#picture .robot", 2),
    "llm": (None, 2, "#picture .agent", 2),
}


def test_every_family_opens_steps_and_logs_no_error(runs, browser, tmp_path):
    errors: list[str] = []
    page = page_with_error_log(browser, errors)
    with Serving(runs["run"]) as srv:
        for family, (key, agents, selector, count) in EXPECT.items():
            cond = runs["conds"][family]
            key = key or runs["keys"][family][0]
            open_episode(page, srv.url, cond, key)
            assert page.locator("#episodes tbody tr").count() >= 1
            assert page.locator("#timeline svg").count() == 1
            assert page.locator("#timeline .cell").count() > 0
            assert page.locator("#picture svg").count() == 1, family
            # the episode's coordination profile: one chip per measure
            assert page.locator("#ep-profile .chip").count() == 7, family
            n = page.locator(selector).count()
            assert n == count if count is not None else n > 0, (family, n)
            if agents is not None and family != "physical":
                lanes = {page.locator("#timeline .cell").nth(i).get_attribute("data-agent")
                         for i in range(page.locator("#timeline .cell").count())}
                assert lanes == {str(i) for i in range(agents)}, family
            if family != "physical":
                assert "reproduced" in page.locator("#ep-replay").inner_text(), family
            before = page.locator("#step-label").inner_text()
            page.click("#next")
            page.click("#next")
            assert page.locator("#slider").input_value() == "2"
            assert page.locator("#step-label").inner_text() != before
            assert page.locator("#picture svg").count() == 1
            if family != "physical":
                assert "step 1" in page.locator("#details").inner_text().lower()
            page.keyboard.press("ArrowLeft")  # one step (physical: one pose sample) a key
            assert page.locator("#slider").input_value() == "1"
            if family == "mecobench":  # the run saved the agents' views (--images)
                views = page.locator("#details .views img")
                assert views.count() == 2  # one four-view row per agent
                views.first.scroll_into_view_if_needed()
                page.wait_for_function("() => [...document.querySelectorAll('#details .views "
                                       "img')].every((i) => i.complete && i.naturalWidth > 0)")
            if family == "constructs":
                assert "knife" in page.locator("#picture-notes").inner_text()
            if family == "constructs_d4":
                assert "buffers" in page.locator("#picture-notes").inner_text()
            if family == "llm":
                assert page.locator("#timeline .call-mark").count() > 0
                page.locator("#timeline .cell").first.click()
                details = page.locator("#details").inner_text().lower()
                assert "model calls" in details and "prompt (" in details
                page.locator("#details details.prompt summary").first.click()
                assert "system" in page.locator("#details details.prompt").first.inner_text()
                assert "parse" in details and "tokens" in details
            # a later step for the screenshot: something has happened by then
            mid = max(1, int(page.locator("#slider").get_attribute("max")) // 2)
            page.locator("#slider").fill(str(mid))
            shoot(page, tmp_path, f"viewer-{family}")
        # the listing: the metrics of every episode arrive, failed episodes come first
        page.goto("about:blank")
        page.goto(f"{srv.url}#cond={viewer_runs.HOUSEHOLD}")
        page.wait_for_function("document.querySelectorAll('#episodes tbody tr').length === 2")
        page.wait_for_function("![...document.querySelectorAll('#episodes td[data-m]')]"
                               ".some(td => td.textContent === '…')")
        first = page.locator("#episodes tbody tr").first.inner_text()
        rows = page.locator("#episodes tbody tr").all_inner_texts()
        if any("failed" in r for r in rows):
            assert "failed" in first
        shoot(page, tmp_path, "viewer-listing")
    assert errors == []


def test_a_damaged_run_lists_bad_episodes_with_reasons(runs, browser, tmp_path):
    errors: list[str] = []
    page = page_with_error_log(browser, errors)
    with Serving(runs["bad"]) as srv:
        page.goto(f"{srv.url}#cond={viewer_runs.STAT}")
        page.wait_for_function("document.querySelectorAll('#episodes tbody tr').length === 4")
        text = page.locator("#episodes").inner_text()
        for word in ("missing", "bad", "errored", "truncated (no episode_end)",
                     "model provider failure"):
            assert word in text
        page.select_option("#filter", "bad")
        assert page.locator("#episodes tbody tr").count() == 3
        page.locator("#episodes tbody tr", has_text="ep00000").click()
        page.wait_for_function("document.body.dataset.episode === 'error:ep00000'")
        assert "no episode_end" in page.locator("#ep-replay").inner_text()
        page.select_option("#filter", "all")
        page.locator("#episodes tbody tr", has_text="ep00002").click()
        page.wait_for_function(f"document.body.dataset.episode === "
                               f"'{viewer_runs.STAT}/ep00002'")
        shoot(page, tmp_path, "viewer-damaged-run")
    assert errors == []


def test_an_exported_episode_opens_offline(runs, browser, tmp_path):
    from coordbench.viewer.export import export

    cond = runs["conds"]["constructs"]
    key = runs["keys"]["constructs"][0]
    out = export(runs["run"], f"{cond}/{key}", tmp_path / "episode.html")
    errors: list[str] = []
    requests: list[str] = []
    page = page_with_error_log(browser, errors)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.resolve().as_uri())
    page.wait_for_function(f"document.body.dataset.episode === '{cond}/{key}'")
    assert page.locator("#timeline .cell").count() > 0
    assert page.locator("#picture svg").count() == 1
    assert not page.locator("#sidebar").is_visible()
    page.click("#next")
    assert page.locator("#slider").input_value() == "1"
    shoot(page, tmp_path, "viewer-export")
    assert errors == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests


def _base_of(page, robot: int) -> str:
    return page.locator(f"#picture .robot[data-robot='{robot}'] g").first.get_attribute(
        "transform")


def test_physical_picture_follows_the_recorded_poses(runs, browser, tmp_path):
    # a copy of the run with the same episode as written before poses were recorded (1.4)
    run = tmp_path / "run"
    shutil.copytree(runs["run"], run)
    cond = runs["conds"]["physical"]
    src = run / "episodes" / cond / "seed0001.jsonl"
    lines = [ln for ln in src.read_text().splitlines() if '"physical_poses"' not in ln]
    head = json.loads(lines[0])
    head.update(schema_version="1.4", episode_id=f"{cond}/seed0002")
    (src.parent / "seed0002.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    errors: list[str] = []
    page = page_with_error_log(browser, errors)
    with Serving(run) as srv:
        open_episode(page, srv.url, cond, "seed0001")
        assert "Poses as recorded" in page.locator("#ep-replay").inner_text()
        assert page.locator("#picture .robot").count() == 2
        assert page.locator("#picture .robot .hand").count() == 2
        assert page.locator("#picture .body[data-body='object']").count() == 1
        assert "object z" in page.locator("#picture .body-label").first.text_content()
        assert page.locator("#picture .phase-box").count() == 3
        cmd = page.locator("#render-cmd").inner_text()
        assert f"coordbench physical render {run} --episode {cond}/seed0001 --out " in cmd
        # the slider steps through the pose samples; the robots move with it
        samples = int(page.locator("#slider").get_attribute("max")) + 1
        end = int(page.evaluate("state.episode.timeline.end.t"))
        assert samples == end // 5 + 1 + (end % 5 > 0)
        start = [_base_of(page, r) for r in (0, 1)]
        cursor = page.locator("#cursor").get_attribute("x1")
        page.locator("#slider").fill(str(samples - 1))
        assert f"control step {end} / {end}" in page.locator("#step-label").inner_text()
        assert [_base_of(page, r) for r in (0, 1)] != start
        assert page.locator("#cursor").get_attribute("x1") != cursor
        assert page.locator("#picture .phase-box.latched").count() == 3
        assert page.locator("#picture .trail").count() >= 2
        # a phase on the timeline jumps to the first sample at or after its latch
        page.locator("#timeline .phase-seg").nth(1).click()
        t2 = int(page.evaluate("state.episode.picture.static.latched[1].t"))
        step = int(page.evaluate("controlStep(state.episode, state.step)"))
        assert t2 <= step < t2 + 5
        assert "phase 2" in page.locator("#details").inner_text()
        page.keyboard.press("ArrowRight")
        assert int(page.evaluate("controlStep(state.episode, state.step)")) == min(step + 5, end)
        page.locator("#slider").fill(str(samples // 2))
        shoot(page, tmp_path, "viewer-physical-poses")
        # recorded before 1.5: the phase picture, with its reason, and no video command
        open_episode(page, srv.url, cond, "seed0002")
        assert "poses are recorded since 1.5" in page.locator("#ep-replay").inner_text()
        assert page.locator("#picture .robot").count() == 0
        assert page.locator("#picture .phase-box").count() == 3
        assert "no video" in page.locator("#render-cmd").inner_text()
        assert page.locator("#slider").get_attribute("max") == str(end)
        shoot(page, tmp_path, "viewer-physical-no-poses")
    assert errors == []


REPORT_SUITES = ("stat", "mecobench", "constructs", "physical")


def test_report_html_opens_offline_with_every_familys_tables_and_figures(runs, browser,
                                                                         tmp_path):
    # the run the viewer tests use: each family command rewrote report.html for all of them
    path = runs["run"] / "report.html"
    errors: list[str] = []
    requests: list[str] = []
    page = page_with_error_log(browser, errors)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    for suite in REPORT_SUITES:
        section = page.locator(f"section.family[data-suite='{suite}']")
        assert section.count() == 1, suite
        assert section.locator("table").count() >= 1, suite
        assert section.locator("table tbody tr").count() >= 1, suite
        assert section.locator("figure svg").count() >= 1, suite
        assert section.locator("figure figcaption").count() == section.locator(
            "figure svg").count(), suite
    # every contents link names an element of the page, and following one scrolls to it
    hrefs = [a.get_attribute("href") for a in page.locator("nav a").all()]
    assert hrefs and all(h.startswith("#") for h in hrefs)
    for h in hrefs:
        assert page.locator(f"[id='{h[1:]}']").count() == 1, h
    target = hrefs[len(hrefs) // 2]
    page.locator(f"nav a[href='{target}']").click()
    assert page.evaluate("location.hash") == target
    top = page.evaluate(f"document.getElementById({target[1:]!r}).getBoundingClientRect().top")
    # scrolled to it (to within a pixel: the browser rounds the scroll position)
    assert page.evaluate("window.scrollY") > 0 and -2 <= top < page.viewport_size["height"]
    # nothing sticks out of the page sideways: wide tables scroll inside their own box
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, tmp_path, "report-html")
    assert errors == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests


def test_a_study_page_shows_its_verdict_column_at_1400_px(browser, tmp_path):
    from coordbench.reproduce.study import Finding, Item, Study
    from coordbench.reproduce.write import write_study

    long = "a claim that runs on and on, " * 12
    study = Study("x", "A study", "preamble", [Item(
        "Table 1", "t", "p", "ours", findings=[
            Finding(f"x-finding-{k}", "Fig. 1", long, {"a": long}, long, k % 2 == 0,
                    note=long) for k in range(3)])])
    page_path = write_study(study, tmp_path, png=False)["html"]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(page_path.as_uri())
    header = page.locator("table").first.locator("th", has_text="verdict")
    box = header.bounding_box()
    page.close()
    assert box is not None and box["x"] + box["width"] <= 1400  # in view, no scrolling


def test_a_model_driven_robot_team_shows_its_skill_choices_and_calls(browser, tmp_path):
    import subprocess
    import sys

    from coordbench.llm.loopback import ScriptedServer
    from tests.test_physical_llm import follow_reply, models_file

    out = tmp_path / "run"
    with ScriptedServer(follow_reply) as server:  # the CLI in its own process: playwright
        # holds this thread's event loop
        res = subprocess.run([
            sys.executable, "-m", "coordbench", "physical", "eval", "--task", "Handover",
            "--policy", "llm", "--model", "scripted", "--models",
            str(models_file(tmp_path, server.base_url)), "--rollouts", "1", "--no-cache",
            "--out", str(out), "--json"], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
    (cond,) = json.loads((out / "manifest.json").read_text())["conditions"]
    errors: list[str] = []
    page = page_with_error_log(browser, errors)
    with Serving(out) as srv:
        open_episode(page, srv.url, cond, "seed0001", step=10_000)  # the last sample
        details = page.locator("#details").inner_text().lower()  # headings are set in caps
        page.close()
    import re

    chosen = re.search(r"skill choices by control step \d+ \((\d+)\)", details)
    calls = re.search(r"model calls by control step \d+ \((\d+) of (\d+)\)", details)
    assert chosen and int(chosen.group(1)) > 0 and "(suggested " in details
    assert calls and calls.group(1) == calls.group(2) != "0"  # at the end: every call
    assert "robot/skill" in details  # each call's role and phase, as in every family
    assert not errors, errors


# every text in the picture, as [x, y, w, h] in the svg's own units (labels inside marks, such
# as an agent's number in its circle, are left out: they sit on their own mark by design)
_LABEL_BOXES = """() => [...document.querySelectorAll('#picture-svg text')]
  .filter((t) => t.getAttribute('text-anchor') !== 'middle')
  .map((t) => { const b = t.getBBox(); return [b.x, b.y, b.width, b.height, t.textContent]; })"""


def _overlapping(boxes: list) -> list:
    return [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[:i]
            if a[0] + 0.5 < b[0] + b[2] and b[0] + 0.5 < a[0] + a[2]
            and a[1] + 0.5 < b[1] + b[3] and b[1] + 0.5 < a[1] + a[3]]


def test_map_labels_never_overlap_on_a_100_task_plane_or_a_household(runs, browser, tmp_path):
    from typer.testing import CliRunner

    from coordbench.cli import app

    out = tmp_path / "plane"
    res = CliRunner().invoke(app, ["stat", "eval", "--config", "5A-100T-50x30", "--policy",
                                   "greedy", "--episodes", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    cond = json.loads((out / "manifest.json").read_text())["conditions"]
    errors: list[str] = []
    page = page_with_error_log(browser, errors)
    drawn = 0
    with Serving(out) as srv:
        for step in (0, 5, 40):
            open_episode(page, srv.url, next(iter(cond)), "ep00000", step)
            boxes = page.evaluate(_LABEL_BOXES)
            assert not _overlapping(boxes), (step, _overlapping(boxes)[:5])
            drawn += sum(b[4].startswith("T") for b in boxes)
        shoot(page, tmp_path, "stat-plane-100")
    assert drawn > 150  # most of the 100 task labels find a free place
    with Serving(runs["run"]) as srv:
        for family in ("mecobench", "llm", "constructs", "constructs_d4"):
            key = runs["keys"][family][0]
            for step in (0, 3, 8):
                open_episode(page, srv.url, runs["conds"][family], key, step)
                boxes = page.evaluate(_LABEL_BOXES)
                assert len(boxes) >= 2 and not _overlapping(boxes), (family, step,
                                                                    _overlapping(boxes)[:5])
            shoot(page, tmp_path, f"map-{family}")
    assert not errors, errors
