"""Learned construct teams beside the rule, oracle and protocol teams on the same instances.

Usage:  python benchmarks/construct_learning.py [--steps 40000] [--team 2] [--seeds 0]
Writes benchmarks/results/construct_learning.json and benchmarks/results/construct_learning.md.

For each construct (D1-D4) at one team size, a team is trained with menu PPO
(`coordbench constructs train`: the construct's instances of the full set outside rep240) and
then played, greedily, on the held-out rep240 instances by the construct suite's own episode
runner, beside rule planners (central, decentralized, decentralized under broadcast) and the
oracle on the same instances: success (Wilson interval), construct score, legality, the
profile's redundancy, and the training time on this machine.
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
from coordbench.suites.constructs.instances import select
from coordbench.suites.constructs.learning import checkpoint_path, train_team
from coordbench.suites.constructs.runner import ConstructSpec, run_construct

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40_000)
    ap.add_argument("--team", type=int, default=2)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--models", type=Path, default=Path("runs") / "construct-learning")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
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
    meta = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
            "steps": args.steps, "team": args.team, "seeds": seeds,
            "instances": len(select("rep240", "D1", args.team))}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "construct_learning.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")

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
    (args.out / "construct_learning.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'construct_learning.md'}")


if __name__ == "__main__":
    main()
