"""MECoBench's model comparisons (Section 5: Table 8, Figs. 5-6, 32 and the leader's
capability; Appendix D: Tables 14 and 16, Fig. 37), over the models of a many-model study."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coordbench.analyses.common import (
    correlation,
    mean_of,
    ols_slope,
    proportion_diff,
    success,
)
from coordbench.analyses.household import (
    levels,
)
from coordbench.core.rundir import RunDir
from coordbench.metrics.household import (
    completion_rate,
    duplicate_grabs,
    step_auc,
)

from .mecobench_design import PAIR, SEQUENTIAL, SINGLE, Key, episodes
from .plots import interval_bars, scatter
from .study import (
    Episodes,
    Finding,
    Item,
    Options,
    both,
    direction,
    judge,
    model_settings,
    show,
    table,
)


def compare(run: RunDir, each: Sequence[Options], out: Path) -> list[Item]:
    """Return the paper's model comparisons over the models of a many-model study: Table 8
    (parallel 1 and 2 agents, sequential 2 agents: SR, CR, AUC per model, the 2-agent
    averages of SR and CR), Fig. 5 (individual vs collaborative ability, a scatter with
    quartile lines), Fig. 6 (the SR and CR change from one agent to two), Fig. 11, Fig. 32,
    Tables 14 and 16 (no and noisy location priors) and Fig. 37 (duplicate grabs), with the
    paper's model findings judged on these models."""
    from .models import majority_finding, order_breaks, paired_by_task, paired_metric_by_task

    eps = {str(o.model): episodes(run, o, out) for o in each}
    models = list(eps)
    lv = {m: {k: levels(ep(k)) for k in (SINGLE, PAIR, SEQUENTIAL)} for m, ep in eps.items()}
    rows = []
    for m in models:
        p1, p2, s2 = lv[m][SINGLE], lv[m][PAIR], lv[m][SEQUENTIAL]
        rows.append([m, p1["SR"], p1["CR"], p1["AUC"], p2["SR"], p2["CR"], p2["AUC"], s2["SR"],
                     s2["CR"], s2["AUC"], _avg(p2["SR"], s2["SR"]), _avg(p2["CR"], s2["CR"])])
    gain = {m: paired_by_task(eps[m](PAIR), eps[m](SINGLE)) for m in models}
    cr_gain = {m: paired_metric_by_task(eps[m](PAIR), eps[m](SINGLE), completion_rate)
               for m in models}
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
    fig5_scatter = scatter(
        "Fig. 5: parallel single-agent SR (individual ability) against sequential two-agent "
        "SR (collaborative ability), one point per model; dashed: the quartiles of each axis "
        "over the models.",
        {"models": {m: (lv[m][SINGLE]["SR"]["mean"], lv[m][SEQUENTIAL]["SR"]["mean"])
                    for m in models if lv[m][SINGLE]["SR"]["mean"] is not None
                    and lv[m][SEQUENTIAL]["SR"]["mean"] is not None}},
        "SR, parallel, 1 agent", "SR, sequential, 2 agents", quartiles=True)
    fig6 = interval_bars(
        "Change in parallel SR and CR from one agent to two, per model (paired over the "
        "tasks, bootstrap 95% intervals).",
        {"SR, 2 agents minus 1": {m: (g["delta"], g["lo"], g["hi"]) for m, g in gain.items()},
         "CR, 2 agents minus 1": {m: (g["delta"], g["lo"], g["hi"])
                                  for m, g in cr_gain.items()}},
        "difference", zero=True)
    findings = [
        majority_finding("meco-models-second-agent", "Fig. 6",
                         "Most models benefit from a second agent (parallel SR, one agent to "
                         "two).", "most of 14 models gain; InternVL3.5 drops", gain,
                         {m: judge(g, +1) for m, g in gain.items()}),
        majority_finding("meco-models-second-agent-cr", "Fig. 6",
                         "Most models complete more subgoals with a second agent (parallel CR, "
                         "one agent to two).", "CR rises for most of 14 models; InternVL3.5 "
                         "drops (Table 8: 38B 0.875 -> 0.830, 241B 0.946 -> 0.914)", cr_gain,
                         {m: judge(g, +1) for m, g in cr_gain.items()},
                         "per model: paired CR difference over the tasks (bootstrap "
                         "interval); holds when most models' intervals lie above 0"),
        majority_finding("meco-models-sequential-harder", "Fig. 5",
                         "Sequential two-agent SR is lower than parallel single-agent SR.",
                         "generally lower for every model", harder,
                         {m: judge(d, -1) for m, d in harder.items()}),
        Finding("meco-models-ability-correlates", "Fig. 5",
                "Across models, single-agent parallel SR correlates positively with two-agent "
                "sequential SR.", "positive", show(corr), judge(corr, +1),
                "" if corr["delta"] is not None else
                "Pearson's r needs at least 4 models with distinct rates"),
        Finding("meco-models-weak-gain", "Fig. 6",
                "The gain from a second agent is largest for weaker models (the gain falls "
                "as single-agent SR rises).", "largest for weak and mid-level models",
                show(weak), judge(weak, -1),
                "" if weak["slope"] is not None else "needs at least 3 models"),
        Finding("meco-models-capability-not-coordination", "App. D.1",
                "Stronger individual capability does not imply better coordination: a model "
                "decidedly better alone is not better as a sequential team.",
                "InternVL3.5: strong alone, weak in sequential collaboration",
                {"a decided pair breaks the order": breaks}, breaks,
                "pairs of models compared on the same tasks (paired intervals); undecided "
                "where no pair is decidedly ordered alone")]
    return [*_table8_item(models, rows, gain, cr_gain, lv, [fig5, fig5_scatter, fig6],
                          findings, corr, weak),
            _vision_leader_item(eps, each), *_leader_capability_items(eps, each),
            _priors_item(eps), _duplicate_grab_item(eps, gain)]


def _avg(a: dict, b: dict) -> float | None:
    """Return the mean of two rates' point estimates (Table 8's Avg. SR / Avg. CR: parallel
    and sequential at two agents), None where either is undefined."""
    if a["mean"] is None or b["mean"] is None:
        return None
    return (a["mean"] + b["mean"]) / 2


# the paper's Table 8 rows for four of its 14 models: P1 SR/CR/AUC, P2 SR/CR/AUC,
# S2 SR/CR/AUC, Avg. SR, Avg. CR
PAPER_T8 = {
    "GPT-5.4": (0.854, 0.960, 0.788, 0.896, 0.969, 0.731, 0.771, 0.914, 0.655, 0.834, 0.942),
    "GPT-5-mini": (0.906, 0.974, 0.793, 0.917, 0.982, 0.776, 0.719, 0.901, 0.624, 0.818,
                   0.942),
    "Qwen3-VL-32B": (0.583, 0.753, 0.542, 0.802, 0.934, 0.694, 0.365, 0.620, 0.393, 0.584,
                     0.777),
    "InternVL-3.5-38B": (0.677, 0.875, 0.659, 0.594, 0.830, 0.553, 0.135, 0.429, 0.280,
                         0.365, 0.630),
}
T8_HEADER = ["model", "P1 SR", "P1 CR", "P1 AUC", "P2 SR", "P2 CR", "P2 AUC", "S2 SR",
             "S2 CR", "S2 AUC", "Avg. SR", "Avg. CR"]


def _table8_item(models, rows, gain, cr_gain, lv, figs, findings, corr, weak) -> list[Item]:
    paper = table(T8_HEADER, [[m, *(f"{v:.3f}" for v in vals)] for m, vals in PAPER_T8.items()])
    return [Item("Table 8 / Figs. 5-6", "Models alone and in pairs",
                 "GPT-5.4 is best; 2-agent parallel SR ranges 0.09-0.94 across 14 models; most "
                 "models gain from a second agent (Fig. 6); sequential SR is lower than "
                 "single-agent parallel SR and correlates with it (Fig. 5); InternVL-3.5 is "
                 "strong alone but weak in sequential collaboration. Four of its rows:\n\n"
                 + paper,
                 table(T8_HEADER, rows)
                 + "\nChange from one agent to two (parallel, paired over tasks):\n\n"
                 + table(["model", "SR difference", "CR difference", "pairs", "p (McNemar)"],
                         [[m, g, cr_gain[m], str(g.get("n", 0)),
                           "n/a" if g.get("p") is None else f"{g['p']:.3g}"]
                          for m, g in gain.items()]),
                 figs, findings,
                 data={"levels": {m: {"parallel_1": v[SINGLE], "parallel_2": v[PAIR],
                                      "sequential_2": v[SEQUENTIAL]} for m, v in lv.items()},
                       "table8": {r[0]: dict(zip(T8_HEADER[1:], r[1:], strict=True))
                                  for r in rows},
                       "gain": gain, "cr_gain": cr_gain, "correlation": corr,
                       "weak_gain_slope": weak},
                 note="P1: parallel, one agent; P2: parallel, two agents (broadcast); S2: "
                      "sequential, two agents (broadcast). Avg. SR / Avg. CR: the mean of P2 "
                      "and S2 (the paper's 2-agent averages); AUC: the Step-CR AUC "
                      "(`metrics.household.step_auc`).")]


# Tables 14 and 16: one agent (no protocol) and two (broadcast) with a degraded prior
PRIOR_TABLES = (("no_location", "Table 14", "no location prior"),
                ("noisy", "Table 16", "noisy location prior (+30% false locations)"))
PAPER_T14 = {  # 1 agent SR/CR/AUC, 2 agents SR/CR/AUC
    "GPT-5-mini": (0.323, 0.630, 0.436, 0.344, 0.691, 0.436),
    "Qwen3-VL-8B": (0.031, 0.162, 0.103, 0.021, 0.199, 0.101),
    "Qwen3-VL-32B": (0.219, 0.520, 0.344, 0.260, 0.591, 0.365),
    "Qwen3-VL-235B": (0.115, 0.389, 0.264, 0.271, 0.581, 0.332),
    "Qwen3.5-9B": (0.292, 0.582, 0.389, 0.292, 0.649, 0.435),
    "Gemma4-31B": (0.240, 0.561, 0.358, 0.229, 0.589, 0.347),
}
PAPER_T16 = {
    "GPT-5-mini": (0.760, 0.902, 0.719, 0.823, 0.950, 0.709),
    "Qwen3.5-9B": (0.781, 0.911, 0.665, 0.812, 0.903, 0.663),
    "Qwen3-VL-32B": (0.542, 0.750, 0.526, 0.698, 0.878, 0.620),
}
PRIOR_HEADER = ["model", "1 agent SR", "1 agent CR", "1 agent AUC", "2 agents SR",
                "2 agents CR", "2 agents AUC"]


def _priors_item(eps: dict[str, Episodes]) -> Item:
    """Tables 14 and 16: per model, SR/CR/AUC with one agent and two on parallel tasks
    without the location prior and with a noisy one; the drop from the full prior and the
    second agent's effect judged per model."""
    from .models import majority_finding, paired_by_task, paired_metric_by_task

    text, data = "", {}
    drop, noloc_cr, noisy_sr = {}, {}, {}
    for prior, ref, label in PRIOR_TABLES:
        rows, mine = [], {}
        for m, ep in eps.items():
            one = levels(ep(Key("parallel", 1, "none", prior)))
            two = levels(ep(Key("parallel", 2, "broadcast", prior)))
            mine[m] = {"1": one, "2": two}
            rows.append([m, one["SR"], one["CR"], one["AUC"], two["SR"], two["CR"],
                         two["AUC"]])
        data[prior] = mine
        text += f"{ref} ({label}, parallel):\n\n" + table(PRIOR_HEADER, rows) + "\n"
    for m, ep in eps.items():
        noloc1 = ep(Key("parallel", 1, "none", "no_location"))
        noloc2 = ep(Key("parallel", 2, "broadcast", "no_location"))
        drop[m] = paired_by_task(noloc2, ep(PAIR))
        noloc_cr[m] = paired_metric_by_task(noloc2, noloc1, completion_rate)
        noisy_sr[m] = paired_by_task(ep(Key("parallel", 2, "broadcast", "noisy")),
                                     ep(Key("parallel", 1, "none", "noisy")))
    data.update(no_location_drop=drop, no_location_cr_gain=noloc_cr, noisy_sr_gain=noisy_sr)
    drops = {m: judge(d, -1) for m, d in drop.items()}
    word = {m: f"{show(d)} ({drops[m].verdict})" for m, d in drop.items()}
    paper = ("Table 14 (no location prior; 1 agent | 2 agents, SR/CR/AUC):\n\n"
             + table(PRIOR_HEADER, [[m, *(f"{v:.3f}" for v in vals)]
                                    for m, vals in PAPER_T14.items()])
             + "\nTable 16 (noisy location prior):\n\n"
             + table(PRIOR_HEADER, [[m, *(f"{v:.3f}" for v in vals)]
                                    for m, vals in PAPER_T16.items()])
             + "\nRemoving the location prior lowers performance substantially for every "
               "model (Fig. 35); a second agent still helps when the prior is incomplete "
               "(Fig. 12).")
    return Item(
        "Tables 14 / 16", "Models without and with a noisy location prior", paper, text,
        findings=[
            Finding("meco-models-noloc-drop", "Fig. 35 / Table 14",
                    "Without the location prior every model succeeds less often than with "
                    "it (parallel, two agents).",
                    {"Qwen3-VL-32B SR, full -> no location": [0.802, 0.260],
                     "GPT-5-mini SR, full -> no location": [0.917, 0.344]},
                    word, both(*drops.values()) if drops else judge(None, -1),
                    "per model: paired SR difference, no location minus full prior, over the "
                    "tasks (bootstrap interval); holds when every model's lies below 0. The "
                    "no-location budget is 80 effective steps, the full prior's 60 (the "
                    "paper's)"),
            majority_finding("meco-models-noloc-second-agent-cr", "Table 14",
                             "Without the location prior, a second agent raises CR for most "
                             "models.", "CR rises for all 6 models of Table 14", noloc_cr,
                             {m: judge(d, +1) for m, d in noloc_cr.items()},
                             "per model: paired CR difference, two agents minus one, over the "
                             "tasks (bootstrap interval); holds when most models' lie above 0"),
            majority_finding("meco-models-noisy-second-agent", "Table 16",
                             "With a noisy location prior, a second agent raises SR for most "
                             "models.", "SR rises for all 3 models of Table 16", noisy_sr,
                             {m: judge(d, +1) for m, d in noisy_sr.items()},
                             "per model: paired SR difference, two agents minus one, over the "
                             "tasks (bootstrap interval, McNemar)")],
        data=data,
        note="One agent plays without a protocol, two with broadcast, as in Table 8; the "
             "degraded priors' budget is 80 effective steps.")


PAPER_F37 = ("12 models at two agents (broadcast): 21.9% (InternVL3.5, the highest), 19.8%, "
             "18.8%, 18.8%, 17.7%, 17.7%, 16.7%, 15.6%, 14.6%, 12.5%, 11.5%, 11.5%")


def _duplicate_grab_item(eps: dict[str, Episodes], gain: dict[str, dict]) -> Item:
    """Fig. 37: the share of parallel two-agent (broadcast) episodes with a duplicate grab,
    per model, and whether models that duplicate more gain less from the second agent."""
    from coordbench.analyses.common import rate

    rates, per_ep = {}, {}
    for m, ep in eps.items():
        trajs = ep(PAIR)
        counts = [duplicate_grabs(t) for t in trajs]
        rates[m] = rate(sum(c > 0 for c in counts), len(counts))
        per_ep[m] = mean_of([float(c) for c in counts])
    known = [m for m in eps if rates[m]["mean"] is not None and gain[m]["delta"] is not None]
    corr = correlation([rates[m]["mean"] for m in known], [gain[m]["delta"] for m in known])
    fig = interval_bars("Fig. 37: share of parallel two-agent episodes (broadcast) with a "
                        "duplicate grab, per model (Wilson 95% intervals).",
                        {"duplicate-grab rate": {m: (r["mean"], r["lo"], r["hi"])
                                                 for m, r in rates.items()}}, "rate")
    return Item(
        "Fig. 37", "Duplicate grabs per model", PAPER_F37 + ". InternVL3.5's high rate "
        "\"partly explains its performance drop in Figure 6\" (Section 6.2).",
        table(["model", "episodes with a duplicate grab", "duplicate grabs per episode",
               "SR change, 1 to 2 agents"], [[m, rates[m], per_ep[m], gain[m]] for m in eps]),
        [fig],
        [Finding("meco-models-dupgrab-gain", "Fig. 37 / Section 6.2",
                 "Models that duplicate grabs more often gain less from a second agent (the "
                 "duplicate-grab rate correlates negatively with the SR change of Fig. 6).",
                 "InternVL3.5: highest duplicate-grab rate (21.9%) and the only SR drop",
                 show(corr), judge(corr, -1),
                 "Pearson's r over the models (Fisher interval)" if corr["delta"] is not None
                 else "Pearson's r needs at least 4 models with distinct values")],
        data={"rate": rates, "per_episode": per_ep, "correlation": corr})


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
    verdicts = {m: judge(d, +1) for m, d in auc.items() if sees[m]}
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
    from .models import majority, paired_by_task

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
            lifts[weak] = judge(lift, +1)
            short[weak] = judge(gap, -1)
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
                    "32B + 8B above 8B + 8B", {m: v.verdict for m, v in lifts.items()},
                    majority(list(lifts.values())), note),
            Finding("meco-models-strong-leader-short", "Fig. 32",
                    "A strong leader alone does not make a weak team as good as an all-strong "
                    "one (mixed SR below all-strong).", "32B + 8B below 32B + 32B",
                    {m: v.verdict for m, v in short.items()}, majority(list(short.values())),
                    note)],
        data={"rows": rows})]
