"""Learned construct teams beside the rule, oracle and protocol teams on the same instances.

Usage:  python benchmarks/construct_learning.py [--steps 40000] [--team 2] [--seeds 0]
Writes benchmarks/results/construct_learning.json and benchmarks/results/construct_learning.md.

For each construct (D1-D4) at one team size, a team is trained with menu PPO
(`coordbench constructs train`: the construct's instances of the full set outside rep240) and
then played, greedily, on the held-out rep240 instances by the construct suite's own episode
runner, beside rule planners (central, decentralized, decentralized under broadcast) and the
oracle on the same instances: success (Wilson interval), construct score, legality, the
profile's redundancy, and the training time on this machine.

`--household` adds the same learner on household tasks (v1 parallel, teams of 2: every
fourth task held out for testing, the rest for training), tested greedily in the
PettingZoo environment beside the household rule teams (without and with broadcast) on the
held-out tasks: success and completion.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from coordbench.core.stats import estimate
from coordbench.metrics.constructs import episode_metrics
from coordbench.metrics.profile import episode_profile
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import select
from coordbench.suites.constructs.learning import checkpoint_path, train_team

TEAMS = {"oracle": ConstructSpec("decentralized", "oracle"),
         "rule central": ConstructSpec("central", "rule"),
         "rule decentralized": ConstructSpec("decentralized", "rule"),
         "rule, broadcast": ConstructSpec("decentralized", "rule", protocol="broadcast")}


def _row(trajs) -> dict:
    m = [episode_metrics(t) for t in trajs]
    p = [episode_profile(t) for t in trajs]
    out = {"SR": estimate([r["SR"] for r in m], "binary").as_dict(),
           "CS": estimate([r["CS"] for r in m if r["CS"] is not None], "unit").as_dict(),
           "legal": estimate([r["legal_rate"] for r in m if r["legal_rate"] is not None],
                             "binary").as_dict(),
           "redundancy": estimate([r["redundancy"] for r in p if r["redundancy"] is not None],
                                  "nonneg").as_dict()}
    return out


def household_rows(steps: int, seeds: list[int]) -> list[dict]:
    """Return the learned household team's rows (one per seed) and the rule teams' on the
    same held-out tasks."""
    from coordbench.core.trajectory import HouseholdStepEvent
    from coordbench.learn import menu_ppo
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
    from coordbench.suites.mecobench.instances import load_suite

    tasks = [t for t in load_suite("v1") if t.structure == "parallel"]
    train = [(t, None) for k, t in enumerate(tasks) if k % 4]
    test = [(t, None) for k, t in enumerate(tasks) if not k % 4]
    rows = []
    for seed in seeds:
        cfg = menu_ppo.MenuPPOConfig(steps=steps, seed=seed, eval_every=steps)
        net, res = menu_ppo.train(cfg, train, test, 2, "paper", True)
        ok, comp = menu_ppo.evaluate_each(net, test, 2, "paper", True, seed)
        rows.append({"team": f"learned (seed {seed})", "train_s": res["wall_s"],
                     "success": estimate(ok, "binary").as_dict(),
                     "completion": estimate(comp, "unit").as_dict()})
        print(json.dumps({"household": seed, "success": rows[-1]["success"]["mean"],
                          "completion": rows[-1]["completion"]["mean"]}))
    for protocol in ("none", "broadcast"):
        trajs = [run_case(t, HouseholdSpec("parallel", 2, protocol), k, f"b/{k}")
                 for k, (t, _) in enumerate(test)]
        comp = [(t.steps(HouseholdStepEvent) or [None])[-1] for t in trajs]
        rows.append({"team": f"rule, {protocol}", "train_s": None,
                     "success": estimate([float(t.end.success) for t in trajs],
                                         "binary").as_dict(),
                     "completion": estimate([c.completion if c else 0.0 for c in comp],
                                            "unit").as_dict()})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40_000)
    ap.add_argument("--team", type=int, default=2)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--models", type=Path, default=Path("runs") / "construct-learning")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--household", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for construct in ("D1", "D2", "D3", "D4"):
        raws = select("rep240", construct, args.team)
        for seed in seeds:
            path = checkpoint_path(args.models, construct, args.team, seed)
            meta = path.with_suffix(".json")
            if not path.is_file() or json.loads(meta.read_text())["config"]["steps"] != args.steps:
                train_team(construct, args.team, args.models, args.steps, seed)
            res = json.loads(meta.read_text())
            spec = ConstructSpec("decentralized", "learned", checkpoint=str(path))
            trajs = [run_construct(raw, spec, f"b/{k}") for k, raw in enumerate(raws)]
            rows.append({"construct": construct, "team": f"learned (seed {seed})",
                         "train_s": res["train_s"], **_row(trajs)})
            print(json.dumps({"construct": construct, "seed": seed,
                              "SR": rows[-1]["SR"]["mean"], "train_s": round(res["train_s"])}))
        for name, spec in TEAMS.items():
            trajs = [run_construct(raw, spec, f"b/{k}") for k, raw in enumerate(raws)]
            rows.append({"construct": construct, "team": name, "train_s": None, **_row(trajs)})
    house = household_rows(args.steps, seeds) if args.household else []
    meta = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
            "steps": args.steps, "team": args.team, "seeds": seeds,
            "instances": len(select("rep240", "D1", args.team))}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "construct_learning.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "household": house}, indent=1) + "\n")

    def pct(d):
        return f"{d['mean']:.0%} [{d['lo']:.0%}, {d['hi']:.0%}]" if d["n"] else "n/a"

    def num(d):
        return f"{d['mean']:.3f}" if d["n"] else "n/a"

    lines = ["# Learned construct teams beside rule and oracle teams", "",
             f"{meta['date']}, python {meta['python']}; teams of {args.team}; menu PPO "
             f"{args.steps:,} team steps per construct on the full set's instances outside "
             f"rep240, tested on rep240's {meta['instances']} per construct (held out), "
             "played by the construct suite's runner.", "",
             "| construct | team | SR | CS | legal | redundancy | training |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        t = f"{r['train_s']:.0f} s" if r["train_s"] is not None else "-"
        lines.append(f"| {r['construct']} | {r['team']} | {pct(r['SR'])} | {num(r['CS'])} | "
                     f"{pct(r['legal'])} | {num(r['redundancy'])} | {t} |")
    if house:
        lines += ["", "## Household tasks (v1 parallel, teams of 2, 24 held-out tasks)", "",
                  "| team | success | completion | training |", "|---|---|---|---|"]
        for r in house:
            t = f"{r['train_s']:.0f} s" if r["train_s"] is not None else "-"
            lines.append(f"| {r['team']} | {pct(r['success'])} | "
                         f"{r['completion']['mean']:.3f} | {t} |")
    (args.out / "construct_learning.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'construct_learning.md'}")


if __name__ == "__main__":
    main()
