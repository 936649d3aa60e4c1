"""The cross-family study (`coordbench reproduce cross`): the same protocols and team sizes in
three families, the coordination profile of every family, and who allocates best on the same
STAT instances (docs/cross-family.md).

No single paper makes these claims; each finding names the family paper whose claim it
carries to the other families. Offline, rule minds play every protocol row (the claiming minds
of `agents/team/claims.py` in STAT and on constructs, the household rule minds in homes), STAT's
scripted allocators and a learned team (MAPPO with the task-equivariant pair network, trained
first by `prepare`) play the allocation rows; with `--model M` the model also plays a team
under every protocol in each family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.analyses.common import (
    correlation,
    est,
    mean_diff,
    mean_of,
    mean_score,
    ols_slope,
    team_size,
)
from coordbench.core.rundir import RunDir
from coordbench.core.stats import estimate
from coordbench.core.trajectory import Trajectory
from coordbench.metrics.profile import KINDS, MEASURES, episode_profile

from .plots import interval_bars
from .sampled import sample_line
from .study import (
    VERDICT_RULE,
    Episodes,
    Finding,
    Item,
    Options,
    Study,
    both,
    judge,
    model_settings,
    planned_episodes,
    show,
    table,
)

PAPER = "cross"
TITLE = "Across families (household, constructs, STAT)"
TASK_FAMILIES = ("household", "constructs", "stat")
PROTOCOLS = ("none", "broadcast", "discuss", "leader", "shared_memory")
STAT_PROTOCOLS = ("none", "broadcast", "leader", "shared_memory")
STAT_CONFIGS = ("3A-6T-5x3", "5A-25T-50x30", "9A-25T-50x30")
HOUSEHOLD_TEAM = 3  # the protocol rows' team; team sizes 2-4 without and with broadcast
LEARNED_ALGO = "mappo"


@dataclass(frozen=True)
class Key:
    """One condition: family, protocol (or a STAT policy), team size or STAT configuration,
    and who plays ("rule", "llm", a scripted allocator, "learned-<seed>")."""

    family: str
    protocol: str
    where: str
    who: str = "rule"


def _learned_configs(options: Options) -> list[Any]:
    from coordbench.learn.methods import train_configs

    configs = STAT_CONFIGS[:1] if options.quick else STAT_CONFIGS[:2]
    seeds = [0] if options.quick else [0, 1, 2]
    steps = options.steps or (20_000 if options.quick else 100_000)
    return [tc for c in configs for tc in train_configs(c, LEARNED_ALGO, seeds, steps=steps,
                                                        arch="pair", eval_every=10_000)]


def keys(options: Options) -> list[Key]:
    """Return every condition the study needs, each once, in a stable order."""
    out = [Key("household", p, str(HOUSEHOLD_TEAM)) for p in PROTOCOLS]
    out += [Key("household", p, str(n)) for n in (2, 4) for p in ("none", "broadcast")]
    out += [Key("constructs", p, "rep240") for p in PROTOCOLS]
    for c in STAT_CONFIGS:
        out += [Key("stat", p, c) for p in STAT_PROTOCOLS]
        out += [Key("stat", "none", c, who) for who in ("random", "hungarian")]
    out += [Key("stat", "none", tc.config, f"learned-{tc.seed}") for tc in
            _learned_configs(options)]
    if options.model:
        out += [Key("household", p, str(HOUSEHOLD_TEAM), "llm") for p in PROTOCOLS]
        out += [Key("constructs", p, "rep240", "llm") for p in PROTOCOLS]
        out += [Key("stat", p, STAT_CONFIGS[0], "llm") for p in STAT_PROTOCOLS]
    return out


def learned_dir(out: Path) -> Path:
    """Return where the learned team's training run lives inside the study's run."""
    return Path(out) / "learned"


def prepare(options: Options, out: Path, executor: str, workers: int,
            say: Callable[[str], None] | None = None) -> None:
    """Train the learned team's seeds that are not on disk yet (resumable, any executor)."""
    from coordbench.learn.sweep import sweep

    sweep(_learned_configs(options), learned_dir(out), workers, executor,
          command="coordbench reproduce cross", say=say)


def _stat_episodes(key: Key, options: Options) -> int:
    if key.who == "llm":
        return options.limit or (3 if options.quick else 20)
    return 20 if options.quick else 100


def _condition(key: Key, options: Options, out: Path) -> tuple[Any, Any, int | None]:
    if key.family == "household":
        from coordbench.suites.mecobench.episode import RULE_DIALS as HOUSEHOLD_DIALS
        from coordbench.suites.mecobench.episode import HouseholdSpec
        from coordbench.suites.mecobench.suite import SUITE as HS
        from coordbench.suites.mecobench.suite import mecobench_condition

        from .mecobench_design import quick_tasks

        spec = HouseholdSpec("parallel", int(key.where), key.protocol, key.who, "full",
                             options.seed if key.who == "llm" else 0,
                             options.model if key.who == "llm" else None,
                             dials=options.dials(HOUSEHOLD_DIALS) if key.who == "rule"
                             else None)
        cond = (mecobench_condition(str(quick_tasks(out)), None, spec) if options.quick
                else mecobench_condition(None, "v1", spec))
        return HS, cond, options.limit if key.who == "llm" else None
    if key.family == "constructs":
        from coordbench.agents.constructs.planners import RULE_DIALS as CONSTRUCT_DIALS
        from coordbench.suites.constructs.episode import ConstructSpec
        from coordbench.suites.constructs.suite import SUITE as CS
        from coordbench.suites.constructs.suite import ConstructCondition

        spec = ConstructSpec("decentralized", key.who, "blind",
                             options.model if key.who == "llm" else None,
                             options.seed if key.who == "llm" else 0, "index", None,
                             key.protocol, dials=options.dials(CONSTRUCT_DIALS)
                             if key.who == "rule" else None)
        limit = options.limit if key.who == "llm" else None
        return CS, ConstructCondition(spec, key.where, None, None, limit), None
    from coordbench.suites.stat.suite import SUITE as SS
    from coordbench.suites.stat.suite import StatEvalSpec

    if key.who.startswith("learned-"):
        from coordbench.learn.sweep import checkpoint_path

        tc = next(tc for tc in _learned_configs(options) if tc.config == key.where
                  and f"learned-{tc.seed}" == key.who)
        policy = str(checkpoint_path(learned_dir(out), tc))
        return SS, StatEvalSpec(key.where, policy), _stat_episodes(key, options)
    if key.who in ("rule", "llm"):
        from coordbench.agents.stat.rule import STAT_RULE_DIALS

        spec = StatEvalSpec(key.where, key.who, model=options.model if key.who == "llm"
                            else None, protocol=key.protocol,
                            seed=options.seed if key.who == "llm" else 0,
                            dials=options.dials(STAT_RULE_DIALS) if key.who == "rule" else None)
    else:
        spec = StatEvalSpec(key.where, key.who)
    return SS, spec, _stat_episodes(key, options)


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition, limit) items the study plays (after `prepare`)."""
    return [_condition(k, options, out) for k in keys(options)]


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [f"{k.family} {k.where} {k.who} {k.protocol}" for k in keys(options)]


def resources(options: Options):
    """Return the run's resources: the model harness with `--model` (every family reads its
    `harness`), else none."""
    from coordbench.suites.mecobench.suite import MecobenchResources

    settings = model_settings(options)
    return None if settings is None else MecobenchResources(settings)


def episodes(run: RunDir, options: Options, out: Path) -> Episodes:
    """Return the study's episodes by Key."""
    return planned_episodes(run, keys(options), lambda k: _condition(k, options, out))


# -- measures -------------------------------------------------------------------------------
def _values(trajs: list[Trajectory], measure: str) -> list[float]:
    return [v for v in (episode_profile(t)[measure] for t in trajs) if v is not None]


def _success(trajs: list[Trajectory]) -> list[float]:
    return [float(t.end is not None and t.end.success) for t in trajs]


def _protocol_keys(family: str, who: str) -> list[Key]:
    if family == "household":
        return [Key(family, p, str(HOUSEHOLD_TEAM), who) for p in PROTOCOLS]
    if family == "constructs":
        return [Key(family, p, "rep240", who) for p in PROTOCOLS]
    return [Key(family, p, STAT_CONFIGS[1] if who == "rule" else STAT_CONFIGS[0], who)
            for p in STAT_PROTOCOLS]


def _profile_item(ep: Episodes) -> Item:
    rows = []
    for k in ep.keys:
        trajs = ep(k)
        if not trajs:
            continue
        row: list[Any] = [k.family, k.where, k.who, k.protocol, str(len(trajs))]
        for m in MEASURES:
            vals = _values(trajs, m)
            row.append((mean_score(vals) if KINDS[m] == "unit" else mean_of(vals))
                       if vals else None)
        rows.append(row)
    return Item("profile", "The coordination profile of every condition", "—",
                table(["family", "team / config", "who", "protocol", "n", *MEASURES], rows),
                note="One definition per family for each measure (docs/cross-family.md); n/a "
                     "where a measure does not apply.")


def _protocol_item(ep: Episodes, who: str) -> Item:
    rows, data = [], {}
    reds: dict[str, dict[str, Any]] = {}
    progress: dict[str, Any] = {}
    for family in TASK_FAMILIES:
        ks = _protocol_keys(family, who)
        base = ep(ks[0])
        for k in ks:
            trajs = ep(k)
            if not trajs:
                continue
            red = mean_diff(_values(trajs, "redundancy"), _values(base, "redundancy"))
            prog = mean_diff(_values(trajs, "progress_per_step"),
                             _values(base, "progress_per_step"))
            rows.append([family, k.where, k.protocol, str(len(trajs)),
                         mean_score(_success(trajs)), mean_of(_values(trajs, "redundancy")),
                         mean_of(_values(trajs, "comm_per_unit")),
                         mean_of(_values(trajs, "progress_per_step")),
                         red if k.protocol != "none" else "—",
                         prog if k.protocol != "none" else "—"])
            reds.setdefault(k.protocol, {})[family] = red
            if k.protocol == "broadcast":
                progress[family] = prog
            data[f"{family}/{k.protocol}"] = {"redundancy_vs_none": red,
                                              "progress_vs_none": prog}
    findings = []
    for p in PROTOCOLS[1:]:
        fams = reds.get(p, {})
        if not fams:
            continue
        holds = both(*(judge(d, -1) for d in fams.values()))
        findings.append(Finding(
            f"X-{who}-{p}-redundancy", "MECoBench Table 9 (household: communication cuts "
            "duplicate grabs)", f"{p} lowers redundancy against no communication in every "
            f"family that has it ({', '.join(fams)})", "fewer duplicate grabs with "
            "communication (household)", {f: show(d) for f, d in fams.items()}, holds,
            "holds when every family's Welch interval lies below 0"))
    for family, d in progress.items():
        findings.append(Finding(
            f"X-{who}-broadcast-progress-{family}", "MECoBench Table 9", f"broadcast raises "
            f"progress per step against no communication ({family})", "communication "
            "raises completion (household)", show(d), judge(d, +1)))
    header = ["family", "team / config", "protocol", "n", "success", "redundancy",
              "messages / unit", "progress / step", "Δ redundancy vs none",
              "Δ progress vs none"]
    title = ("Household protocols in three families, rule minds" if who == "rule" else
             "Household protocols in three families, model minds")
    bars = {f"{family} {p}": (d["delta"], d["lo"], d["hi"])
            for p, fams in reds.items() if p != "none" for family, d in fams.items()
            if d and d.get("delta") is not None}
    figs = [interval_bars(f"{title}: change in redundancy against no communication (Welch "
                          "95% intervals).", {"redundancy, protocol minus none": bars},
                          "difference", zero=True)] if bars else []
    return Item(f"protocols-{who}", title, "MECoBench compares protocols in homes only",
                table(header, rows), figs, findings=findings, data=data,
                note="Rule minds in STAT and on constructs coordinate by claims "
                     "(agents/team/claims.py); household rule minds by their own messages. "
                     "STAT has no discuss.")


def _stratum(t: Trajectory) -> tuple:
    """Return what an episode is compared within: its configuration (STAT), construct and
    team (constructs), number of target objects (household)."""
    params = t.header.params
    if t.header.suite == "stat":
        return (t.header.task_id,)
    if t.header.suite == "constructs":
        return (params.get("construct", {}).get("construct"), params.get("agents"))
    return (sum(params.get("required", {}).values()),)


def _centred(values: list[float], strata: list[tuple]) -> list[float]:
    """Return each value minus its stratum's mean (a correlation of centred values compares
    episodes within a stratum only: more agents or a harder task move both numbers)."""
    sums: dict[tuple, list[float]] = {}
    for v, k in zip(values, strata, strict=True):
        sums.setdefault(k, []).append(v)
    means = {k: sum(v) / len(v) for k, v in sums.items()}
    return [v - means[k] for v, k in zip(values, strata, strict=True)]


def _phenomenon_item(ep: Episodes) -> Item:
    from coordbench.metrics.constructs import failure_taxonomy
    from coordbench.metrics.household import conflict_action_rate
    from coordbench.metrics.stat import arrays_from_trajectory, conflict_rate

    def occupancy(t: Trajectory) -> float:
        acts = sum(len(e.actions) for e in t.events if getattr(e, "type", "") ==
                   "household_step")
        return failure_taxonomy(t)["occupancy_conflict"] / acts if acts else 0.0

    native = {"household": ("CAR", conflict_action_rate),
              "constructs": ("occupancy conflicts / action", occupancy),
              "stat": ("conflict rate", lambda t: conflict_rate(arrays_from_trajectory(t)))}
    groups = {"household": ep(Key("household", "none", str(HOUSEHOLD_TEAM))),
              "constructs": ep(Key("constructs", "none", "rep240")),
              "stat": ep(*(Key("stat", "none", c) for c in STAT_CONFIGS[1:]))}
    rows, findings, data = [], [], {}
    for family, trajs in groups.items():
        pairs = [(episode_profile(t), t) for t in trajs]
        pairs = [(p, t) for p, t in pairs if p["redundancy"] is not None
                 and p["progress_per_step"] is not None]
        name, fn = native[family]
        strata = [_stratum(t) for _, t in pairs]
        red = _centred([p["redundancy"] for p, _ in pairs], strata)
        r_native = correlation(red, _centred([fn(t) for _, t in pairs], strata))
        r_progress = correlation(red, _centred([p["progress_per_step"] for p, _ in pairs],
                                               strata))
        rows.append([family, name, str(len(pairs)), r_native, r_progress])
        data[family] = {"r_native": r_native, "r_progress": r_progress}
        findings.append(Finding(
            f"X-same-{family}", "STAT Table 7, MECoBench CAR, CoCoBench occupancy",
            f"more duplicated claims go with less progress per step ({family}, no "
            "communication)", "conflicts cost progress", show(r_progress),
            judge(r_progress, -1), "Pearson r over episodes, within strata, with its "
            "Fisher interval"))
    fig = interval_bars("Correlation of redundancy with each family's own conflict measure "
                        "and with progress per step, within strata (Fisher 95% intervals).",
                        {key: {f: (d[key]["delta"], d[key]["lo"], d[key]["hi"])
                               for f, d in data.items()}
                         for key in ("r_native", "r_progress")}, "Pearson r", zero=True)
    return Item("phenomenon", "Is STAT's conflict rate the household's CAR and D3's "
                "occupancy conflict?", "each paper measures its own",
                table(["family", "native measure", "episodes", "r(redundancy, native)",
                       "r(redundancy, progress/step)"], rows), [fig], findings=findings,
                data=data,
                note="The rule teams without communication; STAT: 5A-25T-50x30 and "
                     "9A-25T-50x30. Correlations compare episodes within a stratum (each "
                     "value minus its stratum's mean): STAT configuration, construct x team, "
                     "household number of target objects.")


def _team_item(ep: Episodes) -> Item:
    groups = {
        "household": [(int(k.where), t) for k in (Key("household", "none", "2"),
                                                  Key("household", "none", "3"),
                                                  Key("household", "none", "4"))
                      for t in ep(k)],
        "constructs": [(team_size(t), t) for t in ep(Key("constructs", "none", "rep240"))],
        "stat": [(team_size(t), t) for c in STAT_CONFIGS[1:]
                 for t in ep(Key("stat", "none", c))],
    }
    rows, findings = [], []
    slopes: dict[str, dict[str, tuple]] = {"redundancy": {}, "idle_share": {}}
    for family, pts in groups.items():
        for measure in ("redundancy", "idle_share"):
            xs = [n for n, t in pts if episode_profile(t)[measure] is not None]
            ys = [v for v in (episode_profile(t)[measure] for _, t in pts) if v is not None]
            fit = ols_slope(xs, ys)
            slopes[measure][family] = (fit["slope"], fit["lo"], fit["hi"])
            rows.append([family, measure, ", ".join(map(str, sorted(set(xs)))), str(len(xs)),
                         fit])
            if measure == "redundancy":
                findings.append(Finding(
                    f"X-team-{family}", "MECoBench Fig. 7, STAT Table 14 (agents)",
                    f"redundancy rises with team size ({family}, no communication)",
                    "more agents, more contention", show(fit), judge(fit, +1),
                    "least-squares slope per agent over episodes"))
    fig = interval_bars("Change per added agent, no communication (least-squares slopes, t "
                        "95% intervals).", {f"{m} per agent": v for m, v in slopes.items()},
                        "slope", zero=True)
    return Item("teams", "Team size across families", "each paper varies its own team sizes",
                table(["family", "measure", "team sizes", "episodes", "slope per agent"],
                      rows), [fig], findings=findings,
                note="Household: parallel v1 teams of 2-4; constructs: rep240's teams of 2-4; "
                     "STAT: 5 vs 9 agents on 25 tasks, 50x30.")


def _allocation_item(ep: Episodes, options: Options) -> Item:
    from coordbench.metrics.stat import arrays_from_trajectory, episode_return

    rows, findings = [], []
    panels: dict[str, dict[str, tuple]] = {}
    for config in STAT_CONFIGS:
        who = [("random", Key("stat", "none", config, "random")),
               ("rule, none", Key("stat", "none", config)),
               ("rule, broadcast (= greedy)", Key("stat", "broadcast", config)),
               ("hungarian", Key("stat", "none", config, "hungarian"))]
        learned = [k for k in ep.keys if k.family == "stat" and k.where == config
                   and k.who.startswith("learned-")]
        llm = [k for k in ep.keys if k.family == "stat" and k.where == config and k.who == "llm"]
        groups = [(label, ep(k)) for label, k in who]
        if learned:
            groups.append((f"learned ({LEARNED_ALGO}+pair, {len(learned)} seeds)",
                           ep(*learned)))
        groups += [(f"llm {options.model} ({k.protocol})", ep(k)) for k in llm]
        rets: dict[str, list[float]] = {}
        for label, trajs in groups:
            if not trajs:
                continue
            r = [episode_return(arrays_from_trajectory(t)) for t in trajs]
            rets[label] = r
            e = est(estimate(r))
            panels.setdefault(config, {})[label] = (e["mean"], e["lo"], e["hi"])
            rows.append([config, label, str(len(trajs)), e,
                         mean_of(_values(trajs, "redundancy")),
                         mean_score(_values(trajs, "idle_share")),
                         mean_of(_values(trajs, "progress_per_step"))])
        lab = next((k for k in rets if k.startswith("learned")), None)
        if lab is not None:
            d = mean_diff(rets[lab], rets["rule, none"])
            findings.append(Finding(
                f"X-learned-{config}", "STAT Tables 5 and 9", "the learned team returns more "
                f"than rule minds without communication ({config})", "MARL below "
                "scripted allocators", show(d), judge(d, +1),
                "the paper's learners stay near random; the pair network closes most of the "
                "gap"))
        for k in llm:
            label = f"llm {options.model} ({k.protocol})"
            if lab is not None and label in rets:
                d = mean_diff(rets[label], rets[lab])
                findings.append(Finding(
                    f"X-llm-{k.protocol}-{config}", "issue: LLM teams vs MARL",
                    f"the model team under {k.protocol} returns more than the learned team "
                    f"({config})", "—", show(d), judge(d, +1)))
    figs = [interval_bars("Return per team on the same STAT instances (t 95% intervals).",
                          panels, "return")] if panels else []
    return Item("allocation", "Who allocates best on the same STAT instances",
                "STAT compares MARL methods with scripted allocators",
                table(["config", "team", "episodes", "return", "redundancy", "idle share",
                       "progress / step"], rows), figs, findings=findings)


def _limit_samples(options: Options, out: Path) -> dict[str, Any]:
    """Return the --limit samples of the model's household and construct rows, by family."""
    household, constructs = (_condition(Key(family, "none", where, "llm"), options, out)
                             for family, where in (("household", str(HOUSEHOLD_TEAM)),
                                                   ("constructs", "rep240")))
    assert options.limit is not None
    return {"household tasks": household[0].sample(household[1], options.limit),
            "construct instances": constructs[1].sample()}


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the cross-family study recomputed from the run's trajectories."""
    ep = episodes(run, options, out)
    who = (f"rule minds and scripted allocators, and the model `{options.model}` in every "
           "protocol row" if options.model else "rule minds, scripted allocators and a "
           "learned team (offline; no model)")
    size = ("a quarter of the household v1 parallel cases, rep240, 20 STAT layouts"
            if options.quick else "the household v1 parallel cases, rep240, 100 STAT layouts")
    preamble = f"Played by {who}, on {size}. " + VERDICT_RULE
    if options.limit is not None:  # the model's rows play a stratified sample
        preamble += " " + sample_line(options.limit, _limit_samples(options, out), "cases",
                                      "the model's rows")
    items = [_protocol_item(ep, "rule")]
    if options.model:
        items.append(_protocol_item(ep, "llm"))
    items += [_phenomenon_item(ep), _team_item(ep), _allocation_item(ep, options),
              _profile_item(ep)]
    return Study(PAPER, TITLE, preamble, items)
