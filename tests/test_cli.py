"""The CLI contract: command names, flags, JSON keys, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.metrics.stat import METRIC_NAMES
from tests.report_html import check_report_html

runner = CliRunner()


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                          text=True, timeout=300)


def test_stat_eval_json_contract(tmp_path):
    res = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "hungarian",
                              "--episodes", "100", "--layouts", "paper", "--seed", "0",
                              "--out", str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(payload) == set(METRIC_NAMES)
    assert set(payload["return"]) == {"mean", "ci95", "n", "lo", "hi"}
    assert payload["return"]["n"] == 100
    assert abs(payload["return"]["mean"] - 215.8) < 0.06
    r = payload["return"]  # the interval's ends beside its half-width
    assert r["lo"] < r["mean"] < r["hi"] and abs((r["hi"] - r["lo"]) / 2 - r["ci95"]) < 1e-9
    # a second run resumes: nothing new is played, the numbers are recomputed from disk
    again = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                "hungarian", "--out", str(tmp_path / "r"), "--json"])
    assert json.loads(again.stdout.strip().splitlines()[-1]) == payload


def test_stat_speed_json():
    res = runner.invoke(app, ["stat", "speed", "--config", "3A-6T-10x6", "--batch", "64",
                              "--seconds", "0.2", "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["steps_per_s"] > 0 and payload["batch"] == 64
    # the step alone is a part of the loop that also draws the actions
    assert payload["step_only_per_s"] > payload["steps_per_s"]


def test_stat_speed_sections_split_step_time():
    res = runner.invoke(app, ["stat", "speed", "--config", "3A-6T-10x6", "--batch", "256",
                              "--seconds", "0.3", "--sections", "--json"])
    assert res.exit_code == 0, res.output
    sec = json.loads(res.stdout)
    assert sec["threads"] == 1 and sec["batch"] == 256
    assert sec["step_ns"] == pytest.approx(sec["masks_ns"] + sec["observation_ns"]
                                           + sec["rest_ns"])
    # step() refreshes the masks too, and does far more besides (dynamics, rewards, resets)
    assert 0 < sec["masks_ns"] < sec["step_ns"]


def test_run_and_report_write_a_run_directory(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--out", str(out), "--configs", "3A-6T-5x3",
                              "--episodes", "10", "--cases", "12", "--physical", "2"])
    assert res.exit_code == 0, res.output
    assert "hungarian" in res.stdout
    report = (out / "report.md").read_text()
    assert "| 3A-6T-5x3 | hungarian | 10 |" in report and "Welch" in report
    results = json.loads((out / "results.json").read_text())
    suites = [c["suite"] for c in results["conditions"].values()]
    assert suites.count("stat") == 4 and suites.count("mecobench") == 4
    assert suites.count("constructs") == 3 and suites.count("physical") == 20
    # the console shows every family's table, not only STAT's and the household's
    for title in ("STAT scripted allocators", "MECoBench household teams", "constructs:",
                  "physical collaboration"):
        assert title in res.stdout
    written = (out / "report.md").read_text()
    assert written.startswith("# coordbench report: STAT, MECoBench household teams, "
                              "coordination constructs, physical collaboration")
    html = check_report_html(out / "report.html",
                             {"stat", "mecobench", "constructs", "physical"})
    assert "100.0% [" in html  # success rates carry their Wilson interval
    (out / "report.md").unlink()
    (out / "report.html").unlink()
    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0
    # `report` rebuilds exactly what `run` wrote, the physical section included
    assert (out / "report.md").read_text() == written
    assert "## Physical collaboration" in written
    assert not (out / "report.html").exists()  # only with --html
    res = runner.invoke(app, ["report", str(out), "--html"])
    assert res.exit_code == 0 and "report.html" in res.stdout
    check_report_html(out / "report.html", {"stat", "mecobench", "constructs", "physical"})


def test_schema_command(tmp_path):
    res = runner.invoke(app, ["schema"])
    assert res.exit_code == 0 and json.loads(res.stdout)["schema_version"]


def test_user_errors_are_one_line_without_traceback(tmp_path):
    cases = [
        (["stat", "eval", "--config", "7A-XX", "--policy", "random"], "unknown STAT config"),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", "best"], "unknown STAT policy"),
        (["stat", "speed", "--batch", "0"], "--batch must be >= 1"),
        (["stat", "speed", "--sections", "--no-obs"], "--sections times the observations"),
        (["report", str(tmp_path)], "no manifest.json"),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", "random", "--layouts", "grid",
          "--out", str(tmp_path / "x")], "unknown layout kind"),
    ]
    for args, needle in cases:
        res = cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_mecobench_run_json_contract(tmp_path):
    res = runner.invoke(app, ["mecobench", "run", "--suite", "v1", "--structure", "parallel",
                              "--team", "2", "--protocol", "broadcast", "--agents", "rule",
                              "--prior", "full", "--limit", "8", "--out", str(tmp_path / "m"),
                              "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    for key in ("SR", "CR", "AUC", "DOL", "CAR", "HFR", "spatial_error"):
        assert set(payload[key]) == {"mean", "ci95", "n", "lo", "hi"}
    assert payload["cases"] == 8
    assert payload["HFR"]["mean"] is None and payload["spatial_error"]["mean"] is None
    assert 0 < payload["SR"]["mean"] <= 1


def test_mecobench_oracle_ignores_protocol_and_solves_examples(tmp_path):
    res = runner.invoke(app, ["mecobench", "run", "--structure", "sequential", "--team", "2",
                              "--protocol", "discuss", "--agents", "oracle",
                              "--out", str(tmp_path / "o"), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert payload["cases"] == 3 and payload["SR"]["mean"] == 1.0
    assert payload["HFR"]["mean"] == 0.0


def test_mecobench_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"task_id": 7, "init_graph": {"nodes": [], "edges": []}}]')
    cases = [
        (["mecobench", "run", "--protocol", "shout"], "unknown protocol"),
        (["mecobench", "run", "--tasks", str(bad), "--out", str(tmp_path / "x")],
         "bad.json[0] (task_id 7)"),
        (["mecobench", "run", "--suite", "v9"], "unknown suite"),
    ]
    for args, needle in cases:
        res = cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_progress_is_printed_as_lines_when_stderr_is_not_a_terminal(tmp_path):
    res = cli("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes", "3",
              "--out", str(tmp_path / "p"))
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.strip().splitlines() if ln.startswith("3A-6T-5x3")]
    # a start line, a line at most every 10 s (none on a quick run), a done line
    assert lines[0] == "3A-6T-5x3 greedy: 0/3 episodes, 0 s started"
    assert lines[-1].startswith("3A-6T-5x3 greedy: 3/3 episodes, ")
    assert lines[-1].endswith(" done") and "━" not in res.stderr
    # the family command writes the whole report itself
    assert {"results.json", "report.md", "report.html"} <= {
        p.name for p in (tmp_path / "p").iterdir()}


def test_a_bad_file_in_another_condition_does_not_fail_the_command(tmp_path):
    out = tmp_path / "r"
    assert cli("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes",
               "2", "--out", str(out)).returncode == 0
    (cond,) = json.loads((out / "manifest.json").read_text())["conditions"]
    path = out / "episodes" / cond / "ep00000.jsonl"
    path.write_text(path.read_text()[:100])  # truncated: that condition's report cannot be made
    res = cli("stat", "eval", "--config", "3A-6T-5x3", "--policy", "random", "--episodes", "2",
              "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1])["return"]["n"] == 2
    assert "warning: report not rewritten" in res.stderr and "Traceback" not in res.stderr


def test_labels_tell_conditions_apart(tmp_path):
    from coordbench.report.figures import labels_for

    spec = {"suite": "stat", "config": "3A-6T-5x3", "policy": "greedy", "layouts": "paper",
            "seed": 0}
    entries = {"a": {"spec": spec}, "b": {"spec": {**spec, "layouts": "uniform"}},
               "c": {"spec": {**spec, "policy": "random"}}}
    labels = labels_for(entries)
    assert len(set(labels.values())) == 3
    assert "layouts=uniform" in labels["b"] and "random" in labels["c"]
    same = labels_for({"x": {"spec": spec}, "y": {"spec": spec}})
    assert same == {"x": "x", "y": "y"}  # identical specs: the condition names


NO_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("no torch on this install")
sys.meta_path.insert(0, Block())
sys.argv = ["coordbench", *sys.argv[1:]]
from coordbench.cli import main
main()
"""


def test_without_torch_studies_that_train_nothing_run_and_hints_name_the_extra(tmp_path):
    """On the install `make run` creates (no torch), `reproduce mecobench --quick` works, and
    a command that needs torch says which extra to install, brackets included."""

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", NO_TORCH, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    res = run("reproduce", "mecobench", "--quick", "--limit", "1", "--out", "r", "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["paper"] == "mecobench"
    res = run("stat", "train", "--config", "3A-6T-5x3", "--algo", "qmix")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "pip install 'coordbench[learn]'" in res.stderr


def test_json_keeps_stdout_to_its_line_and_progress_on_stderr(tmp_path):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "coordbench", "stat", "eval", "--config",
                          "3A-6T-5x3", "--policy", "greedy", "--episodes", "3", "--out",
                          str(tmp_path / "r"), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.strip().splitlines()  # stdout: the JSON line alone
    assert json.loads(line)["return"]["n"] == 3
    # a sign of life on stderr, also with --json (plain lines: stderr is not a terminal)
    assert "3/3 episodes" in res.stderr and "done" in res.stderr


def test_progress_lines_give_a_rate_and_the_time_left():
    from coordbench.commands.common import pace

    assert pace(10, 30, 5.0) == ", 2/s, about 15 s left"
    assert pace(10, 3000, 5.0) == ", 2/s, about 25 min left"
    assert pace(1, 100_000, 10.0) == ", 0.1/s, about 277.8 h left"
    assert pace(0, 10, 5.0) == "" and pace(10, 0, 5.0) == ""  # nothing played, nothing left


def test_a_changed_plan_gets_its_own_default_folder_and_a_replay_says_so(tmp_path):
    import subprocess
    import sys

    from coordbench.cli import default_run_dir

    base = dict(configs=None, policies=None, episodes=None, layouts=None, seed=None,
                household=True, physical=None, cases=None, families=None)
    assert default_run_dir(**base) == Path("runs/default")
    assert default_run_dir(**{**base, "cases": 12, "physical": 2, "episodes": 10}) == Path(
        "runs/default-episodes10-physical2-cases12")
    assert default_run_dir(**{**base, "household": False, "families": "stat,physical"}) == \
        Path("runs/default-no-household-familiesstat+physical")
    # values a folder name cannot hold as they are get a digest: two plans never share one
    a = default_run_dir(**{**base, "policies": "runs/train_a/p.pt"})
    b = default_run_dir(**{**base, "policies": "runs/train/a/p.pt"})
    assert a != b and a.name.startswith("default-policiesruns+train+a+p.pt-")
    cmd = [sys.executable, "-m", "coordbench", "run", "--families", "stat", "--configs",
           "3A-6T-5x3", "--policies", "greedy", "--episodes", "3"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "runs" / "default-configs3A-6T-5x3-policiesgreedy-episodes3-"
            "familiesstat" / "manifest.json").is_file()
    assert "nothing new was played" not in first.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert again.returncode == 0 and "nothing new was played" in again.stderr


def test_a_model_episode_shows_its_calls_while_it_plays(tmp_path, monkeypatch):
    import time

    from coordbench.commands import common
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_team import household_reply

    def slow(body):  # a slow model: one episode takes seconds
        time.sleep(0.4)
        return household_reply(body)

    monkeypatch.setattr(common, "LINE_EVERY_S", 0.5)
    with ScriptedServer(slow) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  slow:\n    base_url: {server.base_url}\n"
                          "    model: slow-1\n    timeout_s: 10\n")
        res = runner.invoke(app, ["mecobench", "run", "--agents", "llm", "--model", "slow",
                                  "--models", str(models), "--limit", "1", "--max-steps", "5",
                                  "--no-cache", "--out", str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    playing = [ln for ln in res.stderr.splitlines() if ln.endswith(" playing")]
    # before its one episode ended, progress lines counted the calls as they were made
    assert len(playing) >= 2 and all("0/1 episodes" in ln for ln in playing)
    calls = [int(ln.split("calls ")[1].split()[0]) for ln in playing]
    assert calls == sorted(calls) and calls[0] >= 1 and calls[-1] > calls[0]
    json.loads(res.stdout.strip().splitlines()[-1])  # stdout keeps its one JSON line
