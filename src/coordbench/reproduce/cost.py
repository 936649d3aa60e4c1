"""A model study's cost, before and after: planned episodes and calls, a token and cost
estimate from a short pilot, and what each model spent.

Before a study with models plays, `estimate` counts each model's episodes still to play and
prices them at the mean calls, tokens and cost per episode of that model's episodes already
in the run; a model with none plays one episode of its first row first (the pilot: a real
episode of the study, kept). The cost is what the registry's prices make of the tokens
(`prices` of a model's entry; none given: $0, said so). After, `spent` reads every model's
tokens and cost from its saved episodes, and the wall time each model's rows took from
`reproduce-wall.json` (seconds, added up over the commands that played them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import ModelCallEvent
from coordbench.runner.conditions import call_stats

WALL_FILE = "reproduce-wall.json"
ESTIMATE_SAMPLE = 20  # episodes per row the estimate reads (a resumed study has thousands)


@dataclass
class ModelPlan:
    """One model's rows: the plan items only it plays, and what is left of them."""

    model: str
    items: list[tuple]
    total: int = 0  # planned episodes
    left: int = 0  # not yet on disk

    def as_json(self) -> dict[str, Any]:
        """Return the counts as JSON."""
        return {"model": self.model, "episodes": self.total, "left": self.left}


def count(run: RunDir, plan: ModelPlan) -> ModelPlan:
    """Return `plan` with its planned and missing episodes counted."""
    plan.total = plan.left = 0
    for item in plan.items:
        suite, spec = item[0], item[1]
        cases = suite.cases(spec, item[2] if len(item) > 2 else None)
        name = suite.condition(spec)
        done = set(run.episode_keys(name)) if name in run.conditions else set()
        plan.total += len(cases)
        plan.left += sum(c.key not in done for c in cases)
    return plan


def per_episode(run: RunDir, names: Sequence[str], cap: int | None = None
                ) -> dict[str, float] | None:
    """Return the mean calls, tokens and cost per episode over the complete episodes of
    `names` (the first `cap` of each condition where given; None where there is none)."""
    sums: dict[str, float] = {"calls": 0.0, "tokens": 0.0, "cost": 0.0}
    n = 0
    for name in names:
        if name not in run.conditions:
            continue
        for key in run.episode_keys(name)[:cap]:
            traj = run.load_episode(name, key)
            s = call_stats(traj)
            sums["calls"] += s["calls"]
            sums["tokens"] += s["prompt_tokens"] + s["completion_tokens"]
            sums["cost"] += s["cost"]
            n += 1
    return None if n == 0 else {k: v / n for k, v in sums.items()} | {"episodes": n}


def pilot_item(plan: ModelPlan) -> tuple:
    """Return the pilot: the first episode of the model's first row (the same condition)."""
    suite, spec = plan.items[0][0], plan.items[0][1]
    return (suite, spec, 1)


def estimate(run: RunDir, plans: Sequence[ModelPlan], priced: Callable[[str], bool]
             ) -> dict[str, Any]:
    """Return per model its episodes left and the calls, tokens and cost they should take
    (mean per episode of its episodes on disk times the episodes left), and the totals."""
    rows = []
    for p in plans:
        names = [item[0].condition(item[1]) for item in p.items]
        mean = per_episode(run, names, ESTIMATE_SAMPLE)
        row: dict[str, Any] = {**p.as_json(), "priced": priced(p.model),
                               "sample": 0 if mean is None else int(mean["episodes"])}
        for k in ("calls", "tokens", "cost"):
            row[k] = None if mean is None else mean[k] * p.left
        rows.append(row)
    total = {k: sum(r[k] or 0 for r in rows) for k in ("left", "calls", "tokens", "cost")}
    return {"models": rows, "total": total}


def describe(est: dict[str, Any]) -> list[str]:
    """Return the estimate as lines for the terminal."""
    out = []
    for r in est["models"]:
        if r["calls"] is None:
            out.append(f"  {r['model']}: {r['left']} of {r['episodes']} episodes to play "
                       "(no episode to estimate from)")
            continue
        cost = f"${r['cost']:.2f}" if r["priced"] else "$0 (no prices in the registry)"
        out.append(f"  {r['model']}: {r['left']} of {r['episodes']} episodes to play, about "
                   f"{r['calls']:,.0f} calls, {r['tokens']:,.0f} tokens, {cost} (from "
                   f"{r['sample']} episode{'s' * (r['sample'] != 1)} played)")
    t = est["total"]
    out.append(f"  all models: about {t['calls']:,.0f} calls, {t['tokens']:,.0f} tokens, "
               f"${t['cost']:.2f}")
    return out


def _walls(path: Path) -> dict[str, float]:
    """Return the wall times on record ({} where there is none or it cannot be read: it is
    derived, not a result)."""
    f = Path(path) / WALL_FILE
    try:
        walls = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in walls.items() if isinstance(v, int | float)} \
        if isinstance(walls, dict) else {}


def add_wall(path: Path, who: str, seconds: float) -> None:
    """Add `seconds` to the wall time `who`'s rows have taken in the run at `path`."""
    walls = _walls(path)
    walls[who] = walls.get(who, 0.0) + seconds
    write_atomic(Path(path) / WALL_FILE, json.dumps(walls, indent=1) + "\n")


def spent(run: RunDir, conditions: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Return per model the episodes of its rows, the calls, tokens and cost of its own
    calls in every saved episode of the models' rows (a mixed team's leader's calls are the
    leader's), and the wall time its rows took (None where no command recorded one)."""
    walls = _walls(run.path)
    out = {m: {"episodes": 0, "calls": 0.0, "tokens": 0.0, "cost": 0.0,
               "wall_s": walls.get(m)} for m in conditions}
    seen: set[str] = set()
    for model, names in conditions.items():
        for name in names:
            if name not in run.conditions:
                continue
            keys = run.episode_keys(name)
            out[model]["episodes"] += len(keys)
            if name in seen:
                continue
            seen.add(name)
            for key in keys:
                for c in run.load_episode(name, key).steps(ModelCallEvent):
                    if c.model in out:
                        row = out[c.model]
                        row["calls"] += 1
                        row["tokens"] += c.prompt_tokens + c.completion_tokens
                        row["cost"] += 0.0 if c.cache_hit else c.cost
    return out
