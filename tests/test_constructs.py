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
from coordbench.suites.constructs.families import FAMILIES
from coordbench.suites.constructs.instances import V1_SHA256, fingerprint, select, v1
from coordbench.suites.constructs.runner import ConstructSpec, run_construct

W = Action("wait")


def build(family, team, seed=0):
    raw = FAMILIES[family][1](random.Random(seed), team, 0)
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
        if info["construct"] == "D1":
            assert info["m_star"] >= 4


@pytest.mark.parametrize("planner", ["central", "decentralized"])
def test_oracle_scores_sr_1_and_cs_above_095(planner):
    for raw in select("rep240"):
        tr = run_construct(raw, ConstructSpec(planner, "oracle"), "x")
        m = C.episode_metrics(tr)
        assert m["SR"] == 1.0 and m["CS"] >= 0.95 and m["legal_rate"] == 1.0, raw["task_id"]


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
    assert C.score_d2(tr) == pytest.approx(0.5 * (1 - 3 / 5))  # "closed" is a precondition
    assert C.score_d2(traj("D2", [], containers=[box], targets={})) is None


def test_score_d3():
    k = 4
    steps = [([(0, "grab", {"obj": k}, "ok"), (1, "grab", {"obj": k}, "conflict_lost")], {}),
             ([(0, "slice", {"obj": 7}, "ok"), (1, "wait", {}, "ok")], {}),
             ([(0, "drop", {"obj": k}, "ok")], {}),
             ([(1, "grab", {"obj": k}, "ok")], {}), ([(1, "slice", {"obj": 8}, "ok")], {})]
    tr = traj("D3", steps, knife=k, oracle_actions=5)
    # a = 3 tries, c = 1; L = 6 non-idle actions; M* = 5
    assert C.score_d3(tr) == pytest.approx((1 - 1 / 3) * 5 / 6)
    assert C.score_d3(traj("D3", [([(0, "wait", {}, "ok")], {})], knife=k)) is None


def test_score_d4():
    b = 3
    steps = [([(0, "put_on", {"obj": 1, "target": b}, "ok"), (1, "wait", {}, "ok")], {"3": 1}),
             ([(0, "put_on", {"obj": 2, "target": b}, "ok")], {"3": 2}),
             ([(0, "put_on", {"obj": 5, "target": b}, "buffer_full"), (1, "grab", {}, "ok")],
              {"3": 1}),
             ([(1, "grab", {}, "ok")], {"3": 0}), ([(1, "wait", {}, "ok")], {"3": 0})]
    tr = traj("D4", steps, buffers=[b])
    assert C.d4_counts(tr) == (2, 1, 1)
    assert C.score_d4(tr) == 0.0
    assert C.score_d4(traj("D4", [], buffers=[b])) is None


def test_taxonomy_termination_and_correlation():
    steps = [([(0, "grab", {}, "held_by_other"), (1, "open", {}, "illegal_skill")], {}),
             ([(0, "put_in", {}, "not_held"), (1, "walk", {}, "not_visible")], {})]
    tr = traj("D1", steps, success=False, m_star=2)
    assert C.failure_taxonomy(tr) == {"dependency_violation": 1, "occupancy_conflict": 1,
                                      "affordance_failure": 1, "illegal_skill": 1}
    assert C.termination(tr) == "budget_exhaustion" and C.legal(tr) is False
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
        assert set(payload[key]) == {"mean", "ci95", "n"}
    assert set(payload["per_construct"]) == {"D1", "D2", "D3", "D4"}
    assert payload["SR"]["mean"] == 1.0 and payload["SR"]["n"] == 240
    for d in payload["per_construct"].values():
        assert d["SR"]["mean"] == 1.0 and d["CS"]["mean"] >= 0.95


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
