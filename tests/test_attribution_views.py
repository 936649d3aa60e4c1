"""Where counterfactual attribution shows: the report's "who and when" section and
results.json's "attribution", the viewer's episode payload and its timeline marker, and
`load_run(...).attribution()` (and `coordbench export`'s attribution table).

One small attributed run is built once: a MECoBench rule team under shared_memory whose
agent_1 fails at step 2 (`rule:fail_at=2`); of its 16 cases three fail, two of them rescued
by taking agent_1 over from step 2 on, one by no single seat.
"""

from __future__ import annotations

import json
import shutil
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from coordbench.attribution.run import read_results
from coordbench.attribution.table import by_condition
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.data import ATTRIBUTION_COLUMNS, export, load_run
from coordbench.viewer.export import html as export_html
from coordbench.viewer.server import Viewer, make_server, static_text, url_of
from tests.report_html import check_report_html

TEAM = "agent_0=rule,agent_1=rule:fail_at=2,agent_2=rule"
RESCUED = ("case0042", "case0077")  # agent_1 from step 2
UNEXPLAINED = "case0029"  # no single seat rescues it
SUCCEEDED = "case0000"


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """{"run": the attributed run, "before": its report.md and results.json as written
    before `coordbench attribute`, "cond": its condition}."""
    run = tmp_path_factory.mktemp("attributed") / "m"
    _cli("mecobench", "run", "--out", str(run), "--suite", "v1", "--protocol", "shared_memory",
         "--team", TEAM, "--limit", "16")
    before = {"md": (run / "report.md").read_text(),
              "results": json.loads((run / "results.json").read_text())}
    _cli("attribute", str(run))
    _cli("report", str(run))  # rebuilds report.md, results.json and (it has one) report.html
    cond = next(iter(RunDir.open(run).conditions))
    return {"run": run, "before": before, "cond": cond}


def _copy(built: dict, dest: Path, attribution: bool = True) -> Path:
    out = dest / "copy"
    shutil.copytree(built["run"], out, ignore=None if attribution else
                    shutil.ignore_patterns("attribution"))
    return out


# -- report ------------------------------------------------------------------------------------

def test_report_has_the_who_and_when_section_after_the_families(built):
    md = (built["run"] / "report.md").read_text()
    assert "## Who and when (counterfactual attribution)" in md
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[-1] == "## Who and when (counterfactual attribution)"  # after the families
    section = md[md.index("## Who and when"):]
    assert f"### {built['cond']}" in section
    assert "3 failed episodes attributed; 1 rescued by no single seat." in section
    # two of three: 67% with Wilson's interval, blame 2/3, decisive step 2 of 20 steps
    assert "| agent_1 | 67% [21%, 94%] (n=3) | 0.67 | 2 | 0.10 |" in section
    for seat in ("agent_0", "agent_2"):
        assert f"| {seat} |" not in section
    # the family's sections are still all there, as before attribution
    assert md[:md.index("## Who and when")].rstrip() == built["before"]["md"].rstrip()
    # one self-contained page holding every table of report.md, the attribution's too
    page = check_report_html(built["run"] / "report.html", {"mecobench"})
    assert 'id="who-and-when-counterfactual-attribution"' in page
    assert '<section class="attribution">' in page
    assert "67% [21%, 94%] (n=3)" in page
    assert page.index('class="family"') < page.index('class="attribution"')


def test_results_json_gains_the_attribution_table_only(built):
    results = json.loads((built["run"] / "results.json").read_text())
    assert set(results) == {"generated", "conditions", "attribution"}
    assert results["conditions"] == built["before"]["results"]["conditions"]
    table = results["attribution"]
    assert table == json.loads(json.dumps(by_condition(read_results(built["run"]))))
    row = table[built["cond"]]
    assert (row["episodes"], row["unexplained"]) == (3, 1)
    seat = row["seats"]["agent_1"]
    assert seat["responsible"]["n"] == 3
    assert seat["responsible"]["mean"] == pytest.approx(2 / 3)
    assert seat["step_median"] == 2
    assert set(row["seats"]) == {"agent_1"}


def test_a_run_never_attributed_has_no_section_nor_key(built, tmp_path):
    assert "Who and when" not in built["before"]["md"]
    assert set(built["before"]["results"]) == {"generated", "conditions"}
    from coordbench.report.compose import compose

    rep = compose(RunDir.open(_copy(built, tmp_path, attribution=False)))
    assert "Who and when" not in rep.markdown
    assert "attribution" not in json.loads(rep.results_json())
    assert rep.who_when == ""


# -- viewer ------------------------------------------------------------------------------------

def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def test_episode_endpoint_carries_the_decisive_step(built):
    server, viewer = make_server(built["run"], 0)
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    try:
        base = url_of(server)
        name = next(iter(viewer.runs))

        def episode(key: str) -> dict:
            q = urllib.parse.urlencode({"run": name, "cond": built["cond"], "key": key})
            return _get(f"{base}api/episode?{q}")

        for key in RESCUED:
            ep = episode(key)
            (r,) = ep["attribution"]["responsible"]
            assert (r["seat"], r["agent"], r["step"]) == ("agent_1", 1, 2)
            assert r["reference"] == "clean" and r["blame"] == 1.0
            assert r["rescue_rate"]["mean"] == 1.0
            # the marker's cell exists: agent_1's lane at step 2
            assert any(c["agent"] == 1 and c["t"] == 2 for c in ep["timeline"]["cells"])
        assert episode(UNEXPLAINED)["attribution"]["responsible"] == []
        assert episode(SUCCEEDED)["attribution"] is None  # never attributed: nothing drawn
    finally:
        server.shutdown()
        server.server_close()
        viewer.metrics.close()
        th.join(timeout=10)


def test_payload_follows_a_later_attribution_and_a_refusal(built, tmp_path):
    run = _copy(built, tmp_path)
    viewer = Viewer(run)
    try:
        name = next(iter(viewer.runs))
        cond = built["cond"]

        def payload() -> dict:
            return json.loads(viewer.episode_bytes(name, cond, SUCCEEDED))

        assert payload()["attribution"] is None  # cached now
        path = run / "attribution" / cond / f"{SUCCEEDED}.json"
        path.write_text(json.dumps({"episode": f"{cond}/{SUCCEEDED}", "condition": cond,
                                    "key": SUCCEEDED, "refused": "step 3 differs",
                                    "question": {}}))
        assert payload()["attribution"]["refused"] == "step 3 differs"
        # a refusal is left out of the DataFrame
        frame = load_run(run).attribution()
        assert SUCCEEDED not in set(frame["key"])
    finally:
        viewer.metrics.close()


def test_page_draws_the_marker_from_the_payload(built):
    js = static_text("app.js")
    assert "ep.attribution" in js
    assert "decisive step (counterfactual)" in js
    timeline = js[js.index("function renderTimeline("):js.index("function renderPhysicalTimeline(")]
    assert "decisiveSteps(ep)" in timeline and "decisive-step" in timeline
    assert 'id="ep-attribution"' in static_text("index.html")
    # the self-contained export inlines the payload the script draws from
    page = export_html(RunDir.open(built["run"]), built["cond"], RESCUED[0])
    data = page[page.index('<script id="cb-data"'):]
    data = json.loads(data[data.index(">") + 1:data.index("</script>")])
    (r,) = data["episode"]["attribution"]["responsible"]
    assert (r["seat"], r["step"]) == ("agent_1", 2)
    assert "decisiveSteps(ep)" in page


# -- load_run ----------------------------------------------------------------------------------

def test_load_run_attribution_rows(built):
    frame = load_run(built["run"]).attribution()
    assert list(frame.columns) == list(ATTRIBUTION_COLUMNS) == [
        "condition", "episode_id", "key", "outcome", "seat", "step", "reference", "blame",
        "rescue_rate", "rescue_lo", "rescue_hi", "replays", "calls"]
    assert sorted(frame["key"]) == sorted([*RESCUED, UNEXPLAINED])
    hit = frame[frame["key"].isin(RESCUED)]
    assert set(hit["seat"]) == {"agent_1"} and set(hit["step"]) == {2}
    assert set(hit["reference"]) == {"clean"} and set(hit["blame"]) == {1.0}
    assert (hit["rescue_lo"] < hit["rescue_rate"]).all() and (hit["rescue_hi"] == 1.0).all()
    assert set(hit["episode_id"]) == {f"{built['cond']}/{k}" for k in RESCUED}
    assert (frame["condition"] == built["cond"]).all() and (frame["outcome"] == 0.0).all()
    (none,) = frame[frame["key"] == UNEXPLAINED].itertuples()
    assert none.seat is None and pd.isna(none.step) and none.replays > 0
    # episode_id joins the episodes frame
    eps = load_run(built["run"]).episodes()
    assert set(frame["episode_id"]) <= set(eps["episode_id"])


def test_never_attributed_is_empty_and_export_writes_attribution_when_present(built,
                                                                              tmp_path):
    plain = _copy(built, tmp_path, attribution=False)
    frame = load_run(plain).attribution()
    assert frame.empty and list(frame.columns) == list(ATTRIBUTION_COLUMNS)
    written = {p.name for p in export(load_run(plain), "csv", tmp_path / "plain")}
    assert "attribution.csv" not in written and "episodes.csv" in written
    out = tmp_path / "tables"
    _cli("export", str(built["run"]), "--out", str(out))
    table = pd.read_csv(out / "attribution.csv")
    assert list(table.columns) == list(ATTRIBUTION_COLUMNS) and len(table) == 3
