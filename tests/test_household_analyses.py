"""MECoBench analyses and metric fixes on hand-made trajectories with known answers, plus the
engine's conflict sets, the oracle's conflict-free plans and what rule minds take from priors."""

from __future__ import annotations

import math

import pytest

from coordbench.analyses import household as A
from coordbench.analyses.common import ols_slope, proportion_diff
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.metrics import behaviour as B
from coordbench.metrics import household as H


def rec(agent, action, outcome="ok", obj=None, cls=None, completed=()):
    return ActionRecord(agent=agent, action=action, args={"obj": obj} if obj else {},
                        obj_class=cls, outcome=outcome, completed=list(completed))


def episode(*, team=2, objects=2, success=True, structure="parallel", messages=(),
            wrong_grabs=0, conflict=False, completions=None, budget=8,
            goal=("cupcake",)) -> Trajectory:
    """A small episode: `team` agents, `objects` required target objects; each step's
    completion from `completions` (default: one step to 1.0 or 0.5); `wrong_grabs` grabs of a
    towel (no goal class); `conflict`: a same-step grab conflict at t=0; `messages`: (t,
    sender, text)."""
    header = TrajectoryHeader(
        episode_id="x", suite="mecobench", task_id="t", seed=0,
        team=[AgentSpec(id=f"agent_{i}", driver="h") for i in range(team)],
        coordbench_version="test",
        params={"agents": team, "budget": budget, "structure": structure,
                "goal_classes": list(goal), "required": {"on_cupcake_1": objects}})
    completions = completions or [1.0 if success else 0.5]
    steps = []
    for t, c in enumerate(completions):
        actions = [rec(0, "walk")] + [rec(i, "wait") for i in range(1, team)]
        conflicts = []
        if t == 0 and conflict:
            actions = [rec(0, "grab", "ok", 5, "cupcake"),
                       rec(1, "grab", "conflict_lost", 5, "cupcake")] + actions[2:]
            conflicts = [Conflict(target=5, agents=[0, 1], winner=0)]
        if t == 0 and wrong_grabs:
            actions += [rec(0, "grab", "ok", 90 + k, "towel") for k in range(wrong_grabs)]
        steps.append(HouseholdStepEvent(t=t, actions=actions, conflicts=conflicts,
                                        satisfied={}, completion=c))
    msgs = [MessageEvent(t=t, phase="broadcast", sender=s, content=text)
            for t, s, text in messages]
    end = EpisodeEndEvent(t=len(steps), termination="success" if success else "truncated",
                          success=success)
    return Trajectory(header=header, events=[*msgs, *steps, end])


# -- metric fixes ----------------------------------------------------------------------------
def test_a_message_claiming_the_task_done_is_a_hallucinated_completion():
    early = episode(success=False, messages=[(0, 0, "All items have been placed. The task is "
                                                    "complete.")])
    assert H.hallucinated_completion(early)
    # judged on what the sender knew: after step 0 the team was at 1.0 already
    late = episode(completions=[1.0, 1.0], messages=[(1, 0, "The task is complete.")])
    assert not H.hallucinated_completion(late)
    # questions, negations and conditions are not claims
    for text in ("Is the task complete?", "The task is not complete yet.",
                 "Once the wine is on the table, the task is complete.", "DONE 471; AT 3"):
        assert not B.claims_completion(text), text
    for text in ("Task complete!", "We are done.", "All objects are now in place."):
        assert B.claims_completion(text), text


def test_coordination_query_needs_a_question_about_the_team():
    assert "Coord-Q" in B.tag_message("Are you at door 287 and ready to receive?")
    assert "Coord-Q" in B.tag_message("Do you have the cupcake?")
    assert "Coord-Q" in B.tag_message("AT 3; DOOR 287 WAIT")
    # v1 tagged any message ending in "?": a question about an object is not a query
    assert "Coord-Q" not in B.tag_message("Is this the right fridge?")
    assert "Coord-Q" not in B.tag_message("I will grab it?")
    assert B.TAG_RULES_VERSION == "2"


def test_indicators_of_hard_states():
    assert B.indicators("I couldn't find the wine in the fridge.") == {"negative_report"}
    assert B.indicators("I am stuck in the hallway") == {"stuck"}
    assert B.indicators("MISSING 471") == {"negative_report"}
    assert B.indicators("I see the apple") == set()


def test_completion_curve_holds_the_last_value_and_gives_the_auc():
    tr = episode(team=2, budget=8, completions=[0.0, 0.5])
    # team step t covers effective steps ((t-1)n, tn]: e=1,2 -> 0.0, e=3..8 -> 0.5
    assert H.completion_curve(tr) == [0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert H.step_auc(tr) == pytest.approx(3.0 / 8)
    assert H.n_objects(episode(objects=5)) == 5


# -- analyses --------------------------------------------------------------------------------
def test_by_objects_groups_and_fits_a_falling_trend():
    trajs = ([episode(team=1, objects=2) for _ in range(4)]
             + [episode(team=1, objects=4, success=k < 2) for k in range(4)]
             + [episode(team=1, objects=6, success=False) for _ in range(4)])
    res = A.by_objects(trajs)
    assert [(r["objects"], r["SR"]["mean"]) for r in res["rows"]] == [(2, 1.0), (4, 0.5),
                                                                      (6, 0.0)]
    fit = res["trends"]["1"]["SR"]
    assert fit["slope"] == pytest.approx(-0.25)  # 1.0 -> 0.0 over 4 objects
    assert fit["hi"] < 0 and fit["n"] == 12


def test_ols_slope_matches_a_hand_fit_and_refuses_too_few_points():
    fit = ols_slope([1, 2, 3, 4], [2.0, 4.1, 5.9, 8.0])
    assert fit["slope"] == pytest.approx(1.98) and fit["intercept"] == pytest.approx(0.05)
    from scipy import stats

    ref = stats.linregress([1, 2, 3, 4], [2.0, 4.1, 5.9, 8.0])
    assert fit["se"] == pytest.approx(ref.stderr)
    assert fit["hi"] - fit["slope"] == pytest.approx(stats.t.ppf(0.975, 2) * ref.stderr)
    assert ols_slope([1, 2], [1, 2])["slope"] is None
    assert ols_slope([3, 3, 3], [1, 2, 3])["slope"] is None


def test_team_scaling_finds_the_best_team_size():
    trajs = ([episode(team=1, success=k < 2) for k in range(4)]
             + [episode(team=2, success=True) for _ in range(4)]
             + [episode(team=3, success=k < 3) for k in range(4)])
    res = A.team_scaling({"g": trajs})["g"]
    assert res["best_team"] == 2
    assert {k: v["SR"]["mean"] for k, v in res["teams"].items()} == {"1": 0.5, "2": 1.0,
                                                                      "3": 0.75}


def test_progress_curves_average_episodes_step_by_step():
    a = episode(team=1, budget=4, completions=[0.0, 1.0])
    b = episode(team=1, budget=4, completions=[1.0])
    res = A.progress_curves({"g": [a, b]}, points=4)["g"]
    assert res["steps"] == [1, 2, 3, 4]
    assert res["mean"] == pytest.approx([0.5, 1.0, 1.0, 1.0])
    assert res["n"] == 2


def test_failure_modes_frequency_lift_and_delta():
    trajs = ([episode(conflict=True, success=False) for _ in range(2)]
             + [episode(conflict=True, success=True)]
             + [episode(success=True) for _ in range(3)]
             + [episode(success=False)])
    res = A.failure_modes(trajs)["parallel"]["grab_conflict"]
    assert res["freq"]["mean"] == pytest.approx(3 / 7)
    # rate in failed episodes 2/3, in successful ones 1/4
    assert res["lift"] == pytest.approx((2 / 3) / (1 / 4))
    assert res["SR_with"]["mean"] == pytest.approx(1 / 3)
    assert res["delta_SR"]["delta"] == pytest.approx(1 / 3 - 3 / 4)
    only_failed = A.failure_modes([episode(conflict=True, success=False), episode()])
    assert only_failed["parallel"]["grab_conflict"]["lift"] == "inf"
    assert A.failure_modes([episode()])["parallel"]["grab_conflict"]["lift"] is None


def test_correction_effect_stratifies_with_shared_weights():
    fix = "Correction: that was the towel, not the cupcake."
    trajs = ([episode(wrong_grabs=1, success=True, messages=[(0, 0, fix)]) for _ in range(2)]
             + [episode(wrong_grabs=1, success=False)]
             + [episode(wrong_grabs=1, success=True)]
             + [episode(wrong_grabs=2, success=True, messages=[(0, 0, fix)]) for _ in range(2)]
             + [episode(wrong_grabs=2, success=False) for _ in range(2)]
             + [episode(wrong_grabs=3, success=True, messages=[(0, 0, fix)])]
             + [episode(wrong_grabs=4, success=True, messages=[(0, 0, fix)]) for _ in range(2)]
             + [episode(wrong_grabs=5, success=False)]
             + [episode(success=True)])
    res = A.correction_effect(trajs)["parallel"]
    assert res["overall"]["corrected"]["n"] == 7 and res["overall"]["uncorrected"]["n"] == 6
    adj = res["wg_conditional"]["adjusted"]
    # strata 1 and 2 have both groups with 2+ episodes (4 episodes each): weights 1/2, 1/2;
    # stratum 1: 1.0 - 0.5, stratum 2: 1.0 - 0.0; stratum 3 has no uncorrected episode and
    # stratum 4+ only one
    assert adj["strata"] == ["1", "2"]
    assert adj["SR"]["delta"] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert adj["SR"]["lo"] <= adj["SR"]["delta"] <= adj["SR"]["hi"]
    assert adj["SR"]["method"] == "stratified bootstrap"
    assert res["strata"]["1"]["delta"]["SR"]["delta"] == pytest.approx(0.5)
    assert A.correction_effect([episode()])["parallel"]["wg_conditional"]["adjusted"][
        "SR"] is None


def test_coordination_queries_split_episodes_by_a_query():
    asked = [episode(objects=6, success=False, messages=[(0, 1, "Where are you? I am stuck.")]),
             episode(objects=4, success=True, messages=[(0, 1, "Do you have the cupcake?")])]
    quiet = [episode(objects=2, success=True, messages=[(0, 0, "I will take the apple.")])
             for _ in range(2)]
    res = A.coordination_queries(asked + quiet)["parallel"]
    w, o = res["with_query"], res["without_query"]
    assert (w["n"], o["n"]) == (2, 2)
    assert w["objects"]["mean"] == 5.0 and o["objects"]["mean"] == 2.0
    assert w["SR"]["mean"] == 0.5 and w["stuck"]["mean"] == 0.5 and o["stuck"]["mean"] == 0.0
    assert res["delta_SR"]["delta"] == pytest.approx(-0.5)


def test_proportion_difference_interval_contains_the_estimate():
    d = proportion_diff(8, 10, 3, 10)
    assert d["delta"] == pytest.approx(0.5) and d["lo"] < 0.5 < d["hi"]
    assert -1 <= d["lo"] and d["hi"] <= 1
    assert proportion_diff(0, 0, 1, 2)["delta"] is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in d.values())


# -- engine, oracle and rule minds -------------------------------------------------------------
def _v1(k: int):
    from coordbench.suites.mecobench.instances import load_suite

    return load_suite("v1")[k]


def test_conflict_sets_paper_default_and_with_close():
    from coordbench.envs.household.actions import Action
    from coordbench.envs.household.engine import HouseholdEnv

    task = _v1(4)  # wash_dishes: a dishwasher the agents can reach from one spot
    box = next(n for n, node in task.scene.nodes.items() if node.can_open)

    def two_closes(conflict_set: str) -> list[str]:
        env = HouseholdEnv(task, 2, 0, conflict_set)
        env.open_state[box] = True
        for i in range(2):
            env.room[i] = task.scene.room_of[box]
            env.pos[i] = env.node_pos[box]
        outs = env.step([Action("close", obj=box), Action("close", obj=box)])
        return [o.code for o in outs], env.last_conflicts

    codes, conflicts = two_closes("paper")
    assert codes == ["ok", "already_closed"] and conflicts == []
    codes, conflicts = two_closes("with_close")
    assert sorted(codes) == ["conflict_lost", "ok"] and len(conflicts) == 1
    with pytest.raises(ValueError, match="unknown conflict set"):
        HouseholdEnv(task, 2, 0, "bogus")


def test_oracle_team_never_conflicts():
    from coordbench.metrics.household import conflict_action_rate
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
    from coordbench.suites.mecobench.instances import load_suite

    tasks = load_suite("v1")[:96:4]
    for team in (2, 4):
        for k, task in enumerate(tasks):
            tr = run_case(task, HouseholdSpec("parallel", team, agents="oracle"), k, "x")
            assert tr.end.success and conflict_action_rate(tr) == 0.0, (team, k)


def test_rule_minds_use_the_appearance_prior():
    """Without appearance descriptions a rule mind may take a look-alike for the goal class;
    it grabs it, puts it back and says so; with the descriptions it never does."""
    from coordbench.agents.household.rule import CONFUSION, LOOKALIKES, RuleMind
    from coordbench.metrics.household import wrong_class_grabs
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
    from coordbench.suites.mecobench.instances import load_suite

    assert 0 < CONFUSION < 1 and "waterglass" in LOOKALIKES["wineglass"]
    assert all(a in LOOKALIKES[b] for a, bs in LOOKALIKES.items() for b in bs)  # symmetric
    tasks = load_suite("v1")[:96]
    wrong = {"full": 0, "no_appearance": 0}
    corrected = 0
    for prior in wrong:
        for k, task in enumerate(tasks):
            tr = run_case(task, HouseholdSpec("parallel", 3, "broadcast", prior=prior), k, "x")
            wrong[prior] += wrong_class_grabs(tr)
            if prior == "no_appearance" and wrong_class_grabs(tr):
                corrected += B.episode_tags(tr)["Correct."] > 0
    assert wrong["full"] == 0
    assert wrong["no_appearance"] > 0 and corrected > 0
    assert RuleMind(0).seed == 0


def test_rule_minds_open_the_furniture_a_location_prior_names():
    """A goal object inside a closed container: with the location prior the mind opens the
    named container first and finishes sooner than without it."""
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case

    task = _v1(2)
    steps = {p: len(run_case(task, HouseholdSpec("parallel", 1, prior=p), 2, "x").steps(
        HouseholdStepEvent)) for p in ("full", "no_location")}
    assert task.spots("full") and task.spots("no_location") == {}
    assert steps["full"] < steps["no_location"]
