"""Counterfactual failure attribution (`coordbench attribute`, docs/attribution.md): the
one-shot dial, the swap, the decisive-step search, the command on every engine family it
replays here, refusals, resumption, and model-driven seats against a loopback server."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from coordbench.agents.team.counterfactual import Swap, faults_off, swapped
from coordbench.agents.team.dials import Dials, Faults, parse_dials
from coordbench.attribution.search import decisive_step
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.errors import ConfigError
from coordbench.llm.loopback import ScriptedServer
from tests.cli_errors import error_line
from tests.scripted_team import household_reply

HOUSEHOLD = ["mecobench", "run", "--suite", "v1", "--protocol", "shared_memory", "--team",
             "agent_0=rule,agent_1=rule:fail_at=2,agent_2=rule", "--limit", "16"]


def _cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def household_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("attr") / "run"
    res = _cli(*HOUSEHOLD, "--out", out)
    assert res.exit_code == 0, res.output
    return out


def test_the_one_shot_dial_strikes_at_its_step_only():
    d = parse_dials(["fail_at=0"])
    assert d.active and d.used() == ["fail_at"] and d.label() == "fail_at0"
    assert not Dials().active and Dials().label() == ""
    f = Faults(Dials(fail_at=3), seed=7, agent=1)
    assert [f.hit("hallucination", t) for t in range(6)] == [False] * 3 + [True] + [False] * 2
    assert f.hit("perception", 3, 42) and not f.hit("message_loss", 3)
    for bad in (["fail_at=-1"], ["fail_at=x"], ["fail_at=1.5"]):
        with pytest.raises(ConfigError, match="fail_at") as e:
            parse_dials(bad)
        assert "\n" not in str(e.value)


def test_the_clean_reference_turns_one_seats_failures_off_from_its_step():
    f1, f0 = Faults(Dials(fail_at=3), 7, 1), Faults(Dials(fail_at=3), 7, 0)
    with swapped(Swap(1, 3)):
        assert faults_off(1, 3) and not faults_off(1, 2) and not faults_off(0, 5)
        assert not f1.hit("hallucination", 3) and f0.hit("hallucination", 3)
    with swapped(Swap(1, 4)):  # taken over after the failure: it has happened
        assert f1.hit("hallucination", 3)
    assert not faults_off(1, 9)  # outside a replay nothing changes
    with pytest.raises(ConfigError, match="--reference oracle: choose from"):
        Swap(0, 0, "oracle")


@settings(max_examples=200, deadline=None)
@given(steps=st.integers(1, 400), boundary=st.integers(-1, 399))
def test_binary_search_finds_the_last_rescuing_step_in_log_time(steps, boundary):
    boundary = min(boundary, steps - 1)
    asked: list[int] = []

    def rescues(s: int) -> bool:
        asked.append(s)
        return s <= boundary

    got = decisive_step(rescues, steps, "binary")
    assert got == (None if boundary < 0 else boundary)
    assert len(asked) <= 1 + math.ceil(math.log2(steps)) + 1
    assert decisive_step(lambda s: s <= boundary, steps, "all") == got


def test_attribute_names_the_injected_seat_and_step_and_writes_beside_the_run(household_run):
    episodes = _digest(household_run / "episodes")
    res = _cli("attribute", household_run, "--json")
    assert res.exit_code == 0, res.output
    results = json.loads(res.stdout)
    assert len(results) == 3  # every failed episode of the run
    named = [r for r in results if r["responsible"]]
    assert len(named) == 2
    for r in named:
        (who,) = r["responsible"]
        assert who["seat"] == "agent_1" and who["step"] == 2 and who["blame"] == 1.0
        assert set(who["rescue_rate"]) == {"mean", "ci95", "n", "lo", "hi"}
        assert who["rescue_rate"]["mean"] == 1.0 and who["rescue_rate"]["n"] == 1
        assert r["replays"] <= 1 + 3 * (math.ceil(math.log2(r["steps"] + 1)) + 1)
        assert r["calls"] == 0 and r["outcome"] == 0.0
    # replays never write into the run's episodes; results live in RUN/attribution/
    assert _digest(household_run / "episodes") == episodes
    stored = sorted(p.name for p in (household_run / "attribution").rglob("*.json"))
    assert stored == sorted(f"{r['episode'].rsplit('/', 1)[1]}.json" for r in results)
    # every step searched gives the same answer; a rerun redoes only a changed question
    res = _cli("attribute", household_run, "--steps", "all", "--json")
    assert [r["responsible"] for r in json.loads(res.stdout)] == \
        [r["responsible"] for r in results]
    again = _cli("attribute", household_run, "--steps", "all", "--json")
    first, second = json.loads(res.stdout), json.loads(again.stdout)
    assert not any(r["reused"] for r in first) and all(r["reused"] for r in second)
    assert [{**r, "reused": None} for r in second] == [{**r, "reused": None} for r in first]
    assert "stored" in _cli("attribute", household_run, "--steps", "all").output


def test_the_rule_reference_takes_the_seat_over(household_run):
    res = _cli("attribute", household_run, "--reference", "rule", "--json")
    assert res.exit_code == 0, res.output
    named = [r for r in json.loads(res.stdout) if r["responsible"]]
    assert named and all(x["seat"] == "agent_1" and x["reference"] == "rule"
                         for r in named for x in r["responsible"])
    line = error_line(["attribute", str(household_run), "--reference", "hungarian"],
                      household_run.parent)
    assert "--reference hungarian: a mecobench seat's references are clean, rule" in line


def test_a_replay_that_differs_is_refused_naming_the_step(household_run, tmp_path):
    import shutil

    run_dir = tmp_path / "tampered"
    shutil.copytree(household_run, run_dir, ignore=shutil.ignore_patterns("attribution"))
    run = RunDir.open(run_dir)
    (cond,) = run.conditions
    key = next(k for k in run.episode_keys(cond) if not run.load_episode(cond, k).end.success)
    path = run.episode_path(cond, key)
    lines = path.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if '"t":4' in line and "household_step" in line)
    step = json.loads(lines[k])
    step["actions"][0]["outcome"] = "too_far"
    lines[k] = json.dumps(step)
    original = path.read_text()
    path.write_text("\n".join(lines) + "\n")
    res = _cli("attribute", run_dir, "--episode", f"{cond}/{key}")
    assert res.exit_code == 2
    (line,) = [x for x in res.output.splitlines() if "differs" in x]
    assert f"{key}: its replay differs from the recording at step 4" in line
    # the recording restored, it is attributed: a stored answer holds for one file only
    path.write_text(original)
    res = _cli("attribute", run_dir, "--episode", f"{cond}/{key}", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["reused"] is False
    # a header that is not the replay's (another seed) is refused at step 0
    head, *rest = original.splitlines()
    header = json.loads(head)
    header["seed"] += 1
    path.write_text("\n".join([json.dumps(header), *rest]) + "\n")
    res = _cli("attribute", run_dir, "--episode", f"{cond}/{key}")
    assert res.exit_code == 2 and "differs from the recording at step 0 (header (seed))" \
        in res.output
    path.write_text(original)
    ok = next(k for k in run.episode_keys(cond) if run.load_episode(cond, k).end.success)
    assert f"episode {cond}/{ok} did not fail" in error_line(
        ["attribute", str(run_dir), "--episode", ok], tmp_path)
    assert "--metric bogus: a mecobench episode has no such metric; choose from" in \
        error_line(["attribute", str(run_dir), "--metric", "bogus"], tmp_path)


def test_a_failure_at_the_step_the_episode_ended_is_found(tmp_path):
    # every planner stops at step 0 (it believes the work done): the episode ends there,
    # and taking a seat over at that very step rescues it
    out = tmp_path / "c0"
    assert _cli("constructs", "run", "--planner", "decentralized", "--protocol", "broadcast",
                "--dial", "fail_at=0", "--limit", "4", "--out", out).exit_code == 0
    results = json.loads(_cli("attribute", out, "--json").stdout)
    assert results and all(r["steps"] == 0 for r in results)
    named = [r for r in results if r["responsible"]]
    assert named and all(x["step"] == 0 for r in named for x in r["responsible"])


def test_dials_without_the_one_shot_step_record_as_before():
    assert "fail_at" not in Dials(perception=0.1).as_dict()
    assert Dials(fail_at=0).as_dict()["fail_at"] == 0
    assert Dials(**Dials(memory=8).as_dict()) == Dials(memory=8)


def test_a_run_without_failures_says_so(tmp_path):
    out = tmp_path / "clean"
    assert _cli("mecobench", "run", "--suite", "v1", "--limit", "3", "--out", out
                ).exit_code == 0
    res = _cli("attribute", out, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    assert "no failed episode to attribute" in res.output
    assert "nowhere" in error_line(["attribute", str(tmp_path / "nowhere")], tmp_path)


def test_constructs_and_stat_are_attributed(tmp_path):
    out = tmp_path / "c"
    assert _cli("constructs", "run", "--planner", "decentralized", "--protocol", "broadcast",
                "--team", "agent_0=rule,agent_1=rule:fail_at=2", "--limit", "4", "--out", out
                ).exit_code == 0
    results = json.loads(_cli("attribute", out, "--json").stdout)
    assert results and all(r["responsible"][0]["seat"] == "agent_1" for r in results)
    assert all(abs(r["responsible"][0]["step"] - 2) <= 1 for r in results)
    out = tmp_path / "s"
    assert _cli("stat", "eval", "--config", "3A-6T-5x3", "--policy", "rule", "--protocol",
                "broadcast", "--team", "agent_0=rule,agent_1=rule,agent_2=rule:fail_at=0",
                "--episodes", "6", "--out", out).exit_code == 0
    # every STAT episode succeeds: underperformance is a metric below a threshold
    res = _cli("attribute", out, "--metric", "throughput", "--threshold", "0.5", "--json")
    assert res.exit_code == 0, res.output
    for reference in ("rule", "hungarian"):
        res = _cli("attribute", out, "--metric", "throughput", "--threshold", "0.5",
                   "--reference", reference, "--json")
        assert res.exit_code == 0, res.output
        assert all(x["reference"] == reference for r in json.loads(res.stdout)
                   for x in r["responsible"])
    # an allocator team: the per-step Hungarian seat takes a seat over
    out = tmp_path / "alloc"
    assert _cli("stat", "eval", "--config", "5A-25T-50x30", "--policy", "random",
                "--episodes", "2", "--episode-limit", "120", "--out", out).exit_code == 0
    results = json.loads(_cli("attribute", out, "--json").stdout)
    assert len(results) == 2 and all(r["responsible"] for r in results)
    assert {x["reference"] for r in results for x in r["responsible"]} == {"hungarian"}
    assert "STAT allocator team seat's references are clean, hungarian" in error_line(
        ["attribute", str(out), "--reference", "rule"], tmp_path)


def test_model_seats_estimate_count_and_cache_their_calls(tmp_path):
    import shutil

    with ScriptedServer(household_reply) as server:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                          "    model: scripted-1\n    timeout_s: 2\n")
        cache = tmp_path / "cache.sqlite"
        out = tmp_path / "run"
        res = _cli("mecobench", "run", "--team", "agent_0=llm:scripted,agent_1=rule",
                   "--protocol", "broadcast", "--models", models, "--max-steps", "4",
                   "--no-cache", "--out", out, "--limit", "1")
        assert res.exit_code == 0, res.output
        run = RunDir.open(out)
        (cond,) = run.conditions
        (traj,) = run.load_episodes(cond)
        recorded = len([e for e in traj.events if e.type == "model_call"])
        assert recorded > 0 and not traj.end.success
        before = len(server.requests)
        res = _cli("attribute", out, "--models", models, "--cache-path", cache, "--json")
        assert res.exit_code == 0, res.output
        (first,) = json.loads(res.stdout)
        # estimated before: at most 1 + seats x (ceil(log2(T + 1)) + 1) replays, each
        # calling what the recording called
        steps = first["steps"]
        most = 1 + 2 * (math.ceil(math.log2(steps + 1)) + 1)
        assert f"at most {most} replays, {most * recorded} model calls" in res.output
        # counted after: the plain replay calls again (nothing was cached); replays that
        # repeat a prompt are served by the cache
        assert 0 < first["calls"] == len(server.requests) - before
        assert first["calls"] < most * recorded
        shutil.rmtree(out / "attribution")
        res = _cli("attribute", out, "--models", models, "--cache-path", cache, "--json")
        (second,) = json.loads(res.stdout)
        assert second["calls"] == 0 and len(server.requests) == before + first["calls"]
        assert second["responsible"] == first["responsible"]
        # a stored answer is reused: nothing to estimate, nothing replayed
        res = _cli("attribute", out, "--models", models, "--cache-path", cache)
        assert "model calls" not in res.output and "stored" in res.output
        assert len(server.requests) == before + first["calls"]


def test_results_do_not_depend_on_the_executor(household_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(household_run, copy, ignore=shutil.ignore_patterns("attribution"))
    local = json.loads(_cli("attribute", household_run, "--json").stdout)
    res = _cli("attribute", copy, "--executor", "process", "--workers", "2", "--json")
    assert res.exit_code == 0, res.output
    assert [r["responsible"] for r in json.loads(res.stdout)] == \
        [r["responsible"] for r in local]
