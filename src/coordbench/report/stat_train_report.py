"""Training-result tables and learning curves (the paper's Tables 5-10 and its curves).

Inputs are the per-(method, config, seed) result files that `coordbench stat train` writes;
everything here is recomputed from them. Scripted allocators (random valid, greedy,
Hungarian) are evaluated on the same paper layouts (seed*1000 + i) for each training seed
present, so they enter the tables as reference rows with CIs over the same seeds.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.core.stats import (
    AGGREGATES,
    Estimate,
    estimate,
    mean_ci,
    stratified_bootstrap,
    welch_test,
)
from coordbench.errors import ConfigError, RunDirError
from coordbench.learn.result_file import parse_result
from coordbench.metrics.stat import SEED_KINDS

METHOD_ORDER = ("dqn", "fdqn", "vdn", "qmix", "qtran", "iql", "coma", "mappo", "ippo")
REFERENCES = ("random", "greedy", "hungarian")
REFERENCE_LABELS = {"random": "random valid", "greedy": "greedy", "hungarian": "Hungarian"}


@dataclass(frozen=True)
class TableSpec:
    """One paper-style table: which number, from which checkpoint, which direction is best."""

    name: str
    title: str
    metric: str  # key in a checkpoint's metrics
    at: str  # "final" (last checkpoint) or "max" (checkpoint of maximum return)
    better: str | None  # "high", "low", or None (no best marked)
    digits: int


TABLES = (
    TableSpec("final_return", "Final return (paper Table 5)", "return", "final", "high", 2),
    TableSpec("max_return", "Maximum return over training (paper Table 6)", "return", "max",
              "high", 2),
    TableSpec("conflict_rate", "Final conflict rate (paper Table 7)", "conflict_rate", "final",
              "low", 4),
    TableSpec("conflicts_per_task", "Final conflicts per task (paper Table 8)",
              "conflicts_per_task", "final", "low", 4),
    TableSpec("assignment_diversity_per_agent",
              "Final per-agent assignment diversity, sum D_t / sum decision-active agents "
              "before the step (paper Table 9, PyMARL convention)",
              "diversity_per_decision_agent", "final", None, 3),
    TableSpec("assignment_diversity_per_agent_post",
              "Final per-agent assignment diversity, sum D_t / sum decision-active agents "
              "after the step (paper Table 9, DQN/FDQN convention)",
              "diversity_per_decision_agent_post", "final", None, 3),
    TableSpec("throughput", "Final throughput, tasks completed per step (paper Table 10)",
              "throughput", "final", "high", 4),
)
# Beyond the paper: per seed, (final return - random valid) / (Hungarian - random valid) on that
# seed's layouts, in percent; only with reference rows.
GAP_TABLE = TableSpec("gap_closed", "Share of the gap from random valid play to the Hungarian "
                      "allocator closed by the final return, % (beyond the paper)", "return",
                      "final", "high", 1)


def load_results(dirs: list[Path]) -> list[dict[str, Any]]:
    """Return every training result file under `dirs` (one-line error if a dir has none)."""
    out = []
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise RunDirError(f"{d} is not a directory of training results")
        files = sorted(d.glob("*_seed*.json"))
        found = 0
        for f in files:
            try:
                res = parse_result(f.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise RunDirError(f"training result {f} is corrupt ({type(exc).__name__})") \
                    from None
            if isinstance(res, dict) and "curve" in res and "config" in res:
                out.append(res)
                found += 1
        if not found:
            raise RunDirError(f"{d} holds no training results (files <algo>_<config>_seed<N>.json)")
    return out


def group(results: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Return results grouped by (config, algo), seeds sorted."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    from coordbench.learn.core import method_label

    for r in results:
        tc = r["config"]
        groups.setdefault((tc["config"], method_label(tc["algo"], tc.get("extra"))),
                          []).append(r)
    for v in groups.values():
        v.sort(key=lambda r: r["config"]["seed"])
    return groups


def point(result: dict[str, Any], at: str) -> dict[str, float]:
    """Return the metrics of the final checkpoint, or of the maximum-return checkpoint."""
    if at == "final":
        return result["curve"][-1]
    return max(result["curve"], key=lambda c: c["return"])


def reference_samples(configs: dict[str, tuple[list[int], int]],
                      names: tuple[str, ...] = REFERENCES, num_bins: int | None = None
                      ) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Return per-seed metrics of the scripted allocators `names`: {(config, policy): [per
    seed]}.

    `configs` maps config -> (training seeds, evaluation episodes); each seed is evaluated on
    the paper layouts seed*1000 + i, i < episodes, like a learner's checkpoint. `num_bins`
    replaces the paper's distance bins (only the rules that read the observation notice).
    """
    import dataclasses

    from coordbench.agents.stat.scripted import get_policy
    from coordbench.envs.stat.config import get_config
    from coordbench.learn.core import evaluate_policy

    out: dict[tuple[str, str], list[dict[str, float]]] = {}
    for config, (seeds, episodes) in configs.items():
        cfg = get_config(config)
        if num_bins is not None:
            cfg = dataclasses.replace(cfg, num_bins=num_bins)
        for name in names:
            policy = get_policy(name)
            rows = []
            for s in seeds:
                rng = np.random.default_rng(s)
                rows.append(evaluate_policy(lambda env, p=policy, g=rng: p(env, g), cfg, s,
                                            episodes))
            out[(config, name)] = rows
    return out


@dataclass
class Cell:
    """One table cell: estimate over seeds, plus best / not-different-from-best marks."""

    est: Estimate
    samples: list[float]
    best: bool = False
    tied: bool = False  # not significantly different from the best (Welch, alpha 0.05)
    p: float | None = None
    peak_step: float | None = None


def build(results: list[dict[str, Any]], references: bool = True) -> dict[str, Any]:
    """Return {"configs", "methods", "references", "tables": {name: {(method, config): Cell}}}."""
    groups = group(results)
    configs = sorted({c for c, _ in groups}, key=_config_key)
    methods = [m for m in METHOD_ORDER if any(a == m for _, a in groups)]
    methods += sorted({a for _, a in groups} - set(methods))
    refs = {}
    spec: dict[str, tuple[list[int], int]] = {}
    if references:
        for c in configs:
            seeds = sorted({r["config"]["seed"] for (cc, _), rs in groups.items() if cc == c
                            for r in rs})
            episodes = min(r["config"]["eval_episodes"] for (cc, _), rs in groups.items()
                           if cc == c for r in rs)
            spec[c] = (seeds, episodes)
        refs = reference_samples(spec)
    tables: dict[str, dict[tuple[str, str], Cell]] = {}
    for t in TABLES:
        cells: dict[tuple[str, str], Cell] = {}
        for (config, algo), rs in groups.items():
            pts = [point(r, t.at) for r in rs]
            if any(t.metric not in p for p in pts):
                continue  # a result written before the metric was recorded
            vals = [float(p[t.metric]) for p in pts]
            cell = Cell(estimate(vals, SEED_KINDS.get(t.metric, "mean")), vals)
            if t.at == "max":
                cell.peak_step = float(np.median([p["step"] for p in pts]))
            cells[(algo, config)] = cell
        for (config, name), rows in refs.items():
            vals = [float(r[t.metric]) for r in rows]
            cells[(name, config)] = Cell(estimate(vals, SEED_KINDS.get(t.metric, "mean")),
                                         vals)
        tables[t.name] = cells
    if refs:
        tables[GAP_TABLE.name] = _gap_cells(groups, refs, {c: s for c, (s, _) in spec.items()})
    for t in (*TABLES, GAP_TABLE):
        if t.better and t.name in tables:
            for config in configs:
                _mark_best(tables[t.name], [m for m in methods if (m, config) in
                                            tables[t.name]], config, t.better)
    return {"configs": configs, "methods": methods,
            "references": [r for r in REFERENCES if references], "tables": tables,
            "reference_samples": refs}


def gap_closed(value: float, random: float, hungarian: float) -> float:
    """Return the share of the gap from random valid play to Hungarian that `value` closes
    (NaN when the two allocators score the same, so there is no gap to close)."""
    return (value - random) / (hungarian - random) if hungarian != random else math.nan


def _gap_cells(groups: dict[tuple[str, str], list[dict[str, Any]]],
               refs: dict[tuple[str, str], list[dict[str, float]]],
               seeds: dict[str, list[int]]) -> dict[tuple[str, str], Cell]:
    """Return the gap-closed cells (percent) of every method and reference allocator, each
    seed against the references evaluated on that seed's layouts (`seeds[config]` orders
    the reference rows)."""
    cells: dict[tuple[str, str], Cell] = {}
    for (config, algo), rs in groups.items():
        rand, hung = refs[(config, "random")], refs[(config, "hungarian")]
        vals = []
        for r in rs:
            k = seeds[config].index(r["config"]["seed"])
            vals.append(100 * gap_closed(point(r, "final")["return"], rand[k]["return"],
                                         hung[k]["return"]))
        cells[(algo, config)] = Cell(mean_ci(vals), vals)
    for (config, name), rows in refs.items():
        vals = [100 * gap_closed(row["return"], a["return"], h["return"]) for row, a, h in
                zip(rows, refs[(config, "random")], refs[(config, "hungarian")], strict=True)]
        cells[(name, config)] = Cell(mean_ci(vals), vals)
    return cells


def aggregates(built: dict[str, Any]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Return {method: {aggregate: (value, lo, hi)}} over configurations, rliable-style: each
    run's final return normalized as the share of the random-to-Hungarian gap it closes
    (0 = random valid play, 1 = Hungarian), IQM, median, mean and optimality gap with
    stratified-bootstrap 95% intervals. Only methods with the same number of seeds on every
    configuration (a runs x tasks matrix) and at least 2 configurations are aggregated."""
    if "aggregates" in built:  # bootstrapping is the slow part of a report: once per build
        return built["aggregates"]
    cells = built["tables"].get(GAP_TABLE.name)
    configs = built["configs"]
    if not cells or len(configs) < 2:
        built["aggregates"] = {}
        return {}
    out = {}
    for m in built["methods"]:
        cols = [cells.get((m, c)) for c in configs]
        if any(c is None for c in cols) or len({len(c.samples) for c in cols}) != 1:
            continue
        matrix = np.array([c.samples for c in cols], dtype=float).T / 100.0
        if np.isnan(matrix).any():
            continue
        out[m] = {name: stratified_bootstrap(matrix, fn) for name, fn in AGGREGATES.items()}
    built["aggregates"] = out
    return out


def aggregate_markdown(built: dict[str, Any]) -> str:
    """Return the rliable-style aggregate table (empty when nothing can be aggregated)."""
    agg = aggregates(built)
    if not agg:
        return ""
    names = list(AGGREGATES)
    lines = ["### Aggregate over configurations (normalized: 0 = random valid play, "
             "1 = Hungarian)", "",
             "Interquartile mean, median, mean and optimality gap of every run's normalized "
             "final return, with 95% stratified-bootstrap intervals (Agarwal et al., 2021; "
             f"{len(built['configs'])} configurations).", "",
             "| method | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for m, row in agg.items():
        lines.append(f"| {m.upper()} | " + " | ".join(
            f"{v:.3f} [{lo:.3f}, {hi:.3f}]" for v, lo, hi in (row[n] for n in names)) + " |")
    return "\n".join(lines) + "\n"


def _mark_best(cells: dict[tuple[str, str], Cell], methods: list[str], config: str,
               better: str) -> None:
    """Bold the best learned method; dagger the ones Welch's test cannot tell from it."""
    usable = [m for m in methods if not math.isnan(cells[(m, config)].est.mean)]
    if not usable:
        return
    sign = 1 if better == "high" else -1
    best = max(usable, key=lambda m: sign * cells[(m, config)].est.mean)
    cells[(best, config)].best = True
    for m in usable:
        if m == best:
            continue
        a, b = cells[(m, config)].samples, cells[(best, config)].samples
        if len(a) < 2 or len(b) < 2:
            continue
        w = welch_test(a, b)
        cells[(m, config)].p = w.p
        cells[(m, config)].tied = not w.significant(0.05)


def _config_key(name: str) -> tuple:
    from coordbench.envs.stat.config import CONFIGS

    order = list(CONFIGS)
    return (order.index(name) if name in order else len(order), name)


def _fmt(cell: Cell | None, digits: int, peak: bool = False) -> str:
    if cell is None:
        return "–"
    text = cell.est.fmt(digits)
    if cell.best:
        text = f"**{text}**"
    if cell.tied:
        text += "†"
    if peak and cell.peak_step is not None:
        text += f" @{_steps(cell.peak_step)}"
    return text


def _steps(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k"


def markdown(built: dict[str, Any]) -> str:
    """Return every table as markdown: rows = methods then reference allocators."""
    lines = ["Mean ± 95% CI over training seeds (n per cell in the CSV). **Bold**: best learned "
             "method; †: not significantly different from it (Welch's t-test, alpha 0.05). "
             "Reference rows: scripted allocators on the same evaluation layouts.", ""]
    configs = built["configs"]
    for t in _tables(built):
        cells = built["tables"][t.name]
        lines += [f"### {t.title}", "", "| method | " + " | ".join(configs) + " |",
                  "|---" * (len(configs) + 1) + "|"]
        for m in built["methods"]:
            lines.append(f"| {m.upper()} | " + " | ".join(
                _fmt(cells.get((m, c)), t.digits, peak=t.at == "max") for c in configs) + " |")
        for r in built["references"]:
            lines.append(f"| *{REFERENCE_LABELS[r]}* | " + " | ".join(
                _fmt(cells.get((r, c)), t.digits) for c in configs) + " |")
        lines.append("")
    agg = aggregate_markdown(built)
    if agg:
        lines += [agg]
    return "\n".join(lines)


def csv_text(built: dict[str, Any]) -> str:
    """Return every cell as one CSV row (long format)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["table", "config", "method", "kind", "mean", "ci95", "n", "best",
                "not_different_from_best", "welch_p", "peak_step"])
    for t in _tables(built):
        cells = built["tables"][t.name]
        for c in built["configs"]:
            for m in built["methods"] + built["references"]:
                cell = cells.get((m, c))
                if cell is None:
                    continue
                w.writerow([t.name, c, m, "reference" if m in REFERENCES else "learned",
                            _num(cell.est.mean), _num(cell.est.ci95), cell.est.n,
                            int(cell.best), int(cell.tied), _num(cell.p),
                            _num(cell.peak_step)])
    return buf.getvalue()


def _tables(built: dict[str, Any]) -> list[TableSpec]:
    """Return the specs of the tables `built` holds, in print order."""
    return [t for t in (*TABLES, GAP_TABLE) if t.name in built["tables"]]


def _num(x: float | None) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"


CURVE_METRICS = (("return", "return"), ("conflict_rate", "conflict rate"),
                 ("diversity_per_decision_agent", "per-agent assignment diversity"))


# conflict rate and diversity cannot be negative: their bands are clipped at 0
_CURVE_FLOOR = {"conflict_rate": 0.0, "diversity_per_decision_agent": 0.0}


def curve_figures(results: list[dict[str, Any]],
                  references: dict[tuple[str, str], list[dict[str, float]]] | None = None
                  ) -> list[tuple[str, Any]]:
    """Return (config, matplotlib figure) per config: return, conflict rate and per-agent
    diversity vs steps, mean and 95% CI band over seeds, scripted allocators dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = group(results)
    figures = []
    for config in sorted({c for c, _ in groups}, key=_config_key):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for algo in [m for m in METHOD_ORDER if (config, m) in groups] + sorted(
                a for c, a in groups if c == config and a not in METHOD_ORDER):
            rs = groups[(config, algo)]
            steps = [c["step"] for c in rs[0]["curve"]]
            k = min(len(r["curve"]) for r in rs)
            for ax, (key, label) in zip(axes, CURVE_METRICS, strict=True):
                ys = np.array([[c[key] for c in r["curve"][:k]] for r in rs], dtype=float)
                ests = [mean_ci(ys[:, j]) for j in range(k)]
                mean = np.array([e.mean for e in ests])
                half = np.array([e.ci95 or 0.0 for e in ests])
                lo = np.maximum(mean - half, _CURVE_FLOOR.get(key, -np.inf))
                ax.plot(steps[:k], mean, label=algo.upper())
                ax.fill_between(steps[:k], lo, mean + half, alpha=0.2)
                ax.set_title(f"{config}: {label}")
                ax.set_xlabel("environment steps")
        for name, style in zip(REFERENCES, (":", "--", "-."), strict=True):
            rows = (references or {}).get((config, name))
            if rows:
                for ax, (key, _) in zip(axes, CURVE_METRICS, strict=True):
                    ax.axhline(float(np.mean([r[key] for r in rows])), color="gray",
                               linestyle=style, label=REFERENCE_LABELS[name])
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        figures.append((config, fig))
    return figures


def plot_curves(results: list[dict[str, Any]], out_dir: Path,
                references: dict[tuple[str, str], list[dict[str, float]]] | None = None
                ) -> list[Path]:
    """Write `curve_figures` as one PNG per config (curves_<config>.png); return the paths."""
    import matplotlib.pyplot as plt

    from coordbench.core.atomic import write_atomic_bytes

    paths = []
    for config, fig in curve_figures(results, references):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        plt.close(fig)
        path = Path(out_dir) / f"curves_{config}.png"
        write_atomic_bytes(path, buf.getvalue())
        paths.append(path)
    return paths


FORMATS = ("md", "csv", "marl-eval")


def check_format(fmt: str) -> str:
    """Return `fmt` if it is a known table format, else raise ConfigError."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be md or csv (tables) or marl-eval (the runs' "
                          f"curves as marl-eval's JSON), got {fmt!r}")
    return fmt


MARL_EVAL_ENV = "stat"  # marl-eval's environment name for every STAT run


def marl_eval(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Return training results in the raw JSON form instadeepai's marl-eval reads
    (`data_process_pipeline`, `DiagnoseData`): {"stat": {config: {method: {"seed_<N>":
    {"step_<i>": {"step_count": environment steps, metric: [value]}, ...,
    "absolute_metrics": {metric: [value]}}}}}}, one "step_<i>" per evaluation of the
    curve, in order.

    Each value is the evaluation's mean over its greedy episodes (a one-element list, as
    marl-eval takes for a metric computed over several episodes): "return" (mean episode
    return) and every other curve metric that is a finite number at every evaluation of
    every run (marl-eval needs the same metrics everywhere). `absolute_metrics` holds the
    final evaluation's values: coordbench does not re-evaluate the best policy on ten times
    the episodes as marl-eval's protocol suggests. ConfigError where a (config, method,
    seed) appears twice."""
    rows = [row for r in results for row in r["curve"]]
    metrics = [k for k in rows[0] if k != "step" and all(
        isinstance(row.get(k), int | float) and math.isfinite(row[k]) for row in rows)]
    if "return" in metrics:  # the headline metric first
        metrics.remove("return")
        metrics.insert(0, "return")
    out: dict[str, Any] = {}
    for (config, method), runs in sorted(group(results).items()):
        algos = out.setdefault(MARL_EVAL_ENV, {}).setdefault(config, {})
        seeds: dict[str, Any] = algos.setdefault(method, {})
        for r in runs:
            name = f"seed_{r['config']['seed']}"
            if name in seeds:
                raise ConfigError(f"{method} on {config} {name} appears in two training "
                                  "directories; give each run once")
            run = {f"step_{i}": {"step_count": int(row["step"]),
                                 **{m: [float(row[m])] for m in metrics}}
                   for i, row in enumerate(r["curve"])}
            run["absolute_metrics"] = {m: [float(r["curve"][-1][m])] for m in metrics}
            seeds[name] = run
    return out


def marl_eval_text(results: list[dict[str, Any]]) -> str:
    """Return `marl_eval(results)` as the JSON text of marl-eval's input file."""
    return json.dumps(marl_eval(results), indent=1, allow_nan=False) + "\n"


def adopt(path: Path):
    """Give a training directory written without a manifest one; return it as a run."""
    from coordbench.core.rundir import RunDir

    run = RunDir.create_or_open(path, command="coordbench report", adopt=True)
    from coordbench.learn.sweep import register_training

    for config, algo in group(load_results([path])):
        register_training(run, algo, config)
    return run


def section(run, conditions: list[str]):
    """Return the training section of a run report: the paper's tables over the sweep's
    result files, and final/maximum return per (method, configuration)."""
    from coordbench.learn.sweep import train_condition

    from .format import estimate_json
    from .section import Section

    if not conditions:
        return Section("STAT training")
    results = load_results([run.path])
    built = build(results, references=True)
    out = {}
    for (config, algo), rs in group(results).items():
        cond = train_condition(algo, config)
        spec = run.conditions.get(cond, {"suite": "stat_train", "algo": algo,
                                         "config": config})
        out[cond] = {"suite": "stat_train", "spec": spec, "metrics": {
            "final_return": estimate_json(mean_ci([r["final_return"] for r in rs])),
            "max_return": estimate_json(mean_ci([r["max_return"] for r in rs]))}}
    text = "## STAT training\n\n" + markdown(built)
    return Section("STAT training", text, [], out,
                   data={"results": results, "references": built["reference_samples"],
                         "built": built})


def seed_samples(built: dict[str, Any], results: list[dict[str, Any]]
                 ) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Return per-seed final metrics by (method, config): each learned run's final
    evaluation (seeds in order) and each scripted allocator evaluated on those seeds'
    layouts (the reference rows of `build`), plus the run's `wall_s`, `steps_per_s` and
    `acting_steps_per_s` for the learned runs."""
    out: dict[tuple[str, str], list[dict[str, float]]] = {}
    for (config, algo), rs in group(results).items():
        out[(algo, config)] = [{**point(r, "final"), **{k: r[k] for k in (
            "wall_s", "steps_per_s", "acting_steps_per_s") if r.get(k) is not None}}
            for r in rs]
    for (config, name), rows in built.get("reference_samples", {}).items():
        out[(name, config)] = list(rows)
    return out


def scaling_markdown(sc: dict[str, Any], methods: list[str], paper: Any = None,
                     metrics: list[str] | None = None) -> str:
    """Return the Table 14 form of `analyses.stat.scaling` output: a row per method x
    comparison, a column per metric, cells like "↓*" or "↑ns" ("–": not run); with `paper`
    ((metric, pair id, method) -> cell), each cell is "ours / paper's"; then a line per
    comparison whose configurations are missing, naming the runs to add."""
    from coordbench.analyses.stat import SCALING_PAIRS, TABLE14_METRICS

    names = metrics or list(TABLE14_METRICS)
    head = "| method | comparison | " + " | ".join(names) + " |"
    lines = [head, "|---" * (len(names) + 2) + "|"]
    for m in methods:
        for p in SCALING_PAIRS:
            row = sc["rows"][p.id].get(m, {})
            cells = []
            for name in names:
                ours = (row.get(name) or {}).get("cell", "–")
                cells.append(f"{ours} / {paper(name, p.id, m)}" if paper else ours)
            label = m.upper() if m not in REFERENCES else f"*{REFERENCE_LABELS[m]}*"
            lines.append(f"| {label} | {p.label} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    for p in SCALING_PAIRS:
        if p.id in sc["missing"]:
            text += (f"\n{p.label} ({p.first} -> {p.second}): no runs on "
                     f"{' and '.join(sc['missing'][p.id])}; add them to compare.\n")
    return text


def scaling_csv(sc: dict[str, Any]) -> str:
    """Return every scaling change as one CSV row (long format): comparison, method,
    metric, cell, delta, lo, hi, p, n (seeds on the second configuration), n_ref (first)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["comparison", "method", "metric", "cell", "delta", "lo", "hi", "p", "n",
                "n_ref"])
    for pair_id in sc["pairs"]:
        for method, row in sc["rows"][pair_id].items():
            for metric, d in row.items():
                if d is None:
                    continue
                w.writerow([pair_id, method, metric, d["cell"], *(_num(d.get(k)) for k in (
                    "delta", "lo", "hi", "p")), d["n"], d["n_ref"]])
    return buf.getvalue()
