"""How much of the gap from random valid play to the per-step Hungarian allocator a learned
method closes on the Extreme configs (the paper's best closes 1-7%).

Usage:
  python benchmarks/stat_extreme_gap.py --run [--config 5A-25T-50x30] [--algo vdn]
      [--arch pair|pair-seq|mlp] [--anneal-lr] [--steps 600000] [--seeds 0-4] [--utd 4]
  python benchmarks/stat_extreme_gap.py --dirs runs/extreme

`--run` trains the missing seeds into runs/extreme (resumable). The table evaluates random
valid play, greedy and Hungarian on exactly the layouts each learner was evaluated on (its
seed's 20 paper layouts), and reports per method and config: final and maximum return, and
gap closed = (learned - random) / (Hungarian - random), per seed, then mean +- 95% CI.
Writes benchmarks/results/stat_extreme_gap.md.

Result files are named by method, config and seed, not length, so runs of another length go in
their own directory: the 1.2M-step rows come from
`--run --config 5A-50T-50x30 --steps 1200000 --dirs runs/extreme_long`, the 150k- and
300k-step MAPPO rows from `--run --algo mappo --arch pair|pair-seq --anneal-lr --steps N
--dirs runs/extremeN` (N = 150000 / 300000 into runs/extreme150 / runs/extreme300). Rows
labelled +binsK saw K distance bins instead of the paper's 5 (`--num-bins K`, into
runs/extreme300_bins K): a richer observation, beside the paper's, never in its place.
Rows labelled +mem read the paper's observation plus the observation memory: `--run --algo
mappo --arch pair-seq --memory --anneal-lr --lr 3e-4 --steps 300000 --dirs runs/extreme_lr`
(filed as +lr0.0003; without --memory into runs/extreme_lr_nomem for the control).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import mean_ci
from coordbench.errors import ConfigError
from coordbench.learn.methods import paper_config, train_configs
from coordbench.report.stat_train_report import (
    gap_closed,
    group,
    load_results,
    point,
    reference_samples,
)

# the paper's best learned final return and the gap it closes (research notes, section 6)
PAPER_BEST = {"5A-25T-25x15": (1266.00, "VDN", 0.06), "5A-25T-50x30": (866.90, "VDN", 0.07),
              "5A-50T-50x30": (2697.84, "FDQN", 0.02), "5A-100T-50x30": (6144.00, "QTRAN", 0.01),
              "9A-25T-50x30": (909.51, "FDQN", 0.03)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--config", default="5A-25T-50x30")
    ap.add_argument("--algo", default="vdn")
    ap.add_argument("--arch", default="pair")
    ap.add_argument("--steps", type=int, default=600_000)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--utd", type=float, default=4.0)
    ap.add_argument("--dirs", nargs="*", type=Path, default=[Path("runs/extreme")])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--anneal-lr", action="store_true",
                    help="MAPPO/IPPO: decay the learning rate linearly to 0 (filed as +lr-anneal)")
    ap.add_argument("--num-bins", type=int, default=None,
                    help="distance bins of the observation instead of the paper's 5: a richer, "
                         "labelled observation (filed as METHOD+binsK)")
    ap.add_argument("--lr", type=float, default=None,
                    help="learning rate instead of the method's default (filed as +lrX)")
    ap.add_argument("--memory", action="store_true",
                    help="MAPPO/IPPO pair networks: the observation memory (filed as METHOD+mem)")
    args = ap.parse_args()
    if args.run:
        from coordbench.learn.sweep import parse_seeds, sweep

        try:  # the checks and settings of `stat train`
            tcs = train_configs(args.config, args.algo, parse_seeds(args.seeds),
                                steps=args.steps, utd=args.utd, eval_every=50_000,
                                arch=args.arch, lr=args.lr, num_bins=args.num_bins,
                                memory=args.memory)
        except ConfigError as exc:
            ap.error(str(exc))
        for tc in tcs:
            if args.anneal_lr:
                tc.extra = {**tc.extra, "anneal_lr": True}
        sweep(tcs, args.dirs[0], workers=args.workers)
    groups = group(load_results([d for d in args.dirs if d.exists()])) if any(
        d.exists() for d in args.dirs) else {}
    spec = {}
    for (config, _), rs in groups.items():
        seeds, eps = spec.get(config, (set(), 20))
        spec[config] = (seeds | {r["config"]["seed"] for r in rs},
                        min(eps, *(r["config"]["eval_episodes"] for r in rs)))
    refs = reference_samples({c: (sorted(s), e) for c, (s, e) in spec.items()})
    results = Path(__file__).parent / "results"
    ledger_path = results / "stat_extreme_gap.json"
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else {}
    for (config, method), rs in groups.items():
        seed_idx = {s: k for k, s in enumerate(sorted(spec[config][0]))}
        for r in rs:
            k = seed_idx[r["config"]["seed"]]
            label = method + ("+lr-anneal" if r["config"]["extra"].get("anneal_lr") else "")
            default_lr = paper_config(config, r["config"]["algo"]).lr
            if r["config"]["lr"] != default_lr:
                label += f"+lr{r['config']['lr']:g}"
            key = f"{config} {label} {r['config']['total_steps']}"
            ledger.setdefault(key, {}).pop("summary", None)
            ledger[key].setdefault("seeds", {})[str(r["config"]["seed"])] = {
                "final": point(r, "final")["return"], "max": point(r, "max")["return"],
                "random": refs[(config, "random")][k]["return"],
                "hungarian": refs[(config, "hungarian")][k]["return"]}
    add_obs_rules(ledger)
    write_atomic(ledger_path, json.dumps(ledger, indent=1) + "\n")
    text = render(ledger)
    write_atomic(results / "stat_extreme_gap.md", text)
    print(text)


# the scripted allocators that read only the paper's observation (agents/stat/scripted.py),
# the last two with a memory of it (envs/stat/memory.py)
OBS_RULES = ("greedy_obs", "hungarian_obs", "nearest_obs", "greedy_mem", "nearest_mem")


def add_obs_rules(ledger: dict) -> None:
    """Give every per-seed ledger entry the returns of the observation allocators
    (`OBS_RULES`) on that seed's 20 paper layouts, where they are missing."""
    for name in OBS_RULES:
        todo: dict[str, set[int]] = {}
        for key, row in ledger.items():
            for seed, v in row.get("seeds", {}).items():
                if name not in v:
                    todo.setdefault(key.split()[0], set()).add(int(seed))
        if not todo:
            continue
        refs = reference_samples({c: (sorted(s), 20) for c, s in todo.items()}, (name,))
        for key, row in ledger.items():
            config = key.split()[0]
            for seed, v in row.get("seeds", {}).items():
                if name not in v:
                    k = sorted(todo[config]).index(int(seed))
                    v[name] = refs[(config, name)][k]["return"]


def render(ledger: dict) -> str:
    """Return the markdown table of every ledger row: "config method steps" -> per-seed
    final, max, random and Hungarian returns (or a summary kept from before the ledger)."""
    lines = ["# Extreme regime: share of the random -> Hungarian gap closed", "",
             "`python benchmarks/stat_extreme_gap.py --run --config C "
             "[--arch pair|pair-seq|mlp] --seeds 0-4` trains into runs/extreme; every run "
             "found there is merged into "
             "the per-seed ledger stat_extreme_gap.json, and this table is rendered from it. "
             "Per seed, on that seed's 20 paper evaluation layouts: gap closed = (learned - "
             "random valid) / (Hungarian - random valid); mean ± 95% CI over seeds (n). "
             "Steps = environment steps trained (the paper trains 20M). The last five "
             "columns are scripted allocators reading only the paper's observation (distance "
             "bins), on the same layouts: what a rule closes with what the learners "
             "see. greedy_obs: agents in index order take their lowest-bin task not claimed "
             "this step; hungarian_obs: the assignment with the fewest bins in total; "
             "nearest_obs: each agent its own lowest-bin task, without the others' picks "
             "(decentralized, as the learners' policies act); greedy_mem and nearest_mem: "
             "greedy_obs and nearest_obs with a memory of the observation, ordering a bin's "
             "tasks by how many remembered rows (each executed task's own bins) disagree with "
             "the agent's own bins. A method labelled +binsK "
             "trained and was evaluated on K distance bins, a richer observation than the "
             "paper's 5 (`--num-bins K`); its rule columns are still the rules on the "
             "paper's bins (the rules on K bins: stat_obs_bins.md). A method labelled +mem "
             "read the paper's observation and that memory's features (`--memory`).", "",
             "| config | method | steps | n | final return | max return | gap closed (final) "
             "| gap closed (max) | per seed (final %, by seed) | random valid | Hungarian | "
             "paper's best (gap closed) | "
             + " | ".join(f"{r} (gap closed)" for r in OBS_RULES) + " |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(OBS_RULES)]
    order = list(PAPER_BEST)  # the paper's Table 1 order
    for key in sorted(ledger, key=lambda k: (order.index(k.split()[0]) if k.split()[0] in order
                                             else len(order), k)):
        config, method, steps = key.split()
        best = PAPER_BEST.get(config)
        paper = f"{best[1]} {best[0]:.1f} ({best[2]:.0%})" if best else "–"
        row = ledger[key]
        if "seeds" in row:
            v = [row["seeds"][k] for k in sorted(row["seeds"], key=int)]
            fin, mx = [x["final"] for x in v], [x["max"] for x in v]
            rand, hung = [x["random"] for x in v], [x["hungarian"] for x in v]
            gap_f = [gap_closed(f, a, h) for f, a, h in zip(fin, rand, hung, strict=True)]
            gap_m = [gap_closed(m, a, h) for m, a, h in zip(mx, rand, hung, strict=True)]
            per_seed = " ".join(f"{100 * g:.0f}" for g in gap_f)
            cells = [str(len(v)), mean_ci(fin).fmt(1), mean_ci(mx).fmt(1), _pct(gap_f),
                     _pct(gap_m), per_seed, f"{np.mean(rand):.1f}", f"{np.mean(hung):.1f}",
                     paper]
            for name in OBS_RULES:
                if all(name in x for x in v):
                    obs = [x[name] for x in v]
                    gap_o = [gap_closed(o, a, h) for o, a, h in zip(obs, rand, hung, strict=True)]
                    cells.append(f"{np.mean(obs):.1f} ({_pct(gap_o)})")
                else:
                    cells.append("–")
        else:  # measured before the ledger existed: only the summary row was kept
            summary = row["summary"]
            cells = [*summary[:5], "–", *summary[5:], paper, *["–"] * len(OBS_RULES)]
        lines.append(f"| {config} | {method} | {int(steps) / 1e6:g}M | " +
                     " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _pct(values: list[float]) -> str:
    e = mean_ci(values)
    return f"{100 * e.mean:.0f}%" + (f" ± {100 * e.ci95:.0f}" if e.ci95 is not None else "")


if __name__ == "__main__":
    main()
