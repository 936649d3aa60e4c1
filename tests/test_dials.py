"""Imperfect offline minds: every dial at 0 plays exactly today's rule minds; each dial makes
its failure happen at its rate; bad dials are one line."""

import json

import pytest
from typer.testing import CliRunner

from coordbench.agents.team.dials import Dials, Faults, parse_dials, profile
from coordbench.cli import app
from coordbench.core.trajectory import HouseholdStepEvent, MessageEvent
from coordbench.errors import ConfigError
from coordbench.metrics import household as H
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import select
from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
from coordbench.suites.mecobench.instances import load_suite
from tests.cli_errors import error_line

ZERO = Dials()
_TASKS = {}


def v1_tasks(structure):
    if not _TASKS:
        for t in load_suite("v1"):
            _TASKS.setdefault(t.structure, []).append(t)
    return _TASKS[structure]


def _events(traj):
    return [e.model_dump(exclude={"created"}) for e in traj.events]


def _same_but_dials(a, b):
    assert _events(a) == _events(b)
    pa = dict(a.header.params)
    pb = dict(b.header.params)
    assert pb.pop("dials") == ZERO.as_dict() and "dials" not in pa
    assert pa == pb


@pytest.mark.parametrize(("structure", "team", "protocol"), [
    ("parallel", 3, "broadcast"), ("parallel", 2, "leader"), ("parallel", 2, "shared_memory"),
    ("sequential", 2, "discuss"), ("sequential", 2, "none")])
def test_household_minds_with_every_dial_at_zero_play_exactly_as_before(structure, team,
                                                                       protocol):
    for k, task in enumerate(v1_tasks(structure)[:4]):
        plain = run_case(task, HouseholdSpec(structure, team, protocol), k, "x")
        dialed = run_case(task, HouseholdSpec(structure, team, protocol, dials=ZERO), k, "x")
        _same_but_dials(plain, dialed)


@pytest.mark.parametrize(("planner", "protocol"), [
    ("central", None), ("decentralized", None), ("decentralized_comm", None),
    ("decentralized", "broadcast"), ("decentralized", "leader")])
def test_construct_planners_with_every_dial_at_zero_play_exactly_as_before(planner, protocol):
    for raw in select("rep240")[::12]:
        plain = run_construct(raw, ConstructSpec(planner, "rule", protocol=protocol), "x")
        dialed = run_construct(raw, ConstructSpec(planner, "rule", protocol=protocol,
                                                  dials=Dials(perception=0, memory=0)), "x")
        assert _events(plain) == _events(dialed)


def test_stat_rule_minds_with_every_dial_at_zero_play_exactly_as_before(tmp_path):
    from coordbench.core.rundir import RunDir

    for how in ([], ["--dial", "perception=0", "--dial", "message_loss=0"]):
        res = CliRunner().invoke(app, ["stat", "eval", "--config", "3A-6T-5x3", "--policy",
                                       "rule", "--protocol", "broadcast", "--episodes", "3",
                                       *how, "--out", str(tmp_path / str(len(how))), "--json"])
        assert res.exit_code == 0, res.output
    runs = [RunDir.open(tmp_path / str(n)) for n in (0, 4)]
    (a,), (b,) = (list(r.conditions) for r in runs)
    assert b.endswith("_dials-zero")
    for x, y in zip(runs[0].load_episodes(a), runs[1].load_episodes(b), strict=True):
        _same_but_dials(x, y)


def _household(dials, structure="parallel", team=2, protocol="broadcast", n=12):
    return [run_case(task, HouseholdSpec(structure, team, protocol, dials=dials), k, "x")
            for k, task in enumerate(v1_tasks(structure)[:n])]


def test_protocol_violations_are_recorded_at_their_rate():
    trs = _household(Dials(protocol_violation=0.2))
    decisions = sum(len(e.actions) for t in trs for e in t.steps(HouseholdStepEvent))
    failed = sum(H.protocol_failures(t) for t in trs)
    # a direct count: the injected rate comes back within binomial noise
    rate = failed / decisions
    assert decisions > 200 and abs(rate - 0.2) < 3 * (0.2 * 0.8 / decisions) ** 0.5
    assert all(t.header.params["dials"]["protocol_violation"] == 0.2 for t in trs)


def test_hallucination_makes_false_completion_claims_and_message_cost_costs_tokens():
    plain = _household(None)
    trs = _household(Dials(hallucination=0.1, message_cost=7))
    assert not any(H.hallucinated_completion(t) for t in plain)
    assert sum(H.hallucinated_completion(t) for t in trs) >= 8
    msgs = [m for t in trs for m in t.steps(MessageEvent)]
    assert msgs and all(m.tokens == 7 for m in msgs)
    assert all(H.tokens_per_step(t) > 0 for t in trs)
    done_notes = [m for m in msgs if "DONE " in m.content]
    assert done_notes  # it tells its teammates its claimed object is placed


def test_perception_misreads_and_memory_forgets():
    plain = _household(None, "parallel", 2, "none")
    misread = _household(Dials(perception=0.3), "parallel", 2, "none")
    assert sum(H.wrong_class_grabs(t) for t in misread) > sum(H.wrong_class_grabs(t)
                                                            for t in plain)
    forgetful = _household(Dials(memory=1), "parallel", 2, "broadcast")
    base = _household(None, "parallel", 2, "broadcast")
    steps = sum(len(t.steps(HouseholdStepEvent)) for t in forgetful)
    assert steps > sum(len(t.steps(HouseholdStepEvent)) for t in base)


def test_message_loss_raises_construct_contention():
    raws = [r for r in select("rep240") if r["coordbench_construct"]["construct"] == "D3"]

    def contention(dials):
        from coordbench.metrics.constructs import score_d3

        vals = [score_d3(run_construct(raw, ConstructSpec("decentralized_comm", "rule",
                                                          dials=dials), "x")) for raw in raws]
        return sum(v for v in vals if v is not None) / len(vals)
    assert contention(Dials(message_loss=1.0)) < contention(None)


def test_construct_hallucination_is_a_normal_stop_and_violation_a_protocol_failure():
    from coordbench.metrics.constructs import termination_key

    raws = select("rep240")[::6]
    stops = [termination_key(run_construct(r, ConstructSpec(
        "central", "rule", dials=Dials(hallucination=0.2)), "x")) for r in raws]
    assert stops.count("normal_stop") > len(raws) / 2
    fails = [termination_key(run_construct(r, ConstructSpec(
        "central", "rule", dials=Dials(protocol_violation=0.2)), "x")) for r in raws]
    assert fails.count("protocol_failure") > len(raws) / 2


def test_draws_are_deterministic_and_uniform():
    f = Faults(Dials(perception=0.25), "7/task", 1)
    hits = [f.hit("perception", t, 3) for t in range(4000)]
    assert hits == [Faults(Dials(perception=0.25), "7/task", 1).hit("perception", t, 3)
                    for t in range(4000)]
    assert abs(sum(hits) / 4000 - 0.25) < 0.03
    assert not any(Faults(ZERO, 0, 0).hit("perception", t) for t in range(100))


@pytest.mark.parametrize(("items", "needle"), [
    (["perception=1.5"], "--dial perception=1.5: a rate must be a number in [0, 1]"),
    (["perception=-0.1"], "a rate must be a number in [0, 1]"),
    (["perception=nan"], "a rate must be a number in [0, 1]"),
    (["hallucination=x"], "--dial hallucination=x: must be a number in [0, 1]"),
    (["memory=-2"], "--dial memory=-2: must be a whole number >= 0"),
    (["memory=1.5"], "--dial memory=1.5: must be a whole number >= 0"),
    (["telepathy=0.1"], "--dial telepathy: unknown failure; choose from perception"),
    (["perception"], "write NAME=VALUE"),
])
def test_bad_dials_are_one_clear_line(items, needle):
    with pytest.raises(ConfigError) as e:
        parse_dials(items)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_bad_dials_from_the_commands(tmp_path):
    cases = [
        (["mecobench", "run", "--dial", "perception=2"], "a rate must be a number in [0, 1]"),
        (["constructs", "run", "--dial", "bogus=0.1"], "--dial bogus: unknown failure"),
        (["constructs", "run", "--dial", "memory=3"],
         "--dial memory: construct rule planners"),
        (["stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--dial",
          "perception=0.1"], "--dial is for --policy rule, not greedy"),
        (["mecobench", "run", "--agents", "oracle", "--dial", "perception=0.1"],
         "--dial is for --agents rule, not oracle"),
    ]
    for args, needle in cases:
        assert needle in error_line([*args, "--out", str(tmp_path / "x")], tmp_path)
    assert not (tmp_path / "x").exists()


def test_unknown_profile_is_one_line():
    with pytest.raises(ConfigError, match="unknown offline profile 'sloppy'; choose from rule"):
        profile("sloppy")
    assert profile("imperfect").active and not profile("rule").active


def test_dials_are_recorded_and_part_of_the_condition(tmp_path):
    res = CliRunner().invoke(app, ["mecobench", "run", "--suite", "v1", "--limit", "2",
                                   "--dial", "perception=0.1", "--dial", "memory=5", "--out",
                                   str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    (cond, fields), = manifest["conditions"].items()
    assert cond.endswith("_dials-perception0.1-memory5")
    assert fields["dials"]["perception"] == 0.1 and fields["dials"]["memory"] == 5


def test_a_study_played_by_imperfect_offline_agents_is_labelled_as_such(tmp_path):
    res = CliRunner().invoke(app, ["reproduce", "cocobench", "--quick", "--offline-agents",
                                   "imperfect", "--out", str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "r" / "reproduce.md").read_text()
    assert "made imperfect (offline profile `imperfect`" in text and "not a model" in text
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    for cond, fields in manifest["conditions"].items():
        rule = fields["agents"] == "rule"
        assert ("_dials-" in cond) == rule, cond
        if rule:  # construct planners forget nothing: the profile's memory dial is off
            assert fields["dials"]["memory"] == 0 and fields["dials"]["perception"] == 0.05
    findings = {f["id"]: f for f in json.loads(res.stdout.strip().splitlines()[-1])["findings"]}
    # rule planners cannot break the protocol; the imperfect ones do
    assert findings["coco-protocol-rare"]["holds"] is False


@pytest.mark.parametrize(("args", "needle"), [
    (["reproduce", "cocobench", "--offline-agents", "sloppy"],
     "unknown offline profile 'sloppy'; choose from rule, imperfect"),
    (["reproduce", "mecobench", "--offline-agents", "imperfect", "--model", "m"],
     "--offline-agents names who plays the rows without a model"),
])
def test_bad_offline_agents_are_one_line(args, needle, tmp_path):
    assert needle in error_line([*args, "--out", str(tmp_path / "x")], tmp_path)
    assert not (tmp_path / "x").exists()


def test_message_cost_charges_messages_not_board_writes():
    memory = _household(Dials(message_cost=5), protocol="shared_memory", n=3)
    boards = [m for t in memory for m in t.steps(MessageEvent)]
    assert boards and all(m.phase == "memory" and m.tokens == 0 for m in boards)
    assert all(H.tokens_per_step(t) == 0 for t in memory)


def test_stat_dial_draws_follow_the_seed_where_the_layout_ignores_it():
    from types import SimpleNamespace

    from coordbench.envs.stat.layouts import layout_seed
    from coordbench.suites.stat.suite import dial_key

    for kind in ("paper", "uniform"):
        assert layout_seed(kind, 0, 3) == layout_seed(kind, 1, 3)  # the layout ignores it
        keys = {dial_key(SimpleNamespace(layouts=kind, seed=s), 3) for s in (0, 1, 2)}
        assert len(keys) == 3  # ...the draws do not
        # seed 0 keeps the key earlier runs were drawn with
        assert dial_key(SimpleNamespace(layouts=kind, seed=0), 3) == layout_seed(kind, 0, 3)
        draws = [Faults(Dials(message_loss=0.5), k, 0).uniform("message_loss", 1)
                 for k in keys]
        assert len(set(draws)) == 3


def test_dial_labels_keep_close_rates_apart_and_restriction_keeps_types():
    from coordbench.agents.team.dials import restricted

    assert Dials(perception=0.1, memory=8).label() == "perception0.1-memory8"
    assert Dials(perception=0.1234567).label() != Dials(perception=0.1234568).label()
    cut = restricted(Dials(perception=0.1, hallucination=0.2), ["perception"]).as_dict()
    assert cut["hallucination"] == 0.0 and isinstance(cut["hallucination"], float)
