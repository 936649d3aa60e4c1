"""Household engine speed: agent-actions per second, measured side by side in one run.

Usage:  python benchmarks/household_speed.py [--seconds 3]
Writes benchmarks/results/household_speed.json and benchmarks/results/household_speed.md.

- engine: `HouseholdEnv.step` replaying the joint actions a rule-based team chose on the v1
  suite (legality checks, conflicts, goal bookkeeping; no observation building);
- team loop: the whole rule-based episode loop (observations for every agent, broadcast
  protocol, minds, recording of typed trajectory events);
- oracle loop: the privileged oracle team's episode loop.
One agent-action = one agent's action in one team step. The pure-Python VirtualHome graph
executor manages about 60 steps/s (documented figure, not run here).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from coordbench.core.trajectory import HouseholdStepEvent
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.suites.mecobench.instances import load_suite
from coordbench.suites.mecobench.runner import HouseholdSpec, run_case


def _episodes(tasks, spec_for):
    out = []
    for k, task in enumerate(tasks):
        spec = spec_for(task)
        tr = run_case(task, spec, k, "bench")
        joint = [[Action(a.action if a.action != "none" else "wait", **a.args)
                  for a in e.actions] for e in tr.events if isinstance(e, HouseholdStepEvent)]
        out.append((task, spec, k, joint))
    return out


def _rate(fn, seconds: float) -> float:
    fn()
    done, start = 0, time.perf_counter()
    while (now := time.perf_counter()) - start < seconds:
        done += fn()
    return done / (now - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    tasks = load_suite("v1")
    rows = []
    for structure, n in (("parallel", 2), ("parallel", 4), ("sequential", 2)):
        cases = [t for t in tasks if t.structure == structure]

        def spec_for(task, n=n, structure=structure):
            return HouseholdSpec(structure, n, "broadcast")

        recorded = _episodes(cases, spec_for)

        def engine(recorded=recorded) -> int:
            actions = 0
            for task, spec, seed, joint in recorded:
                env = HouseholdEnv(task, spec.team, seed)
                for step in joint:
                    env.step(step)
                    actions += len(step)
            return actions

        def loop(agents: str, cases=cases, n=n, structure=structure) -> int:
            actions = 0
            for k, task in enumerate(cases):
                tr = run_case(task, HouseholdSpec(structure, n, "broadcast", agents), k, "b")
                actions += n * sum(isinstance(e, HouseholdStepEvent) for e in tr.events)
            return actions

        row = {"condition": f"{structure} n={n}",
               "engine_actions_per_s": _rate(engine, args.seconds),
               "rule_team_loop_actions_per_s": _rate(lambda: loop("rule"), args.seconds),
               "oracle_loop_actions_per_s": _rate(lambda: loop("oracle"), args.seconds)}
        rows.append(row)
        print(json.dumps({k: round(v) if isinstance(v, float) else v for k, v in row.items()}))
    meta = {"python": platform.python_version(), "seconds_per_figure": args.seconds,
            "date": time.strftime("%Y-%m-%d"), "virtualhome_executor_documented": 60}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "household_speed.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["# Household speed (agent-actions per second, one process, one core)", "",
             f"python {meta['python']}, {args.seconds:g} s per figure, {meta['date']}; the "
             "VirtualHome graph executor's ~60/s is a documented figure, not measured here.", "",
             "| condition | engine | rule team loop | oracle loop | engine / 60 |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['condition']} | {r['engine_actions_per_s']:,.0f} | "
                     f"{r['rule_team_loop_actions_per_s']:,.0f} | "
                     f"{r['oracle_loop_actions_per_s']:,.0f} | "
                     f"{r['engine_actions_per_s'] / 60:,.0f}x |")
    (args.out / "household_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'household_speed.md'}")


if __name__ == "__main__":
    main()
