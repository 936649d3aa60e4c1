"""Coordination constructs: engine skills, oracle references, scores on hand-made trajectories,
the pinned instance set, planners and the CLI contract."""

import itertools
import json
import random

import pytest
from typer.testing import CliRunner

from coordbench.agents.constructs.oracle import delivery_cost, optimal_assignment
from coordbench.cli import app
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    EpisodeEndEvent,
    HouseholdStepEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.task import task_from_dict
from coordbench.metrics import constructs as C
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import V1_SHA256, fingerprint, select, v1
from coordbench.suites.constructs.task_families import TASK_FAMILIES

W = Action("wait")


def build(family, team, seed=0):
    raw = TASK_FAMILIES[family][1](random.Random(seed), team, 0)
    task = task_from_dict(raw, family)
    return raw, task, HouseholdEnv(task, team, 0)


def codes(env, *actions):
    return [o.code for o in env.step(list(actions))]


# -- engine skills ----------------------------------------------------------------------------
def test_knife_slice_drop_and_owners():
    raw, task, env = build("prepare_food", 2)
    info = raw["coordbench_construct"]
    knife, (a, b) = info["knife"], info["items"]
    assert codes(env, Action("walk", obj=a), W)[0] == "ok"
    assert codes(env, Action("slice", obj=a), W)[0] == "no_tool"
    codes(env, Action("walk", obj=knife), Action("walk", obj=knife))
    assert sorted(codes(env, Action("grab", obj=knife), Action("grab", obj=knife))) == [
        "conflict_lost", "ok"]
    holder = env.holder[knife]
    mine, other = (a, b) if holder == 0 else (b, a)
    acts = [W, W]
    acts[holder] = Action("walk", obj=other)
    codes(env, *acts)
    acts[holder] = Action("slice", obj=other)
    assert codes(env, *acts)[holder] == "illegal_skill"  # not this agent's item
    acts[holder] = Action("walk", obj=mine)
    codes(env, *acts)
    acts[holder] = Action("slice", obj=mine)
    out = env.step(acts)[holder]
    assert out.ok and out.completed == (f"state_SLICED_{mine}",)
    assert codes(env, *acts)[holder] == "already_sliced"
    acts[holder] = Action("drop", obj=knife)
    assert codes(env, *acts)[holder] == "ok" and knife not in env.holder


def test_buffer_capacity_roles_and_sources():
    raw, task, env = build("relay_items", 2)
    info = raw["coordbench_construct"]
    buf, target = info["buffers"][0], info["target"]
    items = info["items"]
    assert codes(env, W, Action("walk", obj=items[0]))[1] == "ok"
    assert codes(env, W, Action("grab", obj=items[0]))[1] == "illegal_skill"  # consumer
    assert codes(env, Action("put_in", obj=items[0], target=target), W)[0] == "illegal_skill"
    for k in range(3):
        codes(env, Action("walk", obj=items[k]), W)
        codes(env, Action("grab", obj=items[k]), W)
        codes(env, Action("walk", obj=buf), W)
        expect = "ok" if k < 2 else "buffer_full"
        assert codes(env, Action("put_on", obj=items[k], target=buf), W)[0] == expect
    assert env.buffer_load(buf) == 2


def test_toggle_needs_a_switch():
    raw, task, env = build("store_groceries", 2)
    fridge = raw["coordbench_construct"]["targets"][str(raw["coordbench_construct"]["items"][0])]
    codes(env, Action("walk", obj=fridge), W)
    assert codes(env, Action("toggle", obj=fridge), W)[0] == "no_switch"


# -- references and gates -----------------------------------------------------------------------
def test_d1_optimal_makespan_matches_brute_force():
    rng = random.Random(3)
    for _ in range(30):
        n_items, n_agents = rng.randint(2, 6), rng.randint(2, 3)
        targets = [rng.choice([10, 11]) for _ in range(n_items)]
        m_star, _ = optimal_assignment(targets, n_agents)
        brute = min(max(delivery_cost({t: sum(1 for x, a in zip(targets, combo, strict=True)
                                                if a == g and x == t) for t in (10, 11)})
                        for g in range(n_agents))
                    for combo in itertools.product(range(n_agents), repeat=n_items))
        assert m_star == brute
    assert delivery_cost({5: 3}) == 7 + 4


def test_v1_is_pinned_balanced_and_gated():
    raws = v1()
    assert fingerprint(raws) == V1_SHA256 and len(raws) == 900
    assert len(select("rep240")) == 240
    for construct in ("D1", "D2", "D3", "D4"):
        for team in (2, 3, 4):
            assert len(select("all", construct, team)) == 75
            assert len(select("rep240", construct, team)) == 20
    for raw in raws:
        info = raw["coordbench_construct"]
        assert raw["coordbench_budget"] == -(-3 * info["oracle_actions"] // 2)
        assert 1 <= info["oracle_makespan"] <= info["oracle_actions"]
        if info["construct"] == "D1":
            assert info["m_star"] >= 4 and info["m_star"] == info["oracle_makespan"]
        if info["construct"] == "D3":  # C_D3's M* is oracle_actions; m_star keeps the
            assert info["m_star"] == info["oracle_steps"]  # team-steps variant's


@pytest.mark.parametrize("planner", ["central", "decentralized"])
def test_oracle_scores_sr_1_and_cs_1(planner):
    # every construct score of the oracle's own construct is exactly 1 (checked on all 900
    # instances once; here rep240), under the corrected C_D3
    for raw in select("rep240"):
        tr = run_construct(raw, ConstructSpec(planner, "oracle"), "x")
        m = C.episode_metrics(tr)
        assert m["SR"] == 1.0 and m["CS"] == 1.0 and m["legal_rate"] == 1.0, raw["task_id"]
        assert C.termination_key(tr) == "success"


# which cross-applied scores each construct's instances define (the others are truly
# undefined: no knife outside D3, no buffer outside D4, no goal container in D3)
DEFINED = {"D1": {"D1", "D2"}, "D2": {"D1", "D2"}, "D3": {"D1", "D3"},
           "D4": {"D1", "D2", "D4"}}


@pytest.mark.parametrize("planner,agents", [("central", "rule"), ("decentralized", "rule"),
                                            ("decentralized", "oracle")])
def test_cross_applied_scores_are_defined_where_their_facts_exist(planner, agents):
    for construct, want in DEFINED.items():
        for raw in select("rep240", construct)[::7]:
            tr = run_construct(raw, ConstructSpec(planner, agents), "x")
            scores = C.cross_scores(tr)
            assert {c for c, v in scores.items() if v is not None} == want, raw["task_id"]
            # the own construct's score reads only the instance's own facts
            own = tr.model_copy(deep=True)
            own.header.params["construct"] = raw["coordbench_construct"]
            assert C.construct_score(own) == scores[construct]


def test_score_facts_complete_an_instance_without_changing_its_own():
    from coordbench.suites.constructs.episode import load_instance, score_facts

    for construct in ("D1", "D2", "D3", "D4"):
        raw = select("rep240", construct)[0]
        task, info = load_instance(raw, "x")
        facts = score_facts(task, info)
        assert {k: facts[k] for k in info} == info  # given facts are kept as they are
        if construct == "D4":
            assert facts["containers"] == [info["target"]]
            assert set(facts["targets"].values()) == {info["target"]}
        if construct == "D1":
            assert set(facts["containers"]) == set(info["targets"].values())
        if construct == "D3":
            assert facts["containers"] == [] and "buffers" not in facts


def test_buffer_capacity_is_a_parameter_the_oracle_respects():
    from coordbench.suites.constructs.episode import with_capacity

    raws = select("rep240", "D4")[::4]
    for cap in (1, 3):
        for planner in ("central", "decentralized"):
            for raw in raws:
                tr = run_construct(raw, ConstructSpec(planner, "oracle", buffer_capacity=cap),
                                   "x")
                m = C.episode_metrics(tr)
                assert m["SR"] == 1.0 and m["CS"] == 1.0, (cap, planner, raw["task_id"])
                assert tr.header.params["construct"]["capacity"] == cap
    moved = with_capacity(raws[0], 1)
    assert set(moved["coordbench_buffers"].values()) == {1} and "(it holds 1)" in moved[
        "raw_goal"]
    assert raws[0]["coordbench_construct"]["capacity"] == 2  # the instance is not touched
    assert with_capacity(select("rep240", "D1")[0], 1) == select("rep240", "D1")[0]
    with pytest.raises(Exception, match="--buffer-capacity"):
        ConstructSpec(buffer_capacity=0)


def test_communication_helps_decentralized_rule_planners():
    raws = select("rep240")

    def mean(planner, construct, key):
        vals = [C.episode_metrics(run_construct(r, ConstructSpec(planner, "rule"), "x"))[key]
                for r in raws if r["coordbench_construct"]["construct"] == construct]
        vals = [v for v in vals if v is not None]
        return sum(vals) / len(vals)

    assert mean("decentralized_comm", "D3", "CS") > mean("decentralized", "D3", "CS")
    assert mean("decentralized_comm", "D2", "SR") > mean("decentralized", "D2", "SR")


# -- scores on hand-made trajectories -----------------------------------------------------------
def traj(construct, steps, n=2, success=True, **info):
    header = TrajectoryHeader(
        episode_id="x", suite="constructs", task_id="t", seed=0,
        team=[AgentSpec(id=f"a{i}", driver="h") for i in range(n)], coordbench_version="t",
        params={"agents": n, "construct": {"construct": construct, **info}})
    events = []
    for t, (acts, buffers) in enumerate(steps):
        events.append(HouseholdStepEvent(
            t=t, actions=[ActionRecord(agent=a, action=name, args=args, outcome=out)
                          for a, name, args, out in acts],
            satisfied={}, completion=1.0 if success else 0.5, buffers=buffers))
    events.append(EpisodeEndEvent(t=len(steps), success=success,
                                  termination="success" if success else "truncated"))
    return Trajectory(header=header, events=events)


def test_score_d1():
    steps = [([(0, "walk", {}, "ok"), (1, "walk", {}, "ok")], {}),
             ([(0, "grab", {}, "ok")], {}), ([(0, "put_in", {}, "ok")], {}),
             ([(0, "wait", {}, "ok")], {})]
    tr = traj("D1", steps, m_star=2)
    assert C.makespan(tr) == 4 and C.score_d1(tr) == 0.5
    assert C.score_d1(traj("D1", steps, n=1, m_star=2)) is None
    assert C.score_d1(traj("D1", [], m_star=2)) is None
    # D1's M* is the exact optimum; cross-applied elsewhere, the oracle's makespan
    assert C.score_d1(traj("D1", steps, m_star=2, oracle_makespan=3)) == 0.5
    assert C.score_d1(traj("D3", steps, m_star=9, oracle_makespan=3)) == 0.75
    assert C.score_d1(traj("D4", steps, oracle_makespan=6)) == 1.0
    assert C.score_d1(traj("D2", steps, m_star=3)) is None  # no makespan recorded


def test_score_d2_counts_order_violations_and_legality():
    box = 9
    steps = [([(0, "put_in", {"obj": 1, "target": box}, "closed")], {}),
             ([(0, "open", {"obj": box}, "ok")], {}),
             ([(1, "open", {"obj": box}, "already_open")], {}),
             ([(0, "put_in", {"obj": 2, "target": box}, "ok")], {}),
             ([(0, "close", {"obj": box}, "ok")], {}),
             ([(0, "put_in", {"obj": 1, "target": box}, "ok")], {})]
    tr = traj("D2", steps, containers=[box], targets={"1": box, "2": box}, order=[1, 2])
    # relevant: put(closed) v, open ok, put 2 out of order v, premature close v, put 1 in order
    assert C.d2_counts(tr) == (5, 3)
    # Eq. 8: the put into the closed box is an ordering violation (in v); it is the only
    # precondition failure, so p_legal stays 1: C = 1 * (1 - 3/5) = 0.4
    assert C.score_d2(tr) == pytest.approx(0.4)
    # coordbench's earlier variant halved it a second time: 0.5 * 0.4
    assert C.score_d2_double_penalty(tr) == pytest.approx(0.2)
    # a precondition failure v does not count (a put with an empty hand) still halves it
    extra = steps + [([(1, "put_in", {"obj": 3, "target": 5}, "not_held")], {})]
    tr = traj("D2", extra, containers=[box], targets={"1": box, "2": box}, order=[1, 2])
    assert C.score_d2(tr) == pytest.approx(0.5 * (1 - 3 / 5))
    # an illegal skill too
    extra = steps + [([(1, "open", {"obj": 5}, "illegal_skill")], {})]
    tr = traj("D2", extra, containers=[box], targets={"1": box, "2": box}, order=[1, 2])
    assert C.score_d2(tr) == pytest.approx(0.2)
    assert C.score_d2(traj("D2", [], containers=[box], targets={})) is None


def test_score_d3():
    k = 4
    steps = [([(0, "grab", {"obj": k}, "ok"), (1, "grab", {"obj": k}, "conflict_lost")], {}),
             ([(0, "slice", {"obj": 7}, "ok"), (1, "wait", {}, "ok")], {}),
             ([(0, "drop", {"obj": k}, "ok")], {}),
             ([(1, "grab", {"obj": k}, "ok")], {}), ([(1, "slice", {"obj": 8}, "ok")], {})]
    tr = traj("D3", steps, knife=k, oracle_actions=6, oracle_steps=4)
    # Eq. 9: a = 3 knife grabs, c = 1 lost; L = 7 executed action steps (every agent's
    # actions, the wait included); M* = the oracle's 6 action steps: (1 - 1/3) * 6/7
    assert C.executed_actions(tr) == 7
    assert C.score_d3(tr) == pytest.approx((2 / 3) * (6 / 7))
    # the earlier team-steps variant: L = 5 team steps, M* = 4 oracle team steps
    assert C.score_d3_team_steps(tr) == pytest.approx((2 / 3) * (4 / 5))
    # steps in which nobody acts add nothing to L (a decision without an action is no
    # executed action step either); they lengthen the team-steps variant's L to 7
    idle = [([(0, "none", {}, "protocol_failure")], {}), ([], {})]
    tr = traj("D3", steps[:2] + idle + steps[2:], knife=k, oracle_actions=6, oracle_steps=4)
    assert C.score_d3(tr) == pytest.approx((2 / 3) * (6 / 7))
    assert C.score_d3_team_steps(tr) == pytest.approx((2 / 3) * (4 / 7))
    # as few actions as the oracle, no contention: 1; no M* recorded: the efficiency term is 1
    fast = [([(0, "grab", {"obj": k}, "ok")], {}), ([(0, "slice", {"obj": 7}, "ok")], {})]
    assert C.score_d3(traj("D3", fast, knife=k, oracle_actions=2)) == 1.0
    assert C.score_d3(traj("D3", steps, knife=k)) == pytest.approx(1 - 1 / 3)
    assert C.score_d3(traj("D3", [([(0, "wait", {}, "ok")], {})], knife=k)) is None
    assert C.score_d3(traj("D1", steps, oracle_actions=4)) is None  # no shared tool


def test_score_d4():
    b = 3
    steps = [([(0, "put_on", {"obj": 1, "target": b}, "ok"), (1, "wait", {}, "ok")], {"3": 1}),
             ([(0, "put_on", {"obj": 2, "target": b}, "ok")], {"3": 2}),
             ([(0, "put_on", {"obj": 5, "target": b}, "buffer_full"), (1, "grab", {}, "ok")],
              {"3": 1}),
             ([(1, "grab", {}, "ok")], {"3": 0}),
             ([(1, "wait", {}, "ok"), (0, "wait", {}, "ok")], {"3": 0})]
    tr = traj("D4", steps, buffers=[b], roles=["producer", "consumer"])
    # Eq. 10: h = 2 puts onto the buffer, o = 1 refused as full, w = 1: the consumer's wait
    # on the empty buffer (the producer's wait in the same step is upstream, not counted;
    # the consumer's first wait found the buffer holding an item)
    assert C.d4_counts(tr) == (2, 1, 1)
    assert C.score_d4(tr) == 0.0
    # the earlier variant counted both waits of the last step: w = 2
    assert C.d4_counts_any_wait(tr) == (2, 1, 2) and C.score_d4_any_wait(tr) == 0.0
    # a chain producer -> carrier -> consumer over two buffers: the carrier waits on the
    # first, the consumer on the last; one handoff each, 4 handoffs in all
    b1, b2 = 3, 6
    steps = [([(0, "put_on", {"obj": 1, "target": b1}, "ok"),
               (1, "wait", {}, "ok"), (2, "wait", {}, "ok")], {"3": 1, "6": 0}),
             ([(1, "grab", {}, "ok"), (2, "wait", {}, "ok")], {"3": 0, "6": 0}),
             ([(1, "put_on", {"obj": 1, "target": b2}, "ok"), (0, "put_on",
               {"obj": 2, "target": b1}, "ok")], {"3": 1, "6": 1}),
             ([(1, "grab", {}, "ok"), (2, "grab", {}, "ok")], {"3": 0, "6": 0}),
             ([(1, "put_on", {"obj": 2, "target": b2}, "ok"), (0, "wait", {}, "ok")],
              {"3": 0, "6": 1})]
    tr = traj("D4", steps, n=3, buffers=[b1, b2], roles=["producer", "carrier", "consumer"])
    # w: the consumer waits twice on the empty last buffer (steps 0 and 1); the carrier's
    # wait in step 0 found the first buffer loaded; the producer's waits are upstream
    assert C.d4_counts(tr) == (4, 0, 2)
    assert C.score_d4(tr) == pytest.approx(1 - 2 / 4)
    assert C.score_d4(traj("D4", [], buffers=[b])) is None


def test_d4_roles_come_from_the_team_when_the_facts_lack_them():
    b = 3
    steps = [([(0, "put_on", {"obj": 1, "target": b}, "ok"), (1, "wait", {}, "ok")], {"3": 0})]
    tr = traj("D4", steps, buffers=[b])
    team = [a.model_copy(update={"role": r}) for a, r in zip(tr.header.team,
                                                            ("producer", "consumer"),
                                                            strict=True)]
    tr = tr.model_copy(update={"header": tr.header.model_copy(update={"team": team})})
    assert C.d4_counts(tr) == (1, 0, 1)


def test_taxonomy_termination_and_correlation():
    steps = [([(0, "grab", {}, "held_by_other"), (1, "open", {}, "illegal_skill")], {}),
             ([(0, "put_in", {}, "not_held"), (1, "walk", {}, "not_visible")], {})]
    tr = traj("D1", steps, success=False, m_star=2)
    assert C.failure_taxonomy(tr) == {"dependency_violation": 1, "occupancy_conflict": 1,
                                      "affordance_failure": 1, "illegal_skill": 1}
    assert C.termination(tr) == "budget_exhaustion" and C.legal(tr) is False
    assert C.termination_key(tr) == "budget_exhausted"
    assert C.failure_kinds(tr) == {"dependency": True, "occupancy": True, "affordance": True,
                                   "illegal_skill": True}
    assert C.failure_kinds(traj("D1", steps[1:], success=False)) == {
        "dependency": True, "occupancy": False, "affordance": True, "illegal_skill": False}
    m = C.correlation_matrix([{"D1": x, "D2": 2 * x, "D3": -x, "D4": None}
                              for x in (0.1, 0.5, 0.9)])
    assert m["D1"]["D2"] == pytest.approx(1.0) and m["D1"]["D3"] == pytest.approx(-1.0)
    assert m["D1"]["D4"] is None


# -- CLI contract -----------------------------------------------------------------------------
def test_cli_json_contract(tmp_path):
    res = CliRunner().invoke(app, ["constructs", "run", "--subset", "rep240", "--planner",
                                   "central", "--agents", "oracle", "--observation", "blind",
                                   "--out", str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    for key in ("SR", "CS", "legal_rate"):
        assert set(payload[key]) == {"mean", "ci95", "n", "lo", "hi"}
    assert set(payload["per_construct"]) == {"D1", "D2", "D3", "D4"}
    assert payload["SR"]["mean"] == 1.0 and payload["SR"]["n"] == 240
    for d in payload["per_construct"].values():
        assert d["SR"]["mean"] == 1.0 and d["CS"]["mean"] == 1.0
    assert payload["termination"] == {"success": 1.0, "normal_stop": 0.0,
                                      "budget_exhausted": 0.0, "protocol_failure": 0.0}
    assert payload["failure_shares"] == {"dependency": None, "occupancy": None,
                                         "affordance": None, "illegal_skill": None}
    report = (tmp_path / "c" / "report.md").read_text()
    assert "budget exhausted" in report and "illegal skill" in report


def test_cli_json_termination_and_failure_shares_of_failing_teams(tmp_path):
    res = CliRunner().invoke(app, ["constructs", "run", "--subset", "rep240", "--construct",
                                   "D2", "--planner", "decentralized", "--agents", "rule",
                                   "--out", str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    term, fails = payload["termination"], payload["failure_shares"]
    assert set(term) == {"success", "normal_stop", "budget_exhausted", "protocol_failure"}
    assert sum(term.values()) == pytest.approx(1.0)
    assert term["success"] == pytest.approx(payload["SR"]["mean"]) and term["success"] < 1
    assert set(fails) == {"dependency", "occupancy", "affordance", "illegal_skill"}
    assert all(0 <= v <= 1 for v in fails.values())


def test_cli_buffer_capacity_is_part_of_the_condition(tmp_path):
    out = tmp_path / "c"
    base = ["constructs", "run", "--subset", "rep240", "--construct", "D4", "--limit", "2",
            "--agents", "oracle", "--out", str(out), "--json"]
    res = CliRunner().invoke(app, [*base, "--buffer-capacity", "0"])
    assert res.exit_code != 0 and "--buffer-capacity must be >= 1" in str(res.exception)
    assert "\n" not in str(res.exception)
    for cap in ("1", "3"):
        res = CliRunner().invoke(app, [*base, "--buffer-capacity", cap])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout.strip().splitlines()[-1])["SR"]["mean"] == 1.0
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    caps = {name: c["buffer_capacity"] for name, c in manifest["conditions"].items()}
    assert sorted(caps.values(), key=str) == [1, 3, None]
    assert all(name.endswith(f"_cap{c}_sample2") for name, c in caps.items() if c)
    for name, c in caps.items():  # episodes play at the condition's capacity
        ep = sorted((out / "episodes" / name).glob("*.jsonl"))[0]
        info = json.loads(ep.read_text().splitlines()[0])["params"]["construct"]
        assert info["capacity"] == (c or 2)
    # a manifest written before the capacity was a parameter is brought up to date
    default = next(name for name, c in caps.items() if c is None)
    for c in manifest["conditions"].values():
        c.pop("buffer_capacity")
    (out / "manifest.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 0, res.output
    assert json.loads((out / "manifest.json").read_text())["conditions"][default][
        "buffer_capacity"] is None


def test_llm_planner_through_the_loopback_server(tmp_path):
    from coordbench.llm.loopback import ScriptedServer

    def reply(body):
        text = body["messages"][-1]["content"]
        text = text if isinstance(text, str) else text[0]["text"]
        ids = [line.split(":")[0] for line in text.splitlines()
               if line[:1].isdigit() and ": agent_" in line]
        return "REASON: try\nACTION: " + (ids[len(text) % len(ids)] if ids else "x")

    with ScriptedServer(reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n")
        for planner in ("central", "decentralized_comm"):
            res = CliRunner().invoke(app, [
                "constructs", "run", "--subset", "rep240", "--construct", "D3", "--team", "2",
                "--limit", "2", "--planner", planner, "--agents", "llm", "--model", "s",
                "--models", str(models), "--no-cache", "--out", str(tmp_path / planner),
                "--json"])
            assert res.exit_code == 0, res.output
            assert json.loads(res.stdout.strip().splitlines()[-1])["instances"] == 2
        assert len(server.requests) > 4


def test_landing_order_is_configurable_and_deterministic():
    raw = select("rep240", "D4", 3)[0]
    runs = {order: [run_construct(raw, ConstructSpec("decentralized", "rule", order=order),
                                  "x").events for _ in range(2)] for order in ("index",
                                                                               "reverse")}
    for a, b in runs.values():
        assert [e.model_dump(exclude={"created"}) for e in a] == [
            e.model_dump(exclude={"created"}) for e in b]
    with pytest.raises(Exception, match="--order"):
        ConstructSpec(order="random")


def _menu_ids(body):
    text = body["messages"][-1]["content"]
    text = text if isinstance(text, str) else text[0]["text"]
    return [line.split(":")[0] for line in text.splitlines()
            if line[:1].isdigit() and ": agent_" in line], text


@pytest.mark.parametrize("planner", ["central", "decentralized"])
def test_a_bad_planner_reply_ends_the_episode_as_a_protocol_failure(tmp_path, planner):
    # CoCoBench's protocol: an unparseable reply (or an id not on the menu) ends the episode;
    # decentralized agents with a bad reply do not act, and the episode ends in the first
    # step in which nobody acts. "skip" keeps the earlier rule: the episode runs on.
    from coordbench.core.rundir import RunDir
    from coordbench.llm.loopback import ScriptedServer

    calls = {"n": 0}

    def reply(body):
        ids, text = _menu_ids(body)
        calls["n"] += 1
        step = int(text.split("Step ")[1].split(":")[0]) if "Step " in text else 0
        if step < 3:
            return f"REASON: go\nACTION: {ids[0]}"
        if planner == "decentralized" and "agent_1, one of" in text and step == 3:
            return f"REASON: go\nACTION: {ids[0]}"  # agent 1 still acts at step 3
        return "REASON: I am not sure what to do"

    with ScriptedServer(reply) as server:
        models = tmp_path / "m.yaml"
        models.write_text(f"models:\n  s:\n    base_url: {server.base_url}\n    model: s\n")
        for how in ("end", "skip"):
            res = CliRunner().invoke(app, [
                "constructs", "run", "--subset", "rep240", "--construct", "D1", "--team", "2",
                "--limit", "1", "--planner", planner, "--agents", "llm", "--model", "s",
                "--models", str(models), "--no-cache", "--on-protocol-failure", how,
                "--out", str(tmp_path / how), "--json"])
            assert res.exit_code == 0, res.output
            term = json.loads(res.stdout.strip().splitlines()[-1])["termination"]
            run = RunDir.open(tmp_path / how)
            (cond,) = run.conditions
            (tr,) = run.load_episodes(cond)
            steps = tr.steps(HouseholdStepEvent)
            if how == "end":
                assert term["protocol_failure"] == 1.0
                assert tr.end.termination == "protocol_failure" and "agent_" in tr.end.detail
                # central: the first bad reply (step 3) ends it; decentralized: agent 1
                # still acted at step 3, nobody did at step 4
                assert len(steps) == (4 if planner == "central" else 5)
                assert {a.outcome for a in steps[-1].actions} == {"protocol_failure"}
                assert C.termination_key(tr) == "protocol_failure"
            else:
                assert "_pf-skip" in cond and term["protocol_failure"] == 0.0
                assert tr.end.termination in ("truncated", "normal_stop")
                assert len(steps) > 5


def test_a_model_run_from_before_the_protocol_failure_rule_is_not_resumed_under_it(tmp_path):
    # a model-driven condition's manifest records the protocol-failure rule; one written
    # before the rule existed lacks it and is refused in one line, never mixed
    from coordbench.core.rundir import RunDir
    from coordbench.errors import RunDirError
    from coordbench.runner.conditions import register
    from coordbench.suites.constructs.suite import SUITE, ConstructCondition

    cond = ConstructCondition(ConstructSpec("central", "llm", model="m"), "rep240")
    fields = SUITE.manifest(cond)
    assert fields["on_protocol_failure"] == "end"
    assert "on_protocol_failure" not in SUITE.manifest(ConstructCondition(
        ConstructSpec("central", "rule"), "rep240"))
    run = RunDir.create_or_open(tmp_path / "r")
    old = {k: v for k, v in fields.items() if k != "on_protocol_failure"}
    run.register(SUITE.condition(cond), {"suite": SUITE.name, **old})
    run.save_manifest()
    with pytest.raises(RunDirError, match="on_protocol_failure=None, not 'end'"):
        register(RunDir.open(tmp_path / "r"), SUITE, cond)
