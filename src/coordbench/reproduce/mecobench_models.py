"""MECoBench's model comparisons (Section 5: Table 8, Figs. 5-6, 32 and the leader's
capability), over the models of a many-model study."""

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
    step_auc,
)

from .mecobench_design import PAIR, SEQUENTIAL, SINGLE, Key, episodes
from .plots import interval_bars
from .study import (
    Episodes,
    Finding,
    Item,
    Options,
    direction,
    model_settings,
    show,
    slope_direction,
    table,
)


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
