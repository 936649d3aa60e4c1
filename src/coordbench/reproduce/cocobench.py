"""Reproduce CoCoBench's analyses (seeds: "CoCoBench"; Section 5, Figs. 5-9, Table 5).

The conditions (`keys`) play coordbench's 900 construct instances (the main evaluation:
centralized planner) and the stratified 240 subset (the architecture and observation
ablations); `--quick` plays the 240 subset for everything. Without a model the planners are
coordbench's rule planners (agents/constructs/planners.py), which read the symbolic state and
no image, so the image-vs-blind ablation needs `--model`; with `--model M` every planner row is
played by that model, images included. The oracle planners are the reference and always run.

The paper's numbers are its averages over the evaluated models where it gives them (Figs.
6-8), else its per-model ranges (Table 5, Fig. 9).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.analyses.common import (
    mean_diff,
    mean_of,
    mean_score,
    ols_slope,
    proportion_diff,
    rate,
    success,
)
from coordbench.analyses.constructs import (
    CONSTRUCTS,
    architecture_deltas,
    failure_shares,
    legality_gap,
    observation_deltas,
    score_correlations,
    team_size_trend,
    termination_shares,
)
from coordbench.core.rundir import RunDir
from coordbench.core.sample import Sample
from coordbench.core.trajectory import Trajectory
from coordbench.metrics.constructs import (
    SCORES,
    construct_of,
    construct_score,
    d4_counts,
    episode_metrics,
)

from .examples import cocobench_item
from .plots import heatmap, interval_bars, lines
from .sampled import lacks_value, mark_untestable, missing_reason, sample_item, sample_line
from .study import (
    VERDICT_RULE,
    Episodes,
    Finding,
    Item,
    Options,
    Study,
    Verdict,
    direction,
    gathered_json,
    judge,
    judge_rate,
    model_settings,
    show,
    table,
)

PAPER = "cocobench"
TITLE = "CoCoBench (coordination constructs)"
PLANNERS = ("central", "decentralized", "decentralized_comm")
# |r| below this between two construct scores counts as "largely non-redundant" (the paper's
# off-diagonal entries lie in [-0.10, 0.16])
WEAK_R = 0.3


@dataclass(frozen=True)
class Key:
    """One condition: instance subset, planner mode, who plans, observation, a construct
    filter and a buffer capacity."""

    subset: str
    planner: str = "central"
    who: str = "team"
    observation: str = "blind"
    construct: str | None = None
    capacity: int | None = None


def keys(options: Options) -> list[Key]:
    """Return every condition the study needs, each once."""
    main = "rep240" if options.quick else "all"
    sub = "rep240"
    if options.instances:  # one instance set (the user's files) for every condition
        main = sub = "all"
    observations = ("image", "blind") if options.model else ("blind",)
    out = [Key(main, "central", observation=observations[0])]
    out += [Key(sub, p, observation=o) for p in PLANNERS for o in observations]
    out += [Key(sub, "decentralized", construct="D4", capacity=1,
                observation=observations[0])]
    out.append(Key(main, "central", "oracle"))
    seen: set[Key] = set()
    return [k for k in out if not (k in seen or seen.add(k))]  # type: ignore[func-returns-value]


def _condition(key: Key, options: Options, out: Path | None = None):
    from coordbench.agents.constructs.planners import RULE_DIALS
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.suite import ConstructCondition

    agents = "oracle" if key.who == "oracle" else ("llm" if options.model else "rule")
    spec = ConstructSpec(key.planner, agents, key.observation,
                         options.model if agents == "llm" else None,
                         options.seed if agents == "llm" else 0, "index", key.capacity,
                         dials=options.dials(RULE_DIALS) if agents == "rule" else None)
    instances = None
    if options.instances:  # the user's instance files, gathered into the run once
        if out is None:
            raise ValueError("an instance folder needs the run's path")
        instances = str(gathered_json(options.instances, out, "instance"))
    return ConstructCondition(spec, key.subset, key.construct, None, options.limit, instances)


def ablation_of(fields: dict[str, Any]) -> str | None:
    """Return the name of coordbench's own ablation a condition (its manifest fields)
    belongs to, or None for one of the paper's conditions."""
    if fields.get("buffer_capacity") == 1:
        return "D4 with capacity-1 buffers"
    return None


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition) items the study plays."""
    from coordbench.suites.constructs.suite import SUITE

    return [(SUITE, _condition(k, options, out)) for k in keys(options)]


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [f"{k.subset} {k.planner} {k.who} {k.observation}"
            + (f" {k.construct} cap {k.capacity}" if k.capacity else "") for k in keys(options)]


def resources(options: Options):
    """Return the construct resources (the model harness with `--model`)."""
    return model_settings(options)


def episodes(run: RunDir, options: Options) -> Episodes:
    """Return the study's episodes by Key."""
    from coordbench.suites.constructs.suite import SUITE

    return Episodes(run, {k: SUITE.condition(_condition(k, options, run.path))
                          for k in keys(options)})


def _main_key(ep: Episodes) -> Key:
    return ep.keys[0]


def _levels_row(label: str, trajs: list[Trajectory]) -> list:
    cs = [v for v in (construct_score(t) for t in trajs) if v is not None]
    return [label, rate(sum(map(success, trajs)), len(trajs)), mean_score(cs), str(len(trajs))]


def _main_item(ep: Episodes) -> Item:
    trajs = ep(_main_key(ep))
    rows = [_levels_row("all", trajs)]
    rows += [_levels_row(c, [t for t in trajs if construct_of(t) == c]) for c in CONSTRUCTS]
    return Item("Table 1", "Main evaluation (centralized planner)",
                "Over 11 MLLMs on the full set, the best (GPT-5.6-sol) reaches SR 84.8% and CS "
                "0.90; the best model differs by construct (Qwen3-VL-8B on D1, Claude Opus "
                "4.8 on D2, GPT-5.6-sol on D3 and D4).",
                table(["construct", "SR", "CS", "n"], rows), data={"rows": rows[0][1:3]})


# Table 6: per-episode compute cost on the full set (centralized, image): model -> (time s,
# executed action steps, planner calls)
TABLE6 = {"GPT-5.6-sol": (123.8, 18.4, 19.2), "GPT-5.4-mini": (120.0, 31.1, 31.7),
          "Claude Opus 4.8": (296.9, 21.2, 22.0), "Claude Haiku 4.5": (215.2, 26.0, 26.7),
          "Qwen3.6-Plus": (106.7, 26.1, 26.9), "Kimi-K2.6": (172.8, 22.8, 23.6),
          "Qwen3.5-9B": (94.0, 27.8, 28.4), "Qwen3-VL-8B": (31.7, 23.7, 24.5),
          "Cosmos3-Nano-16B": (18.0, 11.6, 12.5), "RoboBrain2.5-8B": (42.4, 32.1, 32.6),
          "InternVL3.5-8B": (50.6, 35.2, 35.6)}


def _model_s(traj: Trajectory) -> float | None:
    """Return the seconds the episode's planner calls took (their recorded latencies; cached
    replies count their original latency); None for an episode without model calls."""
    from coordbench.core.trajectory import ModelCallEvent

    calls = traj.steps(ModelCallEvent)
    return sum(c.latency_s for c in calls) if calls else None


def _cost_item(ep: Episodes) -> Item:
    from coordbench.analyses.common import mean_of
    from coordbench.metrics.constructs import executed_actions

    rows, data = [], {}
    for k in ep.keys:
        if k.who != "team" or k.capacity is not None:
            continue
        trajs = ep(k)
        if not trajs:
            continue
        name = f"{k.subset}, {k.planner}, {k.observation}"
        per = [episode_metrics(t) for t in trajs]
        cell = {"time_s": mean_of([v for v in map(_model_s, trajs) if v is not None]),
                "steps": mean_of([float(executed_actions(t)) for t in trajs]),
                "planner_calls": mean_of([m["planner_calls"] for m in per
                                          if m["planner_calls"] is not None])}
        data[name] = cell
        rows.append([name, cell["time_s"], cell["steps"], cell["planner_calls"],
                     str(len(trajs))])
    paper = table(["model", "time (s)", "steps", "planner calls"],
                  [[m, f"{t:.1f}", f"{st:.1f}", f"{c:.1f}"] for m, (t, st, c) in
                   TABLE6.items()])
    return Item("Table 6", "Per-episode compute cost",
                "Per episode on the full set (centralized, image): mean wall-clock time, "
                "executed action steps and planner calls per model; calls exceed steps by "
                "0.4-0.9 (the replies that did not become an action).\n\n" + paper,
                table(["condition", "time (s)", "executed action steps", "planner calls",
                       "n"], rows), data=data,
                note="Time is the seconds an episode's planner calls took (their recorded "
                     "latencies: n/a for rule planners, whose decisions take microseconds); "
                     "planner calls are the recorded model calls, or one decision per "
                     "executed action for rule planners.")


def _correlation_item(ep: Episodes, options: Options) -> Item:
    # the paper's sample is one team's trajectories (one model, centralized); pooling planners
    # would correlate the scores through planner quality, so each planner's episodes are a
    # sample of their own, the main run first
    samples = {"main (central)": ep(_main_key(ep))}
    for p in PLANNERS:
        if p == "central" and _main_key(ep).subset == "rep240":
            continue  # the main run is the 240 subset's central run
        samples[f"240 subset, {p}"] = ep(*(k for k in ep.keys if k.subset == "rep240"
                                           and k.planner == p and k.who == "team"
                                           and k.capacity is None))
    labels_ = list(CONSTRUCTS)
    rows, figs, off, data = [], [], [], {}
    for name, trajs in samples.items():
        if not trajs:
            continue
        res = score_correlations(trajs)
        data[name] = res
        rows += [[name, f"C_{a}", *(show(res["r"][a][b], 2) + f" (n={res['n'][a][b]})"
                                   for b in labels_)] for a in labels_]
        mine = [res["r"][a][b] for i, a in enumerate(labels_) for b in labels_[i + 1:]
                if res["r"][a][b] is not None]
        off += mine
        if name == "main (central)" or mine:
            figs.append(heatmap(f"Pearson correlations of the four construct scores, "
                                f"cross-applied to every trajectory ({name}; each pair over "
                                "the trajectories where both are defined).",
                                [f"C_{c}" for c in labels_],
                                [[res["r"][a][b] for b in labels_] for a in labels_],
                                [[res["n"][a][b] for b in labels_] for a in labels_]))
    holds = (Verdict("untestable", "no pair of scores varies on 3+ trajectories") if not off
             else max(abs(v) for v in off) < WEAK_R)
    return Item(
        "Fig. 5", "Construct-score correlations (cross-applied)",
        "All four scores cross-applied to the 897 GPT-5.6-sol trajectories (centralized, "
        "image): every off-diagonal correlation lies in [-0.10, 0.16], so the constructs are "
        "largely non-redundant.",
        table(["sample", "", *(f"C_{c}" for c in labels_)], rows), figs[:2],
        [Finding("coco-constructs-distinct", "Fig. 5",
                 f"The construct scores are largely non-redundant (every off-diagonal |r| < "
                 f"{WEAK_R} within each planner's trajectories).",
                 {"off-diagonal range": [-0.10, 0.16]},
                 {"off-diagonal range": [min(off), max(off)] if off else None,
                  "pairs defined": len(off)}, holds,
                 "" if off else "no pair of scores varies on 3+ trajectories")],
        note="A pair is n/a where a score is constant over the sample (rule planners often "
             "score exactly 1) or undefined: C_D3 outside D3 (no shared tool), C_D4 outside "
             "D4 (no buffer), C_D2 on D3 (no container).", data=data)


def _architecture_item(ep: Episodes) -> Item:
    by_planner = {p: ep(*(k for k in ep.keys if k.subset == "rep240" and k.planner == p
                          and k.who == "team" and k.capacity is None)) for p in PLANNERS}
    res = architecture_deltas(by_planner)
    rows = []
    for c, r in res.items():
        for p in PLANNERS:
            lv = r["levels"][p]
            d = r["deltas"].get(p)
            rows.append([c, p, lv["SR"], lv["CS"], show(d["SR"]) if d else "reference",
                         show(d["CS"]) if d else "reference", str(lv["n"])])
    all_ = res.get("all", {}).get("deltas", {})
    dec, com = all_.get("decentralized", {}).get("SR"), all_.get(
        "decentralized_comm", {}).get("SR")
    d4 = res.get("D4", {}).get("deltas", {}).get("decentralized", {}).get("SR")
    d4_cs = res.get("D4", {}).get("deltas", {}).get("decentralized", {}).get("CS")
    a, b = by_planner["decentralized_comm"], by_planner["decentralized"]
    comm = proportion_diff(sum(map(success, a)), len(a), sum(map(success, b)), len(b))
    panels = {"SR change vs central": {}, "CS change vs central": {}}
    for c in ("all", *CONSTRUCTS):
        for p in ("decentralized", "decentralized_comm"):
            d = res.get(c, {}).get("deltas", {}).get(p)
            if not d:
                continue
            panels["SR change vs central"][f"{c} {p}"] = (d["SR"]["delta"], d["SR"]["lo"],
                                                          d["SR"]["hi"])
            panels["CS change vs central"][f"{c} {p}"] = (d["CS"]["delta"], d["CS"]["lo"],
                                                          d["CS"]["hi"])
    fig = interval_bars("Signed change in SR and CS of the decentralized planners relative to "
                        "the centralized one, per construct (240 subset), 95% intervals "
                        "(Newcombe for SR, Welch for CS).", panels, "difference", zero=True)
    return Item(
        "Fig. 6", "Architecture: centralized vs decentralized planners",
        "Averaged over four models and both observations: centralized 48.0% SR / 0.69 CS, "
        "decentralized with communication 39.6% / 0.65, without 36.7% / 0.63.",
        table(["construct", "planner", "SR", "CS", "delta SR", "delta CS", "n"], rows), [fig],
        [Finding("coco-central-best", "Fig. 6",
                 "Decentralized planning without communication succeeds less than centralized.",
                 {"central": 0.480, "decentralized": 0.367}, show(dec), judge(dec, -1)),
         Finding("coco-central-best-comm", "Fig. 6",
                 "Decentralized planning with communication still succeeds less than "
                 "centralized.", {"central": 0.480, "decentralized_comm": 0.396}, show(com),
                 judge(com, -1)),
         Finding("coco-comm-helps", "Fig. 6",
                 "Communication narrows the gap: decentralized planners succeed more with it.",
                 {"with": 0.396, "without": 0.367}, show(comm), judge(comm, +1)),
         Finding("coco-d4-decentral", "Fig. 6",
                 "Decentralized planners fail handoffs (D4) more than the centralized planner.",
                 "D4 among the largest SR drops", show(d4), judge(d4, -1)),
         Finding("coco-d4-decentral-cs", "Fig. 6",
                 "Decentralized planners pace handoffs worse than the centralized planner "
                 "(lower C_D4: more overflows and waits at an empty buffer).",
                 "CS falls with decentralization", show(d4_cs), judge(d4_cs, -1))],
        note="Offline rows pool the blind observation only: rule planners read the symbolic "
             "state, so an image adds nothing for them.", data=res)


def _takes_images(each: Sequence[Options], models: Sequence[str]) -> dict[str, bool]:
    """Return per model whether it takes images (its registry entry; False offline)."""
    settings = model_settings(each[0]) if each and each[0].model else None
    if settings is None:
        return {m: False for m in models}
    from coordbench.llm.client import harness_for

    harness = harness_for(settings)
    return {m: bool(harness.spec(m).supports_images) for m in models}


def _observation_item(ep: Episodes, options: Options) -> Item:
    image = ep(*(k for k in ep.keys if k.subset == "rep240" and k.observation == "image"
                 and k.who == "team" and k.capacity is None))
    blind = ep(*(k for k in ep.keys if k.subset == "rep240" and k.observation == "blind"
                 and k.who == "team" and k.capacity is None))
    if not image:
        return Item("Fig. 7", "Observation: image vs blind",
                    "Blind evaluation 42.3% SR / 0.660 CS vs image 40.6% / 0.655 (four models, "
                    "three architectures): removing images does not hurt.",
                    "Not measured offline: the rule planners take no image. Run with `--model "
                    "M` (a vision model) to fill this figure.",
                    findings=[Finding("coco-blind", "Fig. 7",
                                      "Removing images does not lower success.",
                                      {"blind": 0.423, "image": 0.406}, None,
                                      Verdict("untestable", "offline planners see no image: "
                                              "run with --model M, a model that takes "
                                              "images"))])
    res = observation_deltas(image, blind)
    rows = [[c, r["image"]["SR"], r["blind"]["SR"], show(r["delta"]["SR"]), r["image"]["CS"],
             r["blind"]["CS"], show(r["delta"]["CS"])] for c, r in res.items()]
    d = res["all"]["delta"]["SR"]
    # the claim is "no loss" (image minus blind not above 0): contradicted where images
    # decidedly help; a model that takes no image played the image rows as text
    holds = (judge(d, -1) if _takes_images([options], [str(options.model)])[str(options.model)]
             else Verdict("untestable", f"{options.model} takes no images (its registry "
                                        "entry): it played the image rows as text"))
    return Item("Fig. 7", "Observation: image vs blind",
                "Blind evaluation 42.3% SR / 0.660 CS vs image 40.6% / 0.655.",
                table(["construct", "SR image", "SR blind", "delta SR", "CS image", "CS blind",
                       "delta CS"], rows),
                findings=[Finding("coco-blind", "Fig. 7",
                                  "Removing images does not lower success (image minus blind "
                                  "is not significantly positive).",
                                  {"blind": 0.423, "image": 0.406}, show(d), holds,
                                  "holds where blind is decidedly better, inconclusive where "
                                  "the interval includes 0 (no loss shown, no gain ruled out)")],
                data=res)


def _team_item(ep: Episodes) -> Item:
    res = team_size_trend(ep(_main_key(ep)))
    rows = [[c, *(r["by_team"][n]["SR"] for n in ("2", "3", "4")), r["slope"]["SR"],
             r["slope"]["CS"]] for c, r in res.items()]
    slope = res.get("all", {}).get("slope", {}).get("SR")
    panels = {"SR": {}, "CS": {}}
    for c, r in res.items():
        for metric in panels:
            vals = [r["by_team"][n][metric] for n in ("2", "3", "4")]
            panels[metric][c] = ([2, 3, 4], [v["mean"] for v in vals], [v["lo"] for v in vals],
                                 [v["hi"] for v in vals])
    fig = lines("SR and CS by team size per construct (main run), 95% intervals.", panels,
                "agents", "rate", integer_x=True)
    return Item("Fig. 8", "Scaling with team size",
                "Averaged over models SR falls from 48.8% (2 agents) to 45.8% (3) and 43.1% "
                "(4); CS from 0.68 to 0.64 and 0.63.",
                table(["construct", "SR 2 agents", "SR 3", "SR 4", "SR slope per agent",
                       "CS slope"], rows), [fig],
                [Finding("coco-team-size", "Fig. 8", "SR falls as the team grows.",
                         {"2": 0.488, "3": 0.458, "4": 0.431}, show(slope),
                         judge(slope, -1))], data=res)


def _failure_item(ep: Episodes) -> Item:
    trajs = ep(_main_key(ep))
    term = termination_shares(trajs)
    fail = failure_shares(trajs)
    gap = legality_gap(trajs)
    per = [episode_metrics(t) for t in trajs]
    diag = {name: mean_of([m[name] for m in per if m[name] is not None])
            for name in ("progress_on_failure", "steps_on_success", "invalid_action_ratio")}
    rows = [[k, v] for k, v in term.items()]
    frows = [[k, v] for k, v in fail.items()]
    grows = [[k, v] for k, v in gap.items() if k != "n"]
    shares = {k: v["mean"] for k, v in fail.items() if v["mean"] is not None}
    # which kind dominates is undecidable when failed episodes show none of the four
    dep = (Verdict("untestable", "no failed episode shows any of the four kinds" if shares
                   else "no failed episode") if not any(shares.values())
           else shares["dependency"] == max(shares.values()))
    ill = fail["illegal_skill"]
    proto = term["protocol_failure"]
    not_legal = gap["successful_not_legal"]
    gap_holds = (Verdict("untestable", "no successful episode") if not_legal["n"] == 0
                 else True if (not_legal["lo"] or 0) > 0 else
                 Verdict("inconclusive", f"{not_legal['count']} of {not_legal['n']} "
                                         "successful episodes not legal: not shown above 0"))
    return Item(
        "Table 5 / Fig. 9", "Termination, failure decomposition and the legality gap",
        "Proprietary models almost never end in a protocol failure (1.0% on average; open "
        "models 17.5%). Among failed episodes a dependency violation is the most common kind "
        "for every model (11-95%), occupancy conflicts 1-7%, affordance failures 0-3%, illegal "
        "skills 0%. Success and legality diverge: some models succeed more often than they "
        "plan legally (Claude Haiku 4.5: 63.1% SR vs 47.2% legal).",
        "Termination (all episodes):\n\n" + table(["termination", "share"], rows)
        + "\nFailed episodes exhibiting each kind (Table 5):\n\n"
        + table(["failure kind", "share of failed episodes"], frows)
        + "\nSuccess vs legality (Fig. 9b):\n\n" + table(["measure", "rate"], grows)
        + "\nDiagnostics (Table 5):\n\n" + table(["measure", "mean"],
                                                  [[k, v] for k, v in diag.items()]),
        findings=[
            Finding("coco-dependency-dominates", "Table 5",
                    "Among failed episodes, dependency violations are the most common kind.",
                    {"dependency": "11-95%", "occupancy": "1-7%", "affordance": "0-3%"},
                    shares or None, dep),
            Finding("coco-illegal-never", "Table 5",
                    "Illegal skills never cause a failure.", {"illegal_skill": 0.0},
                    show(ill), judge_rate(ill, 0.05, never=True),
                    "never: contradicted by one; holds when none occurred and the rate is "
                    "shown below 5%"),
            Finding("coco-protocol-rare", "Fig. 9a",
                    "Protocol failures are rare for capable planners (< 5% of episodes).",
                    {"proprietary mean": 0.010}, show(proto), judge_rate(proto, 0.05)),
            Finding("coco-legality-gap", "Fig. 9b",
                    "Success overstates coordination: some successful episodes are not legal.",
                    {"Claude Haiku 4.5": {"SR": 0.631, "legal": 0.472}}, show(not_legal),
                    gap_holds, "share of successful episodes that were not legal")],
        data={"termination": term, "failure_shares": fail, "legality": gap,
              "diagnostics": diag})


def _oracle_item(ep: Episodes) -> Item:
    trajs = ep(*(k for k in ep.keys if k.who == "oracle"))
    rows, ok = [], bool(trajs)
    for c in CONSTRUCTS:
        mine = [t for t in trajs if construct_of(t) == c]
        own = [SCORES[c](t) for t in mine]
        sr = rate(sum(map(success, mine)), len(mine))
        low = min((v for v in own if v is not None), default=None)
        # a construct a --limit sample lacks has nothing to check, not a failed check
        ok = ok and (not mine or (sr["mean"] == 1.0 and low == 1.0 and None not in own))
        rows.append([c, sr, "n/a" if low is None else f"{low:.3f}", str(len(mine))])
    return Item("Reference", "The oracle planners",
                "Oracle plans gate every instance: the plan succeeds, is legal, and scores "
                "near 1 on its construct.",
                table(["construct", "SR", "min own score (C_Dk)", "instances"], rows),
                findings=[Finding("coco-oracle", "Quality gates",
                                  "The oracle succeeds on every instance and scores 1 on its "
                                  "own construct.", "near 1", {"all SR 1 and C_Dk 1": ok},
                                  ok if trajs else Verdict("untestable", "no oracle episode"))])


def _capacity_item(ep: Episodes) -> Item:
    tight = ep(*(k for k in ep.keys if k.capacity == 1))
    base = [t for t in ep(*(k for k in ep.keys if k.subset == "rep240"
                             and k.planner == "decentralized" and k.who == "team"
                             and k.capacity is None)) if construct_of(t) == "D4"]

    def events(trajs: list[Trajectory]) -> list[float]:
        out = []
        for t in trajs:
            _, o, w = d4_counts(t)
            out.append(float(o + w))
        return out

    d = mean_diff(events(tight), events(base))
    rows = [["1", rate(sum(map(success, tight)), len(tight)), str(len(tight))],
            ["2 (default)", rate(sum(map(success, base)), len(base)), str(len(base))]]
    return Item("Buffer capacity", "D4 with a one-slot buffer (coordbench's ablation)",
                "The public code fixes every buffer at capacity 1; coordbench's instances use "
                "2 (SEEDS). Not in the paper.",
                table(["capacity", "SR", "n"], rows) + f"\nOverflow + empty-buffer waits per "
                f"episode, capacity 1 minus 2: {show(d)}.\n",
                findings=[Finding("coco-capacity", "coordbench",
                                  "A one-slot buffer causes more overflows and empty waits "
                                  "for decentralized planners.", None, show(d),
                                  judge(d, +1))], data={"events": d})


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the CoCoBench study recomputed from the run's trajectories."""
    ep = episodes(run, options)
    who = (f"the model `{options.model}`" if options.model else
           options.offline_who("rule planners"))
    where = ("the main evaluation and the ablations both on the stratified 240 subset"
             if options.quick else "the main evaluation on the 900 instances, the ablations "
             "on the stratified 240 subset")
    if options.instances:
        where = f"every condition on the instance files of `{options.instances}`"
    preamble = (f"Planner rows are played by {who}: {where}. " + VERDICT_RULE + " Scores use "
                "the paper's definitions (Eqs. 7-10, docs/constructs.md): C_D3's M* is the "
                "oracle's makespan in action steps and L the executed action steps; C_D4's w "
                "counts empty-buffer waits downstream; a planner reply that cannot be parsed "
                "or names no menu action ends the episode as a protocol failure.")
    items = [_main_item(ep), _correlation_item(ep, options), _architecture_item(ep),
             _observation_item(ep, options), _team_item(ep), _failure_item(ep),
             _capacity_item(ep), _cost_item(ep), _oracle_item(ep)]
    items.append(cocobench_item(ep))  # Figs. 4, 11-14: examples from the episodes
    if options.limit is not None:
        main, sub = _limit_samples(options, out)
        name = {"all": "the instance files" if options.instances else "the 900 instances",
                "rep240": "the 240 subset"}
        samples = {name[keys(options)[0].subset]: main, name[_ablation_subset(options)]: sub}
        preamble += " " + sample_line(options.limit, samples, "instances",
                                      "every condition (the one-slot buffer ablation: of "
                                      "its set's D4 instances)")
        mark_untestable(items, _needs(options.limit, main, sub))
        items.append(sample_item(options.limit, samples, "instances"))
    return Study(PAPER, TITLE, preamble, items)


def _ablation_subset(options: Options) -> str:
    """Return the instance set of the ablations (the 240 subset; the user's files)."""
    return "all" if options.instances else "rep240"


def _limit_samples(options: Options, out: Path) -> tuple[Sample, Sample]:
    """Return the --limit samples of the main evaluation's and the ablations' instance sets
    (every condition on a set plays its sample)."""
    main, sub = (_condition(Key(subset), options, out).sample()
                 for subset in (keys(options)[0].subset, _ablation_subset(options)))
    assert main is not None and sub is not None  # a limit draws a sample
    return main, sub


def _needs(limit: int, main: Sample, sub: Sample) -> dict[str, str | None]:
    """Return, per finding id, why a --limit sample cannot test it (None: it can): the
    handoff comparisons need D4 instances in the ablations' sample `sub`, the team-size
    trends two team sizes in the main evaluation's sample `main`, a best model per
    construct two constructs."""
    d4 = lacks_value(limit, sub, 0, "D4", "D4 instance")
    sizes = missing_reason(limit, main, 1, 2, "team sizes")
    return {"coco-d4-decentral": d4, "coco-d4-decentral-cs": d4, "coco-capacity": d4,
            "coco-team-size": sizes, "coco-models-team-size": sizes,
            "coco-models-weak-overhead": sizes,
            "coco-models-best-differs": missing_reason(limit, main, 0, 2, "constructs")}


# the paper's Table 1 for four of its 11 models: SR %, CS overall, then SR %, CS per
# construct D1-D4
PAPER_T1 = {
    "GPT-5.6-sol": (84.8, 0.90, 57.3, 0.63, 90.2, 0.96, 96.5, 1.00, 94.2, 0.99),
    "Claude Opus 4.8": (78.5, 0.87, 38.1, 0.50, 94.7, 1.00, 93.9, 0.99, 85.7, 0.99),
    "Qwen3-VL-8B": (24.6, 0.57, 95.0, 0.91, 4.9, 0.45, 1.3, 0.73, 0.0, 0.18),
    "InternVL3.5-8B": (13.4, 0.42, 53.7, 0.45, 1.3, 0.41, 0.0, 0.56, 0.0, 0.26),
}


def compare(run: RunDir, each: Sequence[Options], out: Path) -> list[Item]:
    """Return the paper's model comparisons over the models of a many-model study: Table 1
    (SR, CS, and SR and C_Dk per construct D1-D4, per model), Fig. 7 (image vs blind per
    model), Fig. 8 (team size per model) and Fig. 9 (terminal states and SR vs legal-plan
    rate per model), with the paper's model findings judged on these models (untestable
    where a --limit sample lacks the strata a finding compares)."""
    items = _compare(run, each, out)
    limit = each[0].limit
    if limit is not None:
        mark_untestable(items, _needs(limit, *_limit_samples(each[0], out)))
    return items


def _compare(run: RunDir, each: Sequence[Options], out: Path) -> list[Item]:
    """Return `compare`'s items as the runs judge them."""
    from .models import majority_finding, paired_metric_by_task

    eps = {str(o.model): episodes(run, o) for o in each}
    models = list(eps)
    main = {m: ep(_main_key(ep)) for m, ep in eps.items()}
    by_c = {m: {c: [t for t in trajs if construct_of(t) == c] for c in CONSTRUCTS}
            for m, trajs in main.items()}
    rows, scores, srs = [], {}, {}
    for m in models:
        trajs = main[m]
        cs = {c: mean_score([v for v in map(construct_score, ts) if v is not None])
              for c, ts in by_c[m].items()}
        scores[m] = cs
        srs[m] = {c: rate(sum(map(success, ts)), len(ts)) for c, ts in by_c[m].items()}
        rows.append([m, rate(sum(map(success, trajs)), len(trajs)),
                     mean_score([v for v in map(construct_score, trajs) if v is not None]),
                     *(x for c in CONSTRUCTS for x in (srs[m][c], cs[c])), str(len(trajs))])
    # Table 1: does the best model differ by construct, decidedly (paired on the instances)?
    best = {c: max(models, key=lambda m, c=c: (-1.0 if scores[m][c]["mean"] is None
                                                 else scores[m][c]["mean"]))
            for c in CONSTRUCTS if any(by_c[m][c] for m in models)}
    differs: bool | None | Verdict = None
    if all(len({scores[m][c]["mean"] for m in models}) == 1 for c in best):
        differs = Verdict("untestable", "every model scores the same on every construct")
    elif len(best) >= 2 and len(set(best.values())) == 1 and all(
            direction(paired_metric_by_task(by_c[best[c]][c], by_c[m][c], construct_score),
                      +1) is True for c in best for m in models if m != best[c]):
        differs = False  # one model decidedly best on every construct
    for c1, c2 in ((a, b) for a in best for b in best if best[a] != best[b]):
        a, b = best[c1], best[c2]
        if (direction(paired_metric_by_task(by_c[a][c1], by_c[b][c1], construct_score), +1)
                is True and direction(paired_metric_by_task(by_c[b][c2], by_c[a][c2],
                                                            construct_score), +1) is True):
            differs = True
    # Fig. 7: image minus blind, pooled over the planners (240 subset)
    observe = {}
    for m, ep in eps.items():
        pick = [k for k in ep.keys if k.subset == "rep240" and k.who == "team"
                and k.capacity is None]
        image = ep(*(k for k in pick if k.observation == "image"))
        blind = ep(*(k for k in pick if k.observation == "blind"))
        observe[m] = (observation_deltas(image, blind)["all"]["delta"]["SR"]
                      if image and blind else None)
    # a vision claim is judged on the models that took the images (their registry entry):
    # a text-only model plays the image rows as text
    sees = _takes_images(each, models)
    no_loss = {m: judge(d, -1, missing="no image and blind rows") for m, d in observe.items()
               if sees[m]}
    # Fig. 8: SR by team size, its slope per model, and whether weaker models lose more
    trend = {m: team_size_trend(trajs).get("all", {}) for m, trajs in main.items()}
    slopes = {m: t.get("slope", {}).get("SR") for m, t in trend.items()}
    pts = [(rate(sum(map(success, main[m])), len(main[m]))["mean"], slopes[m]["slope"])
           for m in models if slopes[m] and slopes[m].get("slope") is not None]
    overhead = ols_slope([x for x, _ in pts], [y for _, y in pts])
    # Fig. 9: terminal states and success vs legality per model
    term = {m: termination_shares(trajs) for m, trajs in main.items()}
    gap = {m: legality_gap(trajs) for m, trajs in main.items()}
    gaps = [g["successful_not_legal"] for g in gap.values()]
    legal_gap = (Verdict("untestable", "no successful episodes to check")
                 if not any(g["n"] for g in gaps) else
                 True if any((g["lo"] or 0) > 0 for g in gaps if g["n"]) else
                 Verdict("inconclusive", "no model's share of illegal successes is shown "
                                         "above 0"))
    states = sorted({s for t in term.values() for s in t})
    team_rows = [[m, *(trend[m].get("by_team", {}).get(n, {}).get("SR", "n/a")
                       for n in ("2", "3", "4")), slopes[m] or "n/a"] for m in models]
    fig8 = lines("SR by team size per model (main run), Wilson 95% intervals.",
                 {"SR": {m: ([2, 3, 4], *([trend[m]["by_team"][n]["SR"][x] if n in
                                           trend[m].get("by_team", {}) else None
                                           for n in ("2", "3", "4")]
                                          for x in ("mean", "lo", "hi")))
                         for m in models}}, "agents", "SR", integer_x=True)
    fig9 = interval_bars("Success rate and legal-plan rate per model (Wilson 95% intervals).",
                         {k: {m: (gap[m][k]["mean"], gap[m][k]["lo"], gap[m][k]["hi"])
                              for m in models} for k in ("success_rate", "legal_rate")}, "rate")
    findings = [
        Finding("coco-models-best-differs", "Table 1",
                "The best model differs by construct.",
                "Qwen3-VL-8B on D1, Claude Opus 4.8 on D2, GPT-5.6-sol on D3 and D4",
                {c: m for c, m in best.items()}, differs,
                "best: the highest construct score C_Dk; decided where two constructs' best "
                "models each beat the other's on their construct (paired CS difference over "
                "the instances, bootstrap interval)"),
        majority_finding("coco-models-blind", "Fig. 7",
                         "For most models, removing images does not lower success.",
                         "blind 42.3% vs image 40.6% SR", observe,
                         no_loss or {m: Verdict("untestable", "takes no images")
                                     for m in models},
                         "per model, image minus blind SR: holds where blind is decidedly "
                         "better, contradicted where images decidedly help, inconclusive "
                         "between (no loss shown, no gain ruled out); judged only on the "
                         "models that take images ("
                         + (", ".join(m for m in models if sees[m]) or "none here")
                         + "): a text-only model plays the image rows as text"),
        majority_finding("coco-models-team-size", "Fig. 8",
                         "Most models' SR falls as the team grows.",
                         "48.8% -> 45.8% -> 43.1% (model average)", slopes,
                         {m: judge(s, -1) for m, s in slopes.items()}),
        Finding("coco-models-weak-overhead", "Fig. 8",
                "Weaker models suffer more from team-size overhead (a model's SR slope per "
                "agent rises with its SR).", "weak models degrade most", show(overhead),
                judge(overhead, +1),
                "" if overhead["slope"] is not None else "needs at least 3 models"),
        Finding("coco-models-legality", "Fig. 9b",
                "Success and legality diverge: some model's successful episodes are not all "
                "legal.", {"Claude Haiku 4.5": {"SR": 0.631, "legal": 0.472}},
                {m: show(g["successful_not_legal"]) for m, g in gap.items()}, legal_gap)]
    return [Item("Table 1 / Figs. 7-9", "Models per construct, observation, team size and "
                 "terminal state",
                 "Over 11 MLLMs on the full set (centralized, image) the best reaches SR 84.8% "
                 "and CS 0.90 and the best model differs by construct (Table 1); removing "
                 "images does not hurt (Fig. 7); SR falls with team size, weak models most "
                 "(Fig. 8); protocol failures and legality differ by model (Fig. 9). Four of "
                 "Table 1's rows (SR %, CS):\n\n"
                 + table(["model", "SR", "CS",
                          *(x for c in CONSTRUCTS for x in (f"SR {c}", f"C_{c}"))],
                         [[m, *(f"{v:g}" for v in vals)] for m, vals in PAPER_T1.items()]),
                 "Table 1 (main condition; SR and C_Dk per construct):\n\n"
                 + table(["model", "SR", "CS",
                          *(x for c in CONSTRUCTS for x in (f"SR {c}", f"C_{c}")), "n"], rows)
                 + "\nFig. 7 (image minus blind SR, 240 subset, pooled planners):\n\n"
                 + table(["model", "delta SR"], [[m, show(d)] for m, d in observe.items()])
                 + "\nFig. 8 (SR by team size):\n\n"
                 + table(["model", "SR 2 agents", "SR 3", "SR 4", "SR slope per agent"],
                         team_rows)
                 + "\nFig. 9a (terminal states, share of episodes):\n\n"
                 + table(["model", *states], [[m, *(term[m].get(s, "n/a") for s in states)]
                                              for m in models])
                 + "\nFig. 9b (success vs legal plans):\n\n"
                 + table(["model", "SR", "legal-plan rate", "successful but not legal"],
                         [[m, gap[m]["success_rate"], gap[m]["legal_rate"],
                           gap[m]["successful_not_legal"]] for m in models]),
                 [fig8, fig9], findings,
                 data={"table1": {m: {"SR": r[1], "CS": r[2],
                                      **{f"C_{c}": scores[m][c] for c in CONSTRUCTS},
                                      **{f"SR_{c}": srs[m][c] for c in CONSTRUCTS}}
                                  for m, r in zip(models, rows, strict=True)},
                       "observation": observe, "team_size": trend, "termination": term,
                       "legality": gap})]
