"""Many models in one study: `reproduce PAPER --model A --model B ...`.

Every model plays the paper's model rows on the same instances and seeds; the rows that no
model plays (the oracle, the scripted allocators) play once. The study is the paper's own
study once per model (its items labelled `[A]`, its finding ids `id@A`), preceded by the
paper's model comparisons (`compare(run, each, out)` of the paper's module, where it has
one: MECoBench Table 8 and Figs. 5-6, CoCoBench Table 1 and Figs. 7-9) and by the models'
paired comparison on the episodes they share (McNemar's exact test per pair of models,
Holm-corrected over the pairs). A one-model study is exactly the paper's study.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from types import ModuleType
from typing import Any

from coordbench.analyses.common import rate, success
from coordbench.analyses.paired import holm, paired_success
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.errors import ConfigError

from .study import (
    VERDICT_RULE,
    VERDICTS,
    Finding,
    Item,
    Options,
    Study,
    Verdict,
    direction,
    from_holds,
    show,
    table,
)


def parse_models(values: Sequence[str] | None) -> tuple[str, ...]:
    """Return the model aliases of repeated and comma-separated `--model` values, each once
    in the order given; ConfigError (one line) for an empty name."""
    out: list[str] = []
    for value in values or ():
        parts = [p.strip() for p in value.split(",")]
        if not all(parts):
            raise ConfigError(f"--model {value!r} names an empty model: give aliases, "
                              "repeated or comma-separated (--model A --model B, or A,B)")
        out += [p for p in parts if p not in out]
    return tuple(out)


def per_model(options: Options, models: Sequence[str]) -> list[Options]:
    """Return one Options per model and seed of its rows (`options.repeats` seeds from 0;
    the options themselves without models)."""
    if not models:
        return [options]
    return [replace(options, model=m, model_set=tuple(models), seed=r)
            for m in models for r in range(options.repeats)]


def _firsts(each: list[Options]) -> list[Options]:
    """Return each model's seed-0 Options (the one its paper study reads)."""
    return [o for o in each if o.seed == 0]


def plan_all(module: ModuleType, each: list[Options], out: Path
             ) -> tuple[list[tuple], list[str], list[str | None]]:
    """Return the (suite, condition[, limit]) items of every model's plan, each condition
    once (rows no model plays are shared), with a progress label each (the model's alias on
    the rows only it plays) and who plays it (the model; None: a shared row)."""
    names: list[list[str]] = []
    plans = []
    for o in each:
        items, labels = module.plan(o, out), module.labels(o, out)
        plans.append((items, labels))
        names.append([item[0].condition(item[1]) for item in items])
    shared = _offline_rows(module, each[0], out)
    seen: set[str] = set()
    items_out, labels_out, owners = [], [], []
    for o, (items, labels), ns in zip(each, plans, names, strict=True):
        for item, label, name in zip(items, labels, ns, strict=True):
            if name in seen:
                continue
            seen.add(name)
            items_out.append(item)
            seed = f" seed {o.seed}" if o.repeats > 1 else ""
            labels_out.append(label if name in shared else f"{label} ({o.model}{seed})")
            owners.append(None if name in shared or o.model is None else str(o.model))
    return items_out, labels_out, owners


def _offline_rows(module: ModuleType, options: Options, out: Path) -> set[str]:
    """Return the conditions of the study played without a model (its reference rows are
    among them: the rows every model's plan shares)."""
    if options.model is None:  # an offline study: every row
        return {item[0].condition(item[1]) for item in module.plan(options, out)}
    offline = replace(options, model=None, model_set=(), seed=0)
    return {item[0].condition(item[1]) for item in module.plan(offline, out)}


def _model_conditions(run: RunDir, module: ModuleType, each: list[Options], out: Path,
                      mixed: bool = False) -> dict[str, list[str]]:
    """Return, per model, the planned conditions only that model plays (every seed; with
    `mixed`, its mixed teams too)."""
    names: dict[str, list[str]] = {}
    for o in each:
        names.setdefault(str(o.model), []).extend(item[0].condition(item[1])
                                                  for item in module.plan(o, out))
    shared = _offline_rows(module, each[0], out)
    # a mixed team (Fig. 32's leader over another model) is no one model's row
    return {m: [n for n in ns if n not in shared and n in run.conditions
                and (mixed or not (run.conditions[n].get("leader_model")
                                   or run.conditions[n].get("seats")))]
            for m, ns in names.items()}


def repeated_trials(run: RunDir, conditions: dict[str, list[str]], k: int) -> dict[str, Any]:
    """Return, per model, pass@k and pass^k over its repeated trials: an instance is a row
    and task, its trials the model's episodes of that instance under the k seeds."""
    from coordbench.analyses.paired import repeated
    from coordbench.report.leaderboard import setting_of

    out: dict[str, Any] = {}
    for model, names in conditions.items():
        trials: dict[str, list[bool]] = {}
        for name in names:
            spec = {x: v for x, v in run.conditions[name].items() if x != "seed"}
            for key in run.episode_keys(name):
                # the case key names the instance under every seed (a household case's seed
                # is the base seed plus its index; a STAT episode's task is its config)
                trials.setdefault(repr((setting_of(spec), key)), []).append(
                    success(run.load_episode(name, key)))
        full = {i: v for i, v in trials.items() if len(v) >= k}
        out[model] = repeated(full, k) if full else None
    return out


def instance_of(traj: Trajectory, spec: dict[str, Any]) -> tuple:
    """Return what an episode played: its condition's setting (the manifest without who
    played), task and seed, so two models' episodes of one row pair up."""
    from coordbench.report.leaderboard import setting_of

    return setting_of(spec), traj.header.task_id, traj.header.seed


PAPER_CONDITIONS = "the paper's conditions"


def paired_models(run: RunDir, conditions: dict[str, list[str]],
                  ablation_of: Any = None) -> dict[str, Any]:
    """Return each model's success over its own rows and, per pair of models, the paired
    success difference over the episodes both played (the same row, task and seed):
    McNemar's exact p with Holm's correction over the pairs. Only the paper's conditions are
    pooled: a condition `ablation_of(manifest fields)` names (one of coordbench's own
    ablations) is compared apart, under "ablations" by its name."""
    groups: dict[str, dict[str, list[str]]] = {}
    for model, names in conditions.items():
        for name in names:
            label = (ablation_of(run.conditions[name]) if ablation_of else None) \
                or PAPER_CONDITIONS
            groups.setdefault(label, {}).setdefault(model, []).append(name)
    out = _paired(run, groups.pop(PAPER_CONDITIONS, {}))
    out["ablations"] = {label: _paired(run, g) for label, g in groups.items()}
    return out


def _paired(run: RunDir, conditions: dict[str, list[str]]) -> dict[str, Any]:
    """Return `paired_models`' numbers over one group of conditions."""
    outcomes: dict[str, dict[tuple, bool]] = {}
    for model, names in conditions.items():
        cells = outcomes.setdefault(model, {})
        for name in names:
            for traj in run.load_episodes(name):
                cells[instance_of(traj, run.conditions[name])] = success(traj)
    levels = {m: rate(sum(v.values()), len(v)) for m, v in outcomes.items()}
    pairs: dict[str, dict[str, Any]] = {}
    for a, b in combinations(outcomes, 2):
        both = sorted(set(outcomes[a]) & set(outcomes[b]))
        if not both:
            continue
        d = paired_success([outcomes[a][k] for k in both], [outcomes[b][k] for k in both])
        pairs[f"{a} - {b}"] = {**d, "pairs": len(both)}
    for key, p in zip(pairs, holm([p.get("p") for p in pairs.values()]), strict=True):
        pairs[key]["p_holm"] = p
    return {"success": levels, "pairs": pairs}


def _repeats_item(result: dict[str, Any], k: int) -> Item:
    rows = [[m, "n/a" if r is None else str(r["instances"]),
             "n/a" if r is None else f"{r['pass@k']:.3f}",
             "n/a" if r is None else f"{r['pass^k']:.3f}"] for m, r in result.items()]
    return Item(
        "Models, repeated", f"pass@{k} and pass^{k} over {k} seeds",
        "The paper plays each instance once per model.",
        f"Each model played every instance of its rows with {k} seeds (0-{k - 1}). pass@{k}: "
        f"the chance that at least one of {k} trials succeeds; pass^{k}: that all {k} do "
        "(unbiased estimators over the trials of each instance, averaged over instances):\n\n"
        + table(["model", "instances", f"pass@{k}", f"pass^{k}"], rows), data=result)


def _cost_item(run: RunDir, module: ModuleType, each: list[Options], out: Path) -> Item:
    from .cost import spent

    result = spent(run, _model_conditions(run, module, each, out, mixed=True))
    rows = [[m, str(r["episodes"]), f"{r['calls']:,.0f}", f"{r['tokens']:,.0f}",
             f"${r['cost']:.2f}", "n/a" if r["wall_s"] is None else f"{r['wall_s']:.1f}"]
            for m, r in result.items()]
    return Item("Models, cost", "Tokens, cost and wall time per model",
                "The paper reports compute cost for some models (CoCoBench Table 6).",
                table(["model", "episodes", "calls", "tokens", "cost", "wall time (s)"],
                      rows) + "\nCost: the registry's prices applied to each call's tokens "
                "(cache hits cost nothing). Wall time: the seconds the commands that played "
                "a model's rows spent on them.", data=result)


def _paired_tables(result: dict[str, Any]) -> str:
    """Return one group's tables: success per model, then the paired differences."""
    rows = [[m, lv, str(lv["n"])] for m, lv in result["success"].items()]
    prow = [[k, p, str(p["pairs"]), "n/a" if p.get("p") is None else f"{p['p']:.3g}",
             "n/a" if p.get("p_holm") is None else f"{p['p_holm']:.3g}"]
            for k, p in result["pairs"].items()]
    return (table(["model", "SR", "episodes"], rows)
            + "\nPaired over the episodes both models played (the same row, task and seed): "
              "the success difference with its bootstrap interval, McNemar's exact p and "
              "Holm's correction over the pairs:\n\n"
            + table(["models", "SR difference", "pairs", "p", "p (Holm)"], prow))


def _paired_item(result: dict[str, Any]) -> Item:
    text = ("Success over every row of the paper's conditions a model played:\n\n"
            + _paired_tables(result))
    for label, group in result.get("ablations", {}).items():
        text += f"\ncoordbench's ablation, compared apart ({label}):\n\n" + \
            _paired_tables(group)
    return Item(
        "Models, paired", "Every model on the same instances",
        "The paper compares models by their rates on one shared instance set (unpaired).",
        text, data=result)


def mostly(verdicts: Sequence[bool | None | Verdict]) -> bool | None:
    """Return a claim about most models: True when more than half of the models decide it
    (True), False when at least half contradict it (False), None otherwise."""
    return majority(list(verdicts)).holds


def majority(verdicts: Sequence[bool | None | Verdict]) -> Verdict:
    """Return the verdict of a claim about most models from each model's: holds when more
    than half hold, contradicted when at least half are contradicted, untestable when every
    model's is, else inconclusive (the reason counts them)."""
    vs = [v if isinstance(v, Verdict) else from_holds(v) for v in verdicts]
    if not vs:
        return Verdict("untestable", "no model to judge")
    n = len(vs)
    count = {k: sum(v.verdict == k for v in vs) for k in VERDICTS}
    tally = ", ".join(f"{c} {k}" for k, c in count.items() if c) + f" of {n} models"
    if count["holds"] * 2 > n:
        return Verdict("holds", tally)
    if count["contradicted"] * 2 >= n:
        return Verdict("contradicted", tally)
    if count["untestable"] == n:
        reasons = sorted({v.reason for v in vs})
        return Verdict("untestable", f"every model's is ({'; '.join(reasons)})")
    return Verdict("inconclusive", tally)


def combined_study(module: ModuleType, run: RunDir, each: list[Options], out: Path,
                   compare: Any = None) -> Study:
    """Return the study of one or several models (see the module docstring; `compare`: the
    paper's model comparisons, None where it has none); each finding names the models it
    was judged on."""
    firsts = _firsts(each)
    k = each[0].repeats
    extra: list[Item] = []
    rows = _model_conditions(run, module, each, out) if each[0].model is not None else {}
    if k > 1:
        extra.append(_repeats_item(repeated_trials(run, rows, k), k))
    if each[0].model is not None:
        extra.append(_cost_item(run, module, each, out))
    if len(firsts) == 1:
        study = module.study(run, firsts[0], out)
        for f in study.findings:
            f.models = [firsts[0].model] if firsts[0].model else []
        study.items += extra
        return study
    models = [str(o.model) for o in firsts]
    items: list[Item] = []
    if compare is not None:
        items += compare(run, firsts, out)
        for f in (f for item in items for f in item.findings):
            f.models = list(models)
    items.append(_paired_item(paired_models(run, rows,
                                            getattr(module, "ablation_of", None))))
    items += extra
    first = ""
    for o in firsts:
        study = module.study(run, o, out)
        first = first or study.preamble
        for item in study.items:
            item.ref = f"{item.ref} [{o.model}]"
            for f in item.findings:
                f.id, f.models = f"{f.id}@{o.model}", [str(o.model)]
        items += study.items
    names = ", ".join(f"`{m}`" for m in models)
    preamble = (f"Models: {names}. Every model plays the paper's model rows on the same "
                "instances and seeds; the rows no model plays (the reference agents) play "
                "once. The model comparisons come first; then each model's own study, its "
                f"items marked [model] and its finding ids id@model. {VERDICT_RULE}")
    return Study(module.PAPER, module.TITLE, preamble, items)


def majority_finding(fid: str, ref: str, claim: str, paper_value: Any,
                     per_model: dict[str, Any], verdicts: dict[str, bool | None | Verdict],
                     note: str = "") -> Finding:
    """Return a finding about most models: each model's value and verdict, judged by
    `majority`."""
    word = {m: (v if isinstance(v, Verdict) else from_holds(v)).verdict
            for m, v in verdicts.items()}
    shown = {m: f"{show(v)} ({word.get(m, 'left out')})" for m, v in per_model.items()}
    return Finding(fid, ref, claim, paper_value, shown, majority(list(verdicts.values())),
                   note or "per model: holds when its interval lies on the claimed side, "
                           "contradicted when it lies on the other; holds when most models "
                           "hold")


def _shared(first: Sequence[Trajectory], second: Sequence[Trajectory], fn
            ) -> tuple[list[Any], list[Any]]:
    """Return `fn` of the episodes both groups played (the same task and seed, where both
    have a value), as two aligned lists."""
    a = {(t.header.task_id, t.header.seed): fn(t) for t in first}
    b = {(t.header.task_id, t.header.seed): fn(t) for t in second}
    both = sorted(k for k in set(a) & set(b) if a[k] is not None and b[k] is not None)
    return [a[k] for k in both], [b[k] for k in both]


NO_PAIRS = {"delta": None, "lo": None, "hi": None, "n": 0, "p": None}


def paired_metric_by_task(first: Sequence[Trajectory], second: Sequence[Trajectory], fn
                          ) -> dict[str, Any]:
    """Return the paired difference of `fn(trajectory)` (None: not defined), first minus
    second, over the tasks (and seeds) both groups played with a value: bootstrap interval
    and Wilcoxon's p (delta None where they share none)."""
    from coordbench.analyses.paired import paired_metric

    x, y = _shared(first, second, fn)
    return paired_metric(x, y) if x else dict(NO_PAIRS)


def paired_by_task(first: Sequence[Trajectory], second: Sequence[Trajectory]
                   ) -> dict[str, Any]:
    """Return the paired success difference, first minus second, over the tasks (and seeds)
    both groups played: bootstrap interval and McNemar's exact p (delta None, n 0, where
    they share none)."""
    x, y = _shared(first, second, success)
    return paired_success(x, y) if x else dict(NO_PAIRS)


def order_breaks(models: Sequence[str], ability, outcome) -> bool | None:
    """Return whether a higher ability fails to carry over to the outcome for some pair of
    models, where `ability(a, b)` and `outcome(a, b)` are differences (a minus b): True when
    a model is decidedly above another in ability (interval above 0) and decidedly below it
    in the outcome (interval below 0); False when every decided pair keeps its order
    decidedly; None otherwise (no decided pair, or an order the runs cannot confirm)."""
    decided = kept = 0
    for a in models:
        for b in models:
            if a == b or direction(ability(a, b), +1) is not True:
                continue
            decided += 1
            if direction(outcome(a, b), -1) is True:
                return True
            kept += direction(outcome(a, b), +1) is True
    return None if decided == 0 or kept < decided else False
