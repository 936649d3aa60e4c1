"""Reproduce MECoBench's analyses (seeds: "MECoBench", 2026; Sections 4 and 6, Appendices D-F).

The conditions (`design`) are household conditions on the v1 instance set (96 parallel and 96
sequential cases); `--quick` plays every fourth case (24 + 24). Without a model, the rows the
paper fills with MLLM teams are played by coordbench's rule teams (agents/household/rule.py),
the offline agents that use communication, priors and protocols; with `--model M` every such
row is played by that model. The oracle team is coordbench's reference and always runs.

The paper's numbers quoted here are its best open-weight rows where it reports several models
(Qwen3-VL-32B unless said otherwise), copied from the tables named in each item.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coordbench.analyses.common import (
    correlation,
    mean_diff,
    mean_of,
    mean_score,
    ols_slope,
    proportion_diff,
    rate,
    success,
)
from coordbench.analyses.household import (
    by_objects,
    coordination_queries,
    correction_effect,
    failure_modes,
    levels,
    progress_curves,
    team_scaling,
)
from coordbench.core.atomic import write_atomic
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import HouseholdStepEvent, Trajectory
from coordbench.metrics.household import (
    conflict_action_rate,
    division_of_labor,
    handover_failure_rate,
    n_objects,
    spatial_error_rate,
    step_auc,
    tokens_per_step,
    wrong_class_grabs,
)

from .plots import interval_bars, lines
from .study import (
    VERDICT_RULE,
    Episodes,
    Finding,
    Item,
    Options,
    Study,
    direction,
    gathered_json,
    model_settings,
    show,
    slope_direction,
    table,
)

PAPER = "mecobench"
TITLE = "MECoBench (household teams of MLLM agents)"
PROTOCOLS = ("none", "broadcast", "discuss", "leader", "leader_vision", "shared_memory")
PRIORS = ("full", "no_appearance", "no_location", "none", "noisy")


@dataclass(frozen=True)
class Key:
    """One condition of the study: structure, team size, protocol, prior, and who plays
    ("team": the rule team or the model; "oracle")."""

    structure: str
    team: int
    protocol: str = "broadcast"
    prior: str = "full"
    who: str = "team"
    # a many-model study's mixed team: this model leads, the Options' model follows
    leader: str | None = None


def keys() -> list[Key]:
    """Return every condition the study needs, each once, in a stable order."""
    out: list[Key] = [Key("parallel", 1, "none")]
    for n in (2, 3, 4, 5):  # Table 9 / Fig. 7: with and without communication
        out += [Key("parallel", n, "broadcast"), Key("parallel", n, "none")]
    for p in PROTOCOLS:  # Tables 11-12, Fig. 33: the protocols at two agents
        out += [Key("parallel", 2, p), Key("sequential", 2, p)]
    for prior in PRIORS:  # Table 13, Fig. 35
        out += [Key("parallel", 1, "none", prior), Key("parallel", 2, "broadcast", prior)]
    for n in (3, 4):  # Table 15: scaling without the location prior
        out.append(Key("parallel", n, "broadcast", "no_location"))
    for n in (3, 4, 5):  # Fig. 8b: the leader protocol as teams grow
        out.append(Key("parallel", n, "leader"))
    out.append(Key("parallel", 4, "shared_memory"))  # Fig. 10: shared memory at 4 agents
    for n in (3, 4, 5):  # wrong grabs for Tables 19-20 (no appearance: look-alikes fool)
        out += [Key("parallel", n, "broadcast", "no_appearance"),
                Key("parallel", n, "none", "no_appearance")]
    out += [Key("parallel", 2, "none", "no_appearance"),
            Key("sequential", 2, "broadcast", "no_appearance"),
            Key("sequential", 2, "none", "no_appearance")]
    out += [Key("parallel", n, "none", who="oracle") for n in (1, 2, 3, 4, 5)]
    out.append(Key("sequential", 2, "none", who="oracle"))
    seen: set[Key] = set()
    return [k for k in out if not (k in seen or seen.add(k))]  # type: ignore[func-returns-value]


def quick_tasks(out: Path) -> Path:
    """Write (once) and return the quick subset's task file: every fourth v1 case of each
    structure (all 8 templates and object counts 2-7 stay represented)."""
    from coordbench.suites.mecobench.instances import suite_dicts

    path = out / "reproduce-tasks" / "v1-quarter.json"
    if not path.exists():
        cases = suite_dicts("v1")
        chosen = cases[:96][::4] + cases[96:][::4]
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(chosen))
    return path


def _condition(key: Key, options: Options, out: Path):
    from coordbench.suites.mecobench.episode import RULE_DIALS, HouseholdSpec
    from coordbench.suites.mecobench.suite import mecobench_condition

    agents = "oracle" if key.who == "oracle" else ("llm" if options.model else "rule")
    spec = HouseholdSpec(key.structure, key.team, key.protocol, agents, key.prior,
                         options.seed if agents == "llm" else 0,
                         options.model if agents == "llm" else None, key.leader,
                         dials=options.dials(RULE_DIALS) if agents == "rule" else None)
    if options.tasks:  # the user's own task files, played whole
        return mecobench_condition(str(gathered_json(options.tasks, out, "task")), None, spec)
    if options.quick:
        return mecobench_condition(str(quick_tasks(out)), None, spec)
    return mecobench_condition(None, "v1", spec)


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition[, limit]) items the study plays: the paper's keys, and
    in a many-model study Fig. 32's mixed team (the first model leading this one)."""
    from coordbench.suites.mecobench.suite import SUITE

    return [(SUITE, _condition(k, options, out), options.limit)
            for k in keys() + mixed_keys(options)]


def mixed_keys(options: Options) -> list[Key]:
    """Return Fig. 32's mixed team of a many-model study: the first model (the candidate
    strong leader) leading two agents whose follower is this Options' model."""
    if len(options.model_set) < 2 or options.model == options.model_set[0]:
        return []
    return [Key("parallel", 2, "leader", leader=options.model_set[0])]


def resources(options: Options):
    """Return the household resources of the study's runs (the model harness with `--model`,
    the step cap with `--max-steps`)."""
    from coordbench.suites.mecobench.suite import MecobenchResources

    settings = model_settings(options)
    if settings is None and options.max_steps is None:
        return None
    return MecobenchResources(settings, max_steps=options.max_steps)


def episodes(run: RunDir, options: Options, out: Path) -> Episodes:
    """Return the study's episodes by Key."""
    from coordbench.suites.mecobench.suite import SUITE

    return Episodes(run, {k: SUITE.condition(_condition(k, options, out))
                          for k in keys() + mixed_keys(options)})


def _comm_groups(ep: Episodes, prior: str = "full", teams: Sequence[int] = (2, 3, 4, 5)
                 ) -> dict[str, list[Trajectory]]:
    single = ep(Key("parallel", 1, "none", prior))
    return {"with comm. (broadcast)": single + ep(*(Key("parallel", n, "broadcast", prior)
                                                    for n in teams)),
            "without comm. (none)": single + ep(*(Key("parallel", n, "none", prior)
                                                  for n in teams))}


def _levels_rows(result: dict, label: str) -> list[list]:
    return [[label, team, lv["SR"], lv["CR"], lv["AUC"], str(lv["n"])]
            for team, lv in result["teams"].items()]


def _scaling_item(ep: Episodes) -> Item:
    groups = _comm_groups(ep)
    res = team_scaling(groups)
    rows = [r for label in res for r in _levels_rows(res[label], label)]
    with_, without = groups["with comm. (broadcast)"], groups["without comm. (none)"]
    # the paper's numbers cover 2-4 agents (its five-agent row has no "without" value)
    multi_w = [t for t in with_ if 2 <= int(t.header.params["agents"]) <= 4]
    multi_o = [t for t in without if 2 <= int(t.header.params["agents"]) <= 4]
    comm = proportion_diff(sum(map(success, multi_w)), len(multi_w),
                           sum(map(success, multi_o)), len(multi_o))
    best = res["with comm. (broadcast)"]["best_team"]
    sr = {int(k): v["SR"]["mean"] for k, v in res["with comm. (broadcast)"]["teams"].items()}
    inverted = None if best is None or not sr else (1 < best < max(sr)
                                                    and sr[best] > sr[max(sr)])
    panels = {"SR": {}, "CR": {}}
    for label, r in res.items():
        teams = sorted(int(k) for k in r["teams"])
        for metric in panels:
            vals = [r["teams"][str(n)][metric] for n in teams]
            panels[metric][label] = (teams, [v["mean"] for v in vals], [v["lo"] for v in vals],
                                     [v["hi"] for v in vals])
    fig = lines("Team-size scaling on parallel tasks (fixed effective-step budget): SR and CR "
                "by team size with and without communication, 95% intervals.", panels,
                "agents", "rate", integer_x=True)
    return Item(
        "Table 9 / Fig. 7a", "Team-size scaling, with and without communication",
        "SR with communication (broadcast) for 1-5 agents: Qwen3-VL-32B 0.583, 0.802, 0.833, "
        "0.844, 0.740; Qwen3-VL-8B 0.354, 0.458, 0.521, 0.469, 0.458. Without communication "
        "(1-4 agents): 32B 0.583, 0.583, 0.500, 0.469; 8B 0.354, 0.271, 0.396, 0.323. An "
        "inverted U: moderate teams are best; without communication more agents can hurt.",
        table(["group", "agents", "SR", "CR", "AUC", "n"], rows), [fig],
        [Finding("meco-comm-scaling", "Table 9",
                 "With communication, teams of 2-4 agents succeed more often than without.",
                 {"32B SR (2-4 agents) with": 0.826, "without": 0.517}, show(comm),
                 direction(comm, +1)),
         Finding("meco-inverted-u", "Fig. 7a",
                 "Team-size scaling under communication is an inverted U: the best team size "
                 "lies strictly between 1 and 5 agents.", {"32B best": 4, "8B best": 3},
                 {"best team": best, "SR by team": sr}, inverted,
                 "" if inverted is not None else "no episodes")],
        data=res)


def _objects_item(ep: Episodes) -> Item:
    trajs = _comm_groups(ep)["with comm. (broadcast)"]
    res = by_objects(trajs)
    rows = [[str(r["team"]), str(r["objects"]), r["SR"], r["CR"], str(r["n"])]
            for r in res["rows"]]
    trend_rows = [[team, t["SR"], t["CR"], str(t["SR"]["n"])] for team, t in res["trends"].items()]
    single = res["trends"].get("1", {}).get("SR")
    pooled_fit = ols_slope([float(n_objects(t)) for t in trajs],
                           [float(success(t)) for t in trajs])
    top = max((r["objects"] for r in res["rows"]), default=None)
    at_top = {r["team"]: r["SR"]["mean"] for r in res["rows"] if r["objects"] == top}
    robust = None
    if 1 in at_top and len(at_top) > 1:
        robust = max(v for n, v in at_top.items() if n > 1) > at_top[1]
    panels: dict[str, dict] = {"SR": {}}
    trends: dict[str, dict] = {"SR": {}}
    for team in sorted({r["team"] for r in res["rows"]}):
        mine = [r for r in res["rows"] if r["team"] == team]
        label = f"{team} agent{'s' * (team > 1)}"
        panels["SR"][label] = ([r["objects"] for r in mine], [r["SR"]["mean"] for r in mine],
                               [r["SR"]["lo"] for r in mine], [r["SR"]["hi"] for r in mine])
        fit = res["trends"][str(team)]["SR"]
        trends["SR"][label] = (fit["slope"], fit["intercept"]) if fit["slope"] is not None \
            else None
    fig = lines("SR by number of target objects per team size (broadcast; team 1: alone), "
                "95% Wilson intervals, dashed: least-squares trend.", panels, "target objects",
                "SR", trends=trends, integer_x=True)
    return Item(
        "Table 10 / Fig. 7b / Fig. 36", "SR and CR by number of objects",
        "Qwen3-VL-32B, one agent: SR 0.875 at 2 objects falling to 0.385 at 7; at 7 objects "
        "the best team reaches 0.750 (\"SR nearly doubles\"). Both SR and CR decline with "
        "object count; multi-agent teams degrade more gently.",
        table(["agents", "objects", "SR", "CR", "n"], rows)
        + "\nTrend of SR and CR on the object count (slope per object, 95% CI):\n\n"
        + table(["agents", "SR slope", "CR slope", "n"], trend_rows),
        [fig],
        [Finding("meco-objects-sr", "Fig. 7b / Fig. 36",
                 "SR falls as the number of target objects grows (every team size pooled; "
                 "the paper's trend lines fall for every team size).",
                 {"32B, 1 agent, 2 -> 7 objects": [0.875, 0.385]},
                 {"slope (all teams)": show(pooled_fit), "slope (1 agent)": show(single)},
                 slope_direction(pooled_fit, -1)),
         Finding("meco-objects-robust", "Table 10",
                 "At the highest object count a multi-agent team beats the single agent.",
                 {"32B at 7 objects": {"1 agent": 0.385, "best team": 0.750}},
                 {"objects": top, "SR by team": at_top}, robust,
                 "" if robust is not None else "no single-agent or team episodes")],
        data=res)


def _no_location_item(ep: Episodes) -> Item:
    single = ep(Key("parallel", 1, "none", "no_location"))
    trajs = single + ep(*(Key("parallel", n, "broadcast", "no_location") for n in (2, 3, 4)))
    res = team_scaling({"no location prior, broadcast": trajs})
    rows = _levels_rows(res["no location prior, broadcast"], "no location")
    full = team_scaling(_comm_groups(ep, teams=(2, 3, 4)))["with comm. (broadcast)"]
    rows += _levels_rows(full, "full prior")
    best = res["no location prior, broadcast"]["best_team"]
    return Item(
        "Table 15 / Fig. 34", "Team-size scaling without the location prior",
        "Without location, Qwen3-32B-VL shows a similar but weaker inverted U; Qwen3-8B-VL "
        "stays low at every team size.",
        table(["prior", "agents", "SR", "CR", "AUC", "n"], rows),
        findings=[Finding("meco-noloc-scaling", "Fig. 34",
                          "Without the location prior, a team still beats one agent (the best "
                          "team size is above 1).", {"Qwen3-32B-VL": "weaker inverted U"},
                          {"best team": best}, None if best is None else best > 1)],
        note="Without location the budget is 80 effective steps (MECoBench's no-location "
             "modes), 60 with it, so AUC is normalised by a different budget in the two rows.",
        data=res)


def _progress_item(ep: Episodes) -> Item:
    groups = {f"{n} agent{'s' * (n > 1)}": (ep(Key("parallel", 1, "none")) if n == 1
                                            else ep(Key("parallel", n, "broadcast")))
              for n in (1, 2, 3, 4, 5)}
    curves = progress_curves(groups)
    auc = {label: levels(trajs)["AUC"] for label, trajs in groups.items()}
    faster = None
    if auc["1 agent"]["mean"] is not None and any(
            auc[k]["mean"] is not None for k in auc if k != "1 agent"):
        faster = max(v["mean"] for k, v in auc.items() if k != "1 agent" and v["mean"]
                     is not None) > auc["1 agent"]["mean"]
    panel = {label: (c["steps"], c["mean"], c["lo"], c["hi"]) for label, c in curves.items()}
    fig = lines("Task progress over equivalent steps (effective steps summed over agents), "
                "1-5 agents under broadcast on parallel tasks: mean CR and 95% band.",
                {"completion": panel}, "equivalent steps", "CR")
    return Item(
        "Fig. 30", "Task progress over equivalent steps, 1-5 agents",
        "Qwen3-VL-32B under broadcast: teams of 2-4 reach a given completion in fewer "
        "equivalent steps than one agent; five agents fall back.",
        table(["team", "AUC", "n"], [[k, v, str(v["n"])] for k, v in auc.items()]),
        [fig],
        [Finding("meco-progress", "Fig. 30",
                 "Some multi-agent team completes faster than one agent (higher step-CR AUC).",
                 {"32B AUC 1 agent": 0.542, "best team": 0.694},
                 {k: v["mean"] for k, v in auc.items()}, faster)],
        data=curves)


def _steps(traj: Trajectory) -> float:
    return float(len(traj.steps(HouseholdStepEvent)))


def _metric(trajs: Sequence[Trajectory], fn) -> dict:
    return mean_score([v for v in (fn(t) for t in trajs) if v is not None])


def _protocol_item(ep: Episodes) -> Item:
    par_rows, seq_rows, dol, car = [], [], {}, {}
    for p in PROTOCOLS:
        tp, ts = ep(Key("parallel", 2, p)), ep(Key("sequential", 2, p))
        lp, ls = levels(tp), levels(ts)
        dol[p], car[p] = _metric(tp, division_of_labor), _metric(tp, conflict_action_rate)
        par_rows.append([p, lp["SR"], lp["CR"], lp["AUC"], dol[p], car[p],
                         _metric(tp, tokens_per_step), str(lp["n"])])
        seq_rows.append([p, ls["SR"], ls["CR"], ls["AUC"], _metric(ts, spatial_error_rate),
                         _metric(ts, handover_failure_rate), str(ls["n"])])
    lead = [division_of_labor(t) for t in ep(Key("parallel", 2, "leader"))]
    bcast = [division_of_labor(t) for t in ep(Key("parallel", 2, "broadcast"))]
    dol_diff = mean_diff([v for v in lead if v is not None], [v for v in bcast if v is not None])
    disc = [conflict_action_rate(t) for t in ep(Key("parallel", 2, "discuss"))]
    bc = [conflict_action_rate(t) for t in ep(Key("parallel", 2, "broadcast"))]
    car_diff = mean_diff(disc, bc)
    groups = {"1 agent": ep(Key("parallel", 1, "none")),
              **{p: ep(Key("parallel", 2, p)) for p in PROTOCOLS}}
    curves = progress_curves(groups)
    fig = lines("Task progress over equivalent steps under each protocol, two agents on "
                "parallel tasks (and one agent): mean CR and 95% band.",
                {"completion": {k: (c["steps"], c["mean"], c["lo"], c["hi"])
                                for k, c in curves.items()}}, "equivalent steps", "CR")
    return Item(
        "Table 12 / Fig. 8a / Fig. 33", "Communication protocols (two agents)",
        "Leader raises DOL over broadcast (Qwen3-VL-32B 0.855 vs 0.802, Gemma4-31B 0.840 vs "
        "0.794, GPT-5.4 0.883 vs 0.773); discuss has the fewest conflicts (CAR 0.003 vs "
        "0.020 for 32B, 0.001 vs 0.019 for Gemma4-31B).",
        "Parallel tasks:\n\n" + table(["protocol", "SR", "CR", "AUC", "DOL", "CAR", "tokens/step",
                                      "n"], par_rows)
        + "\nSequential tasks:\n\n" + table(["protocol", "SR", "CR", "AUC", "spatial error",
                                             "HFR", "n"], seq_rows),
        [fig],
        [Finding("meco-leader-dol", "Table 12",
                 "A leader divides the labour more evenly than broadcast (higher DOL).",
                 {"32B leader": 0.855, "broadcast": 0.802}, show(dol_diff),
                 direction(dol_diff, +1)),
         Finding("meco-discuss-car", "Table 12",
                 "Discussion rounds lower the conflict rate below broadcast's.",
                 {"32B discuss": 0.003, "broadcast": 0.020}, show(car_diff),
                 direction(car_diff, -1))],
        note="Rule minds answer READY in the first discussion round unless their claim just "
             "changed, so discuss plays like broadcast for them; they use no model (tokens "
             "per step 0) and never step outside their zone (spatial error 0).",
        data={"DOL": dol, "CAR": car, "curves": curves})


def _comm_ablation_item(ep: Episodes) -> Item:
    rows, found = [], []
    cells = {}
    for structure in ("parallel", "sequential"):
        for p in ("broadcast", "none"):
            trajs = ep(Key(structure, 2, p))
            lv = levels(trajs)
            extra = _metric(trajs, conflict_action_rate if structure == "parallel"
                            else handover_failure_rate)
            cells[(structure, p)] = trajs
            rows.append([structure, p, lv["SR"], lv["CR"], lv["AUC"],
                         ("CAR " if structure == "parallel" else "HFR ") + show(extra),
                         str(lv["n"])])

    def values(trajs, fn):
        return [v for v in (fn(t) for t in trajs) if v is not None]

    car = mean_diff(values(cells[("parallel", "broadcast")], conflict_action_rate),
                    values(cells[("parallel", "none")], conflict_action_rate))
    hfr = mean_diff(values(cells[("sequential", "broadcast")], handover_failure_rate),
                    values(cells[("sequential", "none")], handover_failure_rate))
    sb, sn = cells[("sequential", "broadcast")], cells[("sequential", "none")]
    seq_sr = proportion_diff(sum(map(success, sb)), len(sb), sum(map(success, sn)), len(sn))
    found += [
        Finding("meco-comm-car", "Table 11 / Fig. 9a",
                "Communication lowers the conflict-action rate on parallel tasks.",
                {"32B broadcast": 0.020, "no comm": 0.028}, show(car), direction(car, -1)),
        Finding("meco-comm-hfr", "Table 11 / Fig. 9a",
                "Communication lowers the handover failure rate on sequential tasks.",
                {"32B broadcast": 0.294, "no comm": 0.733}, show(hfr), direction(hfr, -1)),
        Finding("meco-comm-seq-sr", "Table 11",
                "Without communication sequential (handover) tasks mostly fail.",
                {"32B broadcast": 0.365, "no comm": 0.073}, show(seq_sr),
                direction(seq_sr, +1))]
    return Item("Table 11 / Fig. 9a", "Removing communication (two agents)",
                "Removing communication lowers SR and CR, raises CAR on parallel tasks and "
                "HFR on sequential ones (Qwen3-VL-32B: parallel SR 0.802 vs 0.583, CAR 0.020 "
                "vs 0.028; sequential SR 0.365 vs 0.073, HFR 0.294 vs 0.733).",
                table(["structure", "protocol", "SR", "CR", "AUC", "CAR / HFR", "n"], rows),
                findings=found, data={"CAR": car, "HFR": hfr, "sequential_SR": seq_sr})


def _prior_item(ep: Episodes) -> Item:
    rows, by_prior = [], {}
    for prior in PRIORS:
        for team, proto in ((1, "none"), (2, "broadcast")):
            trajs = ep(Key("parallel", team, proto, prior))
            by_prior[(team, prior)] = trajs
            lv = levels(trajs)
            steps_ok = [_steps(t) for t in trajs if success(t)]
            rows.append([prior, str(team), lv["SR"], lv["CR"], lv["AUC"],
                         mean_of(steps_ok), mean_of([float(wrong_class_grabs(t))
                                                     for t in trajs]), str(lv["n"])])
    full, noloc = by_prior[(2, "full")], by_prior[(2, "no_location")]
    sr = proportion_diff(sum(map(success, noloc)), len(noloc), sum(map(success, full)),
                         len(full))
    steps = mean_diff([_steps(t) for t in noloc if success(t)],
                      [_steps(t) for t in full if success(t)])
    noapp = by_prior[(2, "no_appearance")]
    wg = mean_diff([float(wrong_class_grabs(t)) for t in noapp],
                   [float(wrong_class_grabs(t)) for t in full])
    single_full, single_noloc = by_prior[(1, "full")], by_prior[(1, "no_location")]
    steps1 = mean_diff([_steps(t) for t in single_noloc if success(t)],
                       [_steps(t) for t in single_full if success(t)])
    return Item(
        "Table 13 / Fig. 35 (Section 6.1)", "Prior information",
        "Removing the location prior costs every model heavily (two agents: GPT-5-mini SR "
        "0.917 -> 0.344, Gemma4-31B 0.833 -> 0.229, Qwen3-32B-VL 0.802 -> 0.260); the effect "
        "of appearance descriptions depends on the model (GPT-5-mini 0.917 -> 0.865 without, "
        "Gemma4-31B and Qwen3-32B-VL unchanged).",
        table(["prior", "agents", "SR", "CR", "AUC", "team steps on success",
               "wrong grabs / episode", "n"], rows),
        findings=[
            Finding("meco-location-sr", "Table 13 / Fig. 35",
                    "Removing the location prior lowers SR (two agents).",
                    {"GPT-5-mini": [0.917, 0.344], "Qwen3-32B-VL": [0.802, 0.260]}, show(sr),
                    direction(sr, -1),
                    "MECoBench gives no-location runs 80 effective steps instead of 60"),
            Finding("meco-location-steps", "Section 6.1",
                    "Without location the team needs more steps to finish (exploration).",
                    None, {"2 agents": show(steps), "1 agent": show(steps1)},
                    direction(steps, +1), "coordbench's measure: steps on success"),
            Finding("meco-appearance-wg", "Section 6.1",
                    "Without appearance descriptions look-alike objects are grabbed by "
                    "mistake more often.", "model-dependent (no number)", show(wg),
                    direction(wg, +1),
                    "rule teams model look-alike confusion (docs/household.md)")],
        note="Rule minds use what each prior gives: location hints and named furniture send "
             "them to search there first; appearance descriptions stop them taking a "
             "look-alike for the goal class (agents/household/rule.py).",
        data={"SR_no_location_minus_full": sr, "steps": steps, "wrong_grabs": wg})


def _talking(ep: Episodes) -> list[Trajectory]:
    return [t for k in keys() if k.who == "team" and k.protocol != "none" for t in ep(k)]


def _failure_rows(res: dict, sample: str) -> list[list]:
    rows = []
    for structure, modes in res.items():
        for mode, r in modes.items():
            lift = r["lift"]
            rows.append([sample, structure, mode, r["freq"], "n/a" if lift is None else
                         (lift if isinstance(lift, str) else f"{lift:.2f}x"), r["SR_with"],
                         r["delta_SR"]])
    return rows


def _failure_item(ep: Episodes) -> Item:
    team = [k for k in keys() if k.who == "team"]
    paper_sample = failure_modes([t for k in team if k.protocol == "broadcast" for t in ep(k)])
    pooled = failure_modes([t for k in team for t in ep(k)])
    rows = (_failure_rows(paper_sample, "broadcast (the paper's)")
            + _failure_rows(pooled, "every protocol"))
    # rule teams that talk rarely grab one object together, and pooling protocols would
    # compare teams that talk with teams that do not: the conflict claim is judged within
    # each protocol and the per-protocol differences are combined (weights: episodes)
    per_protocol = {}
    for proto in PROTOCOLS:
        trajs = [t for k in team if k.protocol == proto and k.structure == "parallel"
                 for t in ep(k)]
        per_protocol[proto] = failure_modes(trajs).get("parallel", {}).get("grab_conflict")
    conflict = _stratified(per_protocol)
    rows += [["parallel, " + proto, "parallel", "grab_conflict", r["freq"], "", r["SR_with"],
              r["delta_SR"]] for proto, r in per_protocol.items() if r is not None]
    halluc = pooled.get("parallel", {}).get("hallucinated_completion", {})
    h_holds = None
    if halluc and halluc["SR_with"]["n"]:
        h_holds = halluc["SR_with"]["mean"] == 0.0
    return Item(
        "Table 22", "Failure modes",
        "Over all models and team sizes under broadcast: grab conflict in 22.9% of parallel "
        "episodes, lift 1.5x, SR with it 71.4%, delta SR -9.0 points; hallucinated "
        "completion in 1.0% (parallel) and 1.5% (sequential) of episodes, SR with it 0%.",
        table(["episodes", "structure", "mode", "freq", "lift", "SR with", "delta SR"], rows),
        findings=[
            Finding("meco-conflict-sr", "Table 22",
                    "Episodes with a grab conflict succeed less often (delta SR < 0).",
                    {"parallel delta SR": -0.090}, show(conflict), direction(conflict, -1),
                    "within each protocol, the per-protocol differences combined by their "
                    "episodes (pooling protocols would confound conflicts with not talking); "
                    "protocols with both sides: "
                    f"{', '.join(conflict.get('strata', [])) or 'none'}"),
            Finding("meco-hallucination-sr", "Table 22",
                    "An episode with a hallucinated completion never succeeds.",
                    {"SR with": 0.0}, show(halluc.get("SR_with")) if halluc else None,
                    h_holds, "" if h_holds is not None else
                    "no hallucinated completion in these episodes (rule minds never claim "
                    "the task done early)")],
        data={"broadcast": paper_sample, "every_protocol": pooled,
              "conflict_by_protocol": per_protocol, "conflict_stratified": conflict})


def _stratified(cells: dict[str, dict | None]) -> dict:
    """Return the episode-weighted mean of per-stratum SR differences (with minus without a
    failure mode) with a normal 95% interval from the strata's Wilson half-widths, over the
    strata where both sides have episodes; delta None when there is none."""
    import math

    parts = []
    for name, r in cells.items():
        if r is None or r["delta_SR"]["delta"] is None:
            continue
        d = r["delta_SR"]
        n = d["n"] + d["n_ref"]
        half = max(d["delta"] - d["lo"], d["hi"] - d["delta"]) / 1.96
        parts.append((name, n, d["delta"], half))
    if not parts:
        return {"delta": None, "lo": None, "hi": None, "strata": []}
    total = sum(n for _, n, _, _ in parts)
    delta = sum(n * x for _, n, x, _ in parts) / total
    se = math.sqrt(sum((n / total) ** 2 * h ** 2 for _, n, _, h in parts))
    return {"delta": delta, "lo": delta - 1.96 * se, "hi": delta + 1.96 * se,
            "strata": [name for name, *_ in parts]}


def _query_item(ep: Episodes) -> Item:
    res = coordination_queries(_talking(ep))
    rows = []
    for structure, r in res.items():
        for side in ("with_query", "without_query"):
            s = r[side]
            rows.append([structure, side.replace("_", " "), str(s["n"]), s["objects"], s["SR"],
                         s["stuck"], s["negative"]])
    found = []
    for structure, paper in (("parallel", {"with": 0.646, "without": 0.747}),
                             ("sequential", {"with": 0.323, "without": 0.478})):
        d = res.get(structure, {}).get("delta_SR")
        holds = direction(d, -1) if d else None
        found.append(Finding(f"meco-query-sr-{structure}", "Table 18",
                             f"Episodes with coordination queries succeed less ({structure}).",
                             paper, show(d), holds,
                             "" if d and d["delta"] is not None else
                             "no coordination query in these episodes"))
    return Item(
        "Table 18", "Coordination queries and hard coordination states",
        "Parallel: 370 cases with a query (4.70 objects, SR 64.6%, stuck 8.4%, negative 11.1%) "
        "vs 1727 without (4.35, 74.7%, 2.0%, 4.5%); sequential: 591 (4.51, 32.3%, 3.9%, 6.6%) "
        "vs 627 (4.30, 47.8%, 1.6%, 3.2%).",
        table(["structure", "group", "episodes", "objects", "SR", "stuck", "negative report"],
              rows), findings=found,
        note="A query is a message with the Coord-Q tag (rules v2: a question about "
             "teammates or the team's state; a rule giver's DOOR d WAIT counts); stuck and "
             "negative reports are keyword rules on messages (metrics/behaviour.py); rule "
             "minds report MISSING when a claimed object is gone.", data=res)


def _correction_item(ep: Episodes) -> Item:
    trajs = [t for k in keys() if k.who == "team" for t in ep(k)]
    res = correction_effect(trajs)
    rows, strata_rows, found = [], [], []
    for structure, r in res.items():
        for part, label in (("overall", "overall"), ("wg_conditional", "WG-conditional")):
            for side in ("corrected", "uncorrected"):
                s = r[part][side]
                rows.append([structure, label, side, str(s["n"]), s["SR"], s["CR"], s["WG"]])
        for stratum, s in r["strata"].items():
            strata_rows.append([structure, stratum, str(s["corrected"]["n"]),
                                s["corrected"]["SR"], str(s["uncorrected"]["n"]),
                                s["uncorrected"]["SR"], s["delta"]["SR"], s["delta"]["CR"]])
        adj = r["wg_conditional"]["adjusted"]
        raw = r["wg_conditional"]["raw_delta"]
        rows.append([structure, "WG-conditional", "raw delta", "", raw["SR"], raw["CR"], ""])
        rows.append([structure, "WG-conditional", "adjusted delta (strata "
                     + (", ".join(adj["strata"]) or "none") + ")", "", show(adj["SR"]),
                     show(adj["CR"]), ""])
        paper = {"parallel": {"adjusted dSR": 0.024, "dCR": 0.035},
                 "sequential": {"adjusted dSR": 0.118, "dCR": 0.154}}[structure] \
            if structure in ("parallel", "sequential") else None
        holds = direction(adj["SR"], +1)
        found.append(Finding(
            f"meco-correction-{structure}", "Tables 19-20",
            f"Given wrong grabs, correction raises SR once stratified by the number of wrong "
            f"grabs ({structure}).", paper, {"adjusted dSR": show(adj["SR"]),
                                             "adjusted dCR": show(adj["CR"])}, holds,
            "" if adj["SR"] is not None else
            "no wrong-grab stratum with 2+ corrected and 2+ uncorrected episodes"))
    return Item(
        "Tables 19-20", "Correction after wrong grabs",
        "Correction co-occurs with wrong grabs (parallel: 3.05 vs 1.37 per episode); the raw "
        "effect on SR is negative (-6.7), but stratified by wrong-grab count with shared "
        "weights it is positive: parallel +2.4 SR / +3.5 CR, sequential +11.8 / +15.4.",
        table(["structure", "episodes", "group", "n", "SR", "CR", "wrong grabs"], rows)
        + "\nBy wrong-grab count (Table 20):\n\n"
        + table(["structure", "#WG", "n corrected", "SR corrected", "n uncorrected",
                 "SR uncorrected", "delta SR", "delta CR"], strata_rows),
        findings=found,
        note="A correction is a message with the Correct. tag; rule minds correct after "
             "picking up a look-alike by mistake (put it back, CORRECTION message) when they "
             "can talk, and silently otherwise.", data=res)


def _oracle_item(ep: Episodes) -> Item:
    rows, ok = [], True
    any_ep = False
    for k in keys():
        if k.who != "oracle":
            continue
        trajs = ep(k)
        any_ep = any_ep or bool(trajs)
        sr = rate(sum(map(success, trajs)), len(trajs))
        car = [conflict_action_rate(t) for t in trajs]
        ok = ok and sr["mean"] == 1.0 and max(car, default=0.0) == 0.0
        rows.append([k.structure, str(k.team), sr, f"{max(car, default=0.0):.3f}",
                     str(len(trajs))])
    holds = ok if any_ep else None
    return Item(
        "Reference", "The oracle team",
        "The paper's tasks are validated with scripted plans; it reports no oracle numbers.",
        table(["structure", "agents", "SR", "max CAR", "cases"], rows),
        findings=[Finding("meco-oracle", "coordbench",
                          "The oracle team succeeds on every case without a conflict.", None,
                          {"all SR 1 and CAR 0": ok}, holds)])


# Table 2's published rows: tag -> (parallel freq, dSR, dCR, sequential freq, dSR, dCR), the
# deltas in percentage points (with minus without the behaviour), over all models
TABLE2 = {
    "Info-Plan": (75.6, 4.6, 2.8, 86.3, 16.9, 18.0),
    "Act-Del": (57.1, 12.2, 7.7, 54.3, 13.1, 19.2),
    "Info-Loc": (47.3, 9.1, 6.9, 68.0, 7.6, 13.3),
    "Info-Obj": (25.9, 5.0, 3.9, 16.3, -6.7, -1.6),
    "Coord-Q": (17.6, -10.1, -1.8, 48.5, -15.5, -6.7),
    "Correct.": (16.9, -6.7, 1.6, 6.9, -11.3, 7.7),
    "Task-Assign": (15.7, 1.9, 2.9, 8.5, -11.5, -4.9),
}


def _tag_deltas(trajs: Sequence[Trajectory]) -> dict[str, dict]:
    """Return per tag: its frequency (Wilson), SR with minus without (Newcombe) and CR with
    minus without (Welch), over `trajs`."""
    from coordbench.metrics.behaviour import TAGS, episode_tags
    from coordbench.metrics.household import completion_rate

    tagged = [(episode_tags(t), success(t), completion_rate(t)) for t in trajs]
    out = {}
    for tag in TAGS:
        w = [(s, c) for tags, s, c in tagged if tags[tag] > 0]
        o = [(s, c) for tags, s, c in tagged if tags[tag] == 0]
        out[tag] = {"freq": rate(len(w), len(tagged)),
                    "delta_SR": proportion_diff(sum(s for s, _ in w), len(w),
                                                sum(s for s, _ in o), len(o)),
                    "delta_CR": mean_diff([c for _, c in w], [c for _, c in o])}
    return out


def _tags_item(ep: Episodes) -> Item:
    talking = _talking(ep)
    res = {st: _tag_deltas([t for t in talking if t.header.params.get("structure") == st])
           for st in ("parallel", "sequential")}
    rows = []
    for tag, paper in TABLE2.items():
        for k, st in enumerate(("parallel", "sequential")):
            r = res[st].get(tag)
            if r is None:
                continue
            f, dsr, dcr = paper[3 * k: 3 * k + 3]
            rows.append([tag, st, f"{f:.1f}% / {dsr:+.1f} / {dcr:+.1f}", r["freq"],
                         r["delta_SR"], r["delta_CR"]])
    pooled = _tag_deltas(talking)

    def sign_finding(fid, tag, claim, sign, key="delta_SR"):
        d = pooled[tag][key]
        paper = {st: TABLE2[tag][1 + 3 * k if key == "delta_SR" else 2 + 3 * k]
                 for k, st in enumerate(("parallel", "sequential"))}
        return Finding(fid, "Table 2", claim, {f"{st} {key.split('_')[1]} (points)": v
                                               for st, v in paper.items()}, show(d),
                       direction(d, sign), "" if d["delta"] is not None else
                       "the behaviour never (or always) occurs in these episodes")
    found = [sign_finding("meco-tags-plan", "Info-Plan", "Episodes that share plans "
                          "(Info-Plan) succeed more often.", +1),
             sign_finding("meco-tags-loc", "Info-Loc", "Episodes that share locations "
                          "(Info-Loc) succeed more often.", +1),
             sign_finding("meco-tags-coordq", "Coord-Q", "Episodes with coordination "
                          "questions (Coord-Q) succeed less often.", -1),
             sign_finding("meco-tags-correct-cr", "Correct.", "Corrections go with a higher "
                          "completion rate (in both structures; their SR is lower).", +1,
                          "delta_CR")]
    return Item(
        "Table 2", "Fine-grained collaborative behaviours",
        "Over all models (talking protocols), per structure: the share of cases showing each "
        "behaviour and the percentage-point difference in SR and CR between cases with and "
        "without it (published rows in the table: freq / dSR / dCR). Info-Plan, Act-Del and "
        "Info-Loc go with higher SR in both structures; Coord-Q with lower SR; corrections "
        "with lower SR but higher CR.",
        table(["behaviour", "structure", "paper: freq / dSR / dCR", "freq", "SR with - "
               "without", "CR with - without"], rows),
        findings=found,
        note="Tags are coordbench's versioned keyword rules (metrics/behaviour.py) applied to "
             "every talking protocol's episodes; rule minds speak in tokens (CLAIM, SEEN, "
             "DOOR d WAIT, ...) that the rules read.",
        data={"parallel": res["parallel"], "sequential": res["sequential"],
              "pooled": pooled})


# Table 3's published rows: model -> {prior: (1-agent SR, 2-agent SR)} (%), broadcast
TABLE3 = {
    "GPT-5-mini": {"noisy": (76.04, 82.29), "full": (90.62, 91.67),
                   "no_location": (32.29, 34.38)},
    "Qwen3-32B-VL": {"noisy": (54.17, 69.79), "full": (58.33, 75.00),
                     "no_location": (21.88, 26.04)},
    "Qwen3.5-9B": {"noisy": (78.12, 81.25), "full": (85.42, 88.54),
                   "no_location": (29.17, 29.17)},
}


def _relative_gain_item(ep: Episodes) -> Item:
    rows, gains, data = [], {}, {}
    for prior in ("noisy", "full", "no_location"):
        one = ep(Key("parallel", 1, "none", prior))
        two = ep(Key("parallel", 2, "broadcast", prior))
        s1, s2 = rate(sum(map(success, one)), len(one)), rate(sum(map(success, two)), len(two))
        diff = proportion_diff(s2["count"], s2["n"], s1["count"], s1["n"])
        gain = None if not s1["mean"] or s2["mean"] is None else (s2["mean"] - s1["mean"]) \
            / s1["mean"]
        gains[prior] = gain
        data[prior] = {"SR_1": s1, "SR_2": s2, "gain": diff, "relative_gain": gain}
        paper = "; ".join(f"{m} {(v[prior][1] - v[prior][0]) / v[prior][0]:+.1%} "
                          f"({v[prior][0]:.1f} -> {v[prior][1]:.1f})" for m, v in TABLE3.items())
        rows.append([prior, paper, s1, s2, diff, "n/a" if gain is None else f"{gain:+.1%}"])
    noisy = gains["noisy"]
    others = [g for k, g in gains.items() if k != "noisy" and g is not None]
    holds = None if noisy is None or not others else noisy > max(others)
    return Item(
        "Table 3 / Fig. 12", "Collaboration under noisy and missing location priors",
        "Relative SR gain of two agents (broadcast) over one, with noisy location priors "
        "(30% false locations), clean priors and no location priors: the gain is largest "
        "with noise for all three models.",
        table(["prior", "paper: relative gain (1 -> 2 agents, %)", "SR 1 agent",
               "SR 2 agents", "2 - 1", "relative gain"], rows),
        findings=[Finding(
            "meco-noise-gain", "Table 3",
            "Collaboration gains most (relative SR gain of two agents over one) when the "
            "location prior is noisy.",
            {m: {p: round((v[p][1] - v[p][0]) / v[p][0], 4) for p in v}
             for m, v in TABLE3.items()},
            {p: None if g is None else round(g, 4) for p, g in gains.items()}, holds,
            "point estimates of the relative gains (their differences have no interval "
            "here); the absolute gains and their Newcombe intervals are in the table"
            if holds is not None else "a prior with no single-agent success")],
        data=data)


def _leader_scaling_item(ep: Episodes) -> Item:
    teams = (2, 3, 4, 5)
    panels: dict[str, dict] = {"SR": {}, "CR": {}}
    rows, gap_x, gap_y = [], [], []
    for proto in ("broadcast", "leader"):
        per = {n: levels(ep(Key("parallel", n, proto))) for n in teams}
        for metric in panels:
            panels[metric][proto] = (list(teams), [per[n][metric]["mean"] for n in teams],
                                     [per[n][metric]["lo"] for n in teams],
                                     [per[n][metric]["hi"] for n in teams])
        rows += [[proto, str(n), per[n]["SR"], per[n]["CR"], str(per[n]["n"])] for n in teams]
    # the leader's advantage per episode pair (same case, same team size): its trend on n
    for n in teams:
        lead = {t.header.task_id: success(t) for t in ep(Key("parallel", n, "leader"))}
        for t in ep(Key("parallel", n, "broadcast")):
            if t.header.task_id in lead:
                gap_x.append(float(n))
                gap_y.append(float(lead[t.header.task_id]) - float(success(t)))
    fit = ols_slope(gap_x, gap_y)
    fig = lines("SR and CR by team size on parallel tasks under decentralized broadcast and "
                "the centralized leader protocol, 95% intervals.", panels, "agents", "rate",
                integer_x=True)
    return Item(
        "Fig. 8b", "Collaboration modes as teams grow",
        "Centralized (leader) coordination is effective in small teams but saturates as the "
        "team grows, while decentralized broadcast keeps scaling.",
        table(["protocol", "agents", "SR", "CR", "n"], rows)
        + f"\nLeader minus broadcast SR on the same case, slope per added agent: "
          f"{show(fit)}.\n",
        [fig],
        [Finding("meco-leader-saturates", "Fig. 8b",
                 "The leader protocol's advantage over broadcast shrinks as the team grows "
                 "(slope of the per-case SR difference on team size < 0).",
                 "saturates with team size (figure only)", show(fit),
                 slope_direction(fit, -1))],
        data={"slope": fit})


def _shared_memory_item(ep: Episodes) -> Item:
    rows, found, data = [], [], {}
    for structure, n in (("parallel", 2), ("parallel", 4), ("sequential", 2)):
        mem, bc = ep(Key(structure, n, "shared_memory")), ep(Key(structure, n, "broadcast"))
        lm, lb = levels(mem), levels(bc)
        d = proportion_diff(sum(map(success, mem)), len(mem), sum(map(success, bc)), len(bc))
        auc = mean_diff([v for v in (levels([t])["AUC"]["mean"] for t in mem) if v is not None],
                        [v for v in (levels([t])["AUC"]["mean"] for t in bc) if v is not None])
        tok = mean_diff([tokens_per_step(t) for t in mem], [tokens_per_step(t) for t in bc])
        data[f"{structure} {n}"] = {"SR": d, "AUC": auc, "tokens_per_step": tok}
        rows.append([structure, str(n), lb["SR"], lm["SR"], d, auc, tok])
    par, seq = data["parallel 2"]["SR"], data["sequential 2"]["SR"]
    par4 = data["parallel 4"]["SR"]
    tokens = data["parallel 2"]["tokens_per_step"]
    found = [
        Finding("meco-memory-parallel", "Fig. 10 / Fig. 31",
                "Shared memory raises SR over broadcast on parallel tasks (2 and 4 agents).",
                "improves SR on parallel tasks", {"2 agents": show(par), "4 agents":
                                                  show(par4)},
                None if direction(par, +1) is None or direction(par4, +1) is None
                else direction(par, +1) and direction(par4, +1)),
        Finding("meco-memory-sequential", "Fig. 10 / Fig. 31",
                "Shared memory lowers SR below broadcast on sequential tasks.",
                "degrades on sequential tasks", show(seq), direction(seq, -1)),
        Finding("meco-memory-tokens", "Fig. 10",
                "Shared memory greatly reduces token use.", "greatly reduces tokens",
                show(tokens), None if not any(v for v in (tokens.get("delta"),)) else
                direction(tokens, -1), "rule minds spend no tokens (--model, or a message "
                "cost dial, measures it)" if not tokens.get("delta") else "")]
    return Item(
        "Fig. 10 / Fig. 31", "Shared memory against broadcast",
        "Shared memory improves SR on parallel tasks and lowers token use greatly, but "
        "degrades on sequential tasks, where handovers need explicit timing.",
        table(["structure", "agents", "SR broadcast", "SR shared memory", "SR memory - "
               "broadcast", "AUC memory - broadcast", "tokens/step memory - broadcast"],
              rows), findings=found, data=data)


def _duplicate_grab_item(ep: Episodes) -> Item:
    from coordbench.metrics.household import duplicate_grabs

    rows, xs, ys, data = [], [], [], {}
    for proto in ("broadcast", "none"):
        for n in (2, 3, 4, 5):
            trajs = ep(Key("parallel", n, proto))
            has = [duplicate_grabs(t) > 0 for t in trajs]
            r = rate(sum(has), len(has))
            data[f"{proto} {n}"] = r
            rows.append([proto, str(n), r, mean_of([float(duplicate_grabs(t))
                                                    for t in trajs])])
            if proto == "broadcast":
                xs += [float(n)] * len(has)
                ys += [float(h) for h in has]
    fit = ols_slope(xs, ys)
    return Item(
        "Section 6.2 / Fig. 37", "Duplicate grabs by team size",
        "Duplicate grabs grow with the team: for Qwen3-32B-VL under broadcast, five agents "
        "duplicate a grab in 57.4% of episodes (InternVL3.5 at two agents: 21.9%).",
        table(["protocol", "agents", "episodes with a duplicate grab", "per episode"], rows)
        + f"\nSlope of the share on team size (broadcast): {show(fit)}.\n",
        findings=[Finding("meco-dupgrab-size", "Section 6.2",
                          "Duplicate grabs become more common as the team grows (broadcast).",
                          {"Qwen3-32B-VL, 5 agents": 0.574}, show(fit),
                          slope_direction(fit, +1))],
        data={"by_team": data, "slope": fit})


def _bars_item(ep: Episodes) -> Item:
    """A figure of the communication effect on CAR at every team size, with intervals."""
    diffs = {}
    for n in (2, 3, 4, 5):
        diffs[f"{n} agents"] = mean_diff(
            [conflict_action_rate(t) for t in ep(Key("parallel", n, "broadcast"))],
            [conflict_action_rate(t) for t in ep(Key("parallel", n, "none"))])
    fig = interval_bars("Change in CAR from adding communication (broadcast minus none), "
                        "parallel tasks, Welch 95% intervals.",
                        {"CAR": {k: (d["delta"], d["lo"], d["hi"]) for k, d in diffs.items()}},
                        "difference", zero=True)
    verdicts = [direction(d, -1) for d in diffs.values()]
    holds = (False if False in verdicts else None if None in verdicts else True)
    return Item("Fig. 9a (by team size)", "Communication and conflicts at every team size",
                "Removing communication increases CAR (Table 11 and Fig. 9a, two agents).",
                table(["team", "CAR broadcast minus none", "n"],
                      [[k, d, str(d["n"])] for k, d in diffs.items()]), [fig],
                [Finding("meco-comm-car-teams", "Fig. 9a",
                         "Communication lowers CAR at every team size from 2 to 5.",
                         "two agents only (Table 11)", {k: show(d) for k, d in diffs.items()},
                         holds, "coordbench's extension to more agents")],
                data=diffs)


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the MECoBench study recomputed from the run's trajectories."""
    ep = episodes(run, options, out)
    who = (f"the model `{options.model}`" if options.model else
           options.offline_who("rule teams"))
    subset = ("the quick subset (every fourth v1 case: 24 parallel + 24 sequential)"
              if options.quick else "the v1 instance set (96 parallel + 96 sequential cases)")
    if options.tasks:
        subset = f"the task files of `{options.tasks}` (every task, played whole)"
    preamble = (f"Rows the paper fills with MLLM teams are played here by {who}, on {subset}. "
                + VERDICT_RULE + " Conflict set: grab and open (the paper's).")
    items = [_scaling_item(ep), _objects_item(ep), _no_location_item(ep), _progress_item(ep),
             _comm_ablation_item(ep), _bars_item(ep), _protocol_item(ep), _prior_item(ep),
             _failure_item(ep), _query_item(ep), _correction_item(ep), _tags_item(ep),
             _relative_gain_item(ep), _leader_scaling_item(ep), _shared_memory_item(ep),
             _duplicate_grab_item(ep), _oracle_item(ep)]
    return Study(PAPER, TITLE, preamble, items)


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [f"{k.structure} n={k.team} {k.protocol} {k.prior}"
            + (" oracle" if k.who == "oracle" else "")
            + (f" led by {k.leader}" if k.leader else "") for k in keys() + mixed_keys(options)]


# Table 8 (two agents, broadcast: the paper's normal setting; one agent, no protocol)
SINGLE = Key("parallel", 1, "none")
PAIR = Key("parallel", 2, "broadcast")
SEQUENTIAL = Key("sequential", 2, "broadcast")


def compare(run: RunDir, each: Sequence[Options], out: Path) -> list[Item]:
    """Return the paper's model comparisons over the models of a many-model study: Table 8
    (parallel 1 and 2 agents, sequential 2 agents: SR, CR, AUC per model), Fig. 5
    (individual vs collaborative ability) and Fig. 6 (the change from one agent to two),
    with the paper's model findings judged on these models."""
    from .models import majority_finding, order_breaks, paired_by_task

    eps = {str(o.model): episodes(run, o, out) for o in each}
    models = list(eps)
    lv = {m: {k: levels(ep(k)) for k in (SINGLE, PAIR, SEQUENTIAL)} for m, ep in eps.items()}
    rows = []
    for m in models:
        p1, p2, s2 = lv[m][SINGLE], lv[m][PAIR], lv[m][SEQUENTIAL]
        avg_sr = mean_of([x for x in (p2["SR"]["mean"], s2["SR"]["mean"]) if x is not None])
        rows.append([m, p1["SR"], p1["CR"], p2["SR"], p2["CR"], p2["AUC"], s2["SR"], s2["CR"],
                     s2["AUC"], avg_sr["mean"]])
    gain = {m: paired_by_task(eps[m](PAIR), eps[m](SINGLE)) for m in models}
    harder = {m: proportion_diff(sum(map(success, eps[m](SEQUENTIAL))),
                                 len(eps[m](SEQUENTIAL)), sum(map(success, eps[m](SINGLE))),
                                 len(eps[m](SINGLE))) for m in models}
    single_sr = [lv[m][SINGLE]["SR"]["mean"] for m in models]
    seq_sr = [lv[m][SEQUENTIAL]["SR"]["mean"] for m in models]
    gains = [gain[m]["delta"] for m in models]
    known = [i for i, g in enumerate(gains) if g is not None and single_sr[i] is not None]
    corr = correlation([single_sr[i] for i in known if seq_sr[i] is not None],
                       [seq_sr[i] for i in known if seq_sr[i] is not None])
    weak = ols_slope([single_sr[i] for i in known], [gains[i] for i in known])
    # is a model decidedly better alone also better as a team on sequential tasks?
    breaks = order_breaks(models,
                          lambda a, b: paired_by_task(eps[a](SINGLE), eps[b](SINGLE)),
                          lambda a, b: paired_by_task(eps[a](SEQUENTIAL), eps[b](SEQUENTIAL)))
    fig5 = interval_bars(
        "SR per model: parallel with one agent, with two (broadcast), and sequential with "
        "two (Wilson 95% intervals).",
        {label: {m: (lv[m][k]["SR"]["mean"], lv[m][k]["SR"]["lo"], lv[m][k]["SR"]["hi"])
                 for m in models}
         for label, k in (("parallel, 1 agent", SINGLE), ("parallel, 2 agents", PAIR),
                          ("sequential, 2 agents", SEQUENTIAL))}, "SR")
    fig6 = interval_bars(
        "Change in parallel SR from one agent to two, per model (paired over the tasks, "
        "bootstrap 95% intervals).",
        {"SR, 2 agents minus 1": {m: (g["delta"], g["lo"], g["hi"]) for m, g in gain.items()}},
        "difference", zero=True)
    findings = [
        majority_finding("meco-models-second-agent", "Fig. 6",
                         "Most models benefit from a second agent (parallel SR, one agent to "
                         "two).", "most of 14 models gain; InternVL3.5 drops", gain,
                         {m: direction(g, +1) for m, g in gain.items()}),
        majority_finding("meco-models-sequential-harder", "Fig. 5",
                         "Sequential two-agent SR is lower than parallel single-agent SR.",
                         "generally lower for every model", harder,
                         {m: direction(d, -1) for m, d in harder.items()}),
        Finding("meco-models-ability-correlates", "Fig. 5",
                "Across models, single-agent parallel SR correlates positively with two-agent "
                "sequential SR.", "positive", show(corr), direction(corr, +1),
                "" if corr["delta"] is not None else
                "Pearson's r needs at least 4 models with distinct rates"),
        Finding("meco-models-weak-gain", "Fig. 6",
                "The gain from a second agent is largest for weaker models (the gain falls "
                "as single-agent SR rises).", "largest for weak and mid-level models",
                show(weak), slope_direction(weak, -1),
                "" if weak["slope"] is not None else "needs at least 3 models"),
        Finding("meco-models-capability-not-coordination", "App. D.1",
                "Stronger individual capability does not imply better coordination: a model "
                "decidedly better alone is not better as a sequential team.",
                "InternVL3.5: strong alone, weak in sequential collaboration",
                {"a decided pair breaks the order": breaks}, breaks,
                "pairs of models compared on the same tasks (paired intervals); undecided "
                "where no pair is decidedly ordered alone")]
    return [*_table8_item(models, rows, gain, lv, fig5, fig6, findings, corr, weak),
            _vision_leader_item(eps, each), *_leader_capability_items(eps, each)]


def _table8_item(models, rows, gain, lv, fig5, fig6, findings, corr, weak) -> list[Item]:
    return [Item("Table 8 / Figs. 5-6", "Models alone and in pairs",
                 "GPT-5.4 is best; 2-agent parallel SR ranges 0.09-0.94 across 14 models; most "
                 "models gain from a second agent (Fig. 6); sequential SR is lower than "
                 "single-agent parallel SR and correlates with it (Fig. 5); InternVL-3.5 is "
                 "strong alone but weak in sequential collaboration.",
                 table(["model", "P1 SR", "P1 CR", "P2 SR", "P2 CR", "P2 AUC", "S2 SR",
                        "S2 CR", "S2 AUC", "avg SR (2 agents)"], rows)
                 + "\nChange from one agent to two (parallel, paired over tasks):\n\n"
                 + table(["model", "SR difference", "pairs", "p (McNemar)"],
                         [[m, g, str(g.get("n", 0)),
                           "n/a" if g.get("p") is None else f"{g['p']:.3g}"]
                          for m, g in gain.items()]),
                 [fig5, fig6], findings,
                 data={"levels": {m: {"parallel_1": v[SINGLE], "parallel_2": v[PAIR],
                                      "sequential_2": v[SEQUENTIAL]} for m, v in lv.items()},
                       "gain": gain, "correlation": corr, "weak_gain_slope": weak},
                 note="P1: parallel, one agent; P2: parallel, two agents (broadcast); S2: "
                      "sequential, two agents (broadcast).")]


LEADER, VISION = Key("parallel", 2, "leader"), Key("parallel", 2, "leader_vision")


def _vision_leader_item(eps: dict[str, Episodes], each: Sequence[Options]) -> Item:
    """Fig. 11: leader-worker teams with and without the workers' views, per model."""
    from coordbench.analyses.paired import paired_metric
    from coordbench.llm.client import harness_for

    from .models import majority_finding, paired_by_task

    settings = model_settings(each[0])
    harness = harness_for(settings)
    sees = {m: harness.spec(m).supports_images for m in eps}
    rows, auc = [], {}
    for m, ep in eps.items():
        a, b = levels(ep(LEADER)), levels(ep(VISION))
        pairs = {(t.header.task_id, t.header.seed): step_auc(t) for t in ep(LEADER)}
        both = [(step_auc(t), pairs[(t.header.task_id, t.header.seed)]) for t in ep(VISION)
                if (t.header.task_id, t.header.seed) in pairs]
        auc[m] = paired_metric([x for x, _ in both], [y for _, y in both]) if both else None
        rows.append([m, "yes" if sees[m] else "no", a["SR"], b["SR"], a["CR"], b["CR"],
                     a["AUC"], b["AUC"], paired_by_task(ep(VISION), ep(LEADER))])
    verdicts = {m: direction(d, +1) for m, d in auc.items() if sees[m]}
    return Item(
        "Fig. 11", "Vision-augmented leadership per model",
        "Workers' views sent to the leader improve AUC for both models tested (Gemma4-31B, "
        "Qwen3-32B-VL); SR and CR rise for the stronger visual model and fall for the "
        "weaker.",
        table(["model", "takes images", "SR leader", "SR leader_vision", "CR leader",
               "CR leader_vision", "AUC leader", "AUC leader_vision",
               "SR vision minus text (paired)"], rows),
        findings=[majority_finding(
            "meco-models-vision-auc", "Fig. 11",
            "For models that take images, the workers' views raise the leader team's AUC.",
            "AUC improves for both models", {m: auc[m] for m in verdicts}, verdicts,
            "per model: paired over the tasks (bootstrap interval); judged on the models "
            "that take images (their registry entry): the others get the text reports only "
            "and are left out")],
        data={"sees_images": sees, "auc_difference": auc})


def _leader_capability_items(eps: dict[str, Episodes], each: Sequence[Options]
                             ) -> list[Item]:
    """Fig. 32: the first model leading each other model's follower, against both teams
    of one model (the leader protocol, two agents)."""
    from .models import mostly, paired_by_task

    strong = str(each[0].model)
    rows, lifts, short = [], {}, {}
    for o in each[1:]:
        weak = str(o.model)
        mixed = eps[weak](Key("parallel", 2, "leader", leader=strong))
        all_weak, all_strong = eps[weak](LEADER), eps[strong](LEADER)
        premise = direction(paired_by_task(all_strong, all_weak), +1)
        lift = paired_by_task(mixed, all_weak)
        gap = paired_by_task(mixed, all_strong)
        if premise:  # only a leader decidedly stronger can tell what it adds
            lifts[weak] = direction(lift, +1)
            short[weak] = direction(gap, -1)
        rows.append([f"{strong} leads {weak}", levels(all_weak)["SR"], levels(mixed)["SR"],
                     levels(all_strong)["SR"], levels(all_weak)["CR"], levels(mixed)["CR"],
                     levels(all_strong)["CR"], lift, gap,
                     {True: "yes", False: "no", None: "undecided"}[premise]])
    note = (f"judged with the first model given ({strong}) as the strong leader, on the "
            "followers it is decidedly stronger than as a leader team (all-strong minus "
            "all-weak SR above 0, paired over the tasks); the others are left out")
    return [Item(
        "Fig. 32", "A strong leader over weak followers",
        "Qwen3-VL: a 32B leader over an 8B worker improves on the all-8B team (CR nearly "
        "matches the all-32B team) but does not reach the all-32B team's SR.",
        table(["team", "SR all-weak", "SR mixed", "SR all-strong", "CR all-weak",
               "CR mixed", "CR all-strong", "SR mixed minus all-weak",
               "SR mixed minus all-strong", "leader stronger"], rows),
        findings=[
            Finding("meco-models-strong-leader-lifts", "Fig. 32",
                    "A stronger leader improves a weak team (mixed SR above all-weak).",
                    "32B + 8B above 8B + 8B", lifts, mostly(list(lifts.values())), note),
            Finding("meco-models-strong-leader-short", "Fig. 32",
                    "A strong leader alone does not make a weak team as good as an all-strong "
                    "one (mixed SR below all-strong).", "32B + 8B below 32B + 32B", short,
                    mostly(list(short.values())), note)],
        data={"rows": rows})]
