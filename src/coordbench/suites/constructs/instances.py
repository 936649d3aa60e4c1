"""The versioned construct instance set: generation, reference numbers, quality gates.

v1: 900 instances, 75 per (construct, team size) for constructs D1-D4 and teams of 2, 3, 4,
spread evenly over each construct's families; rep240 takes the first 20 of every cell. Each
instance carries its oracle references: M* of its own construct score (D1: the exact min-max
makespan under the skill abstraction; D3: the oracle's team steps), the oracle's actions,
steps and makespan (the largest per-agent action count: C_D1's M* when the score is
cross-applied to a D2-D4 instance), and the budget = ceil(1.5 x oracle actions) executed
agent-actions. Three gates keep an instance:
placement (the objects exist where the goal needs them), oracle (it succeeds with only legal,
successful actions) and metric (it scores >= 0.95 on its construct). `V1_SHA256` pins it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from functools import cache
from typing import Any

from coordbench.core.sample import Sample, stratified_sample
from coordbench.errors import ConfigError
from coordbench.metrics.constructs import construct_score

from .episode import ConstructSpec, load_instance, run_construct
from .task_families import CONSTRUCTS, TASK_FAMILIES

TEAMS = (2, 3, 4)
PER_CELL = 75
REP_PER_CELL = 20
MAX_ATTEMPTS = 20
V1_SHA256 = "3d3bd6e7b2a94fbff470e897faeabe0548a588fb87e33213279182d40dea453f"


def placement_gate(raw: dict[str, Any]) -> str | None:
    """Return why an instance's objects cannot serve its goal, or None."""
    task, info = load_instance(raw, str(raw.get("task_id")))
    nodes = task.scene.nodes
    for item in info.get("items", []):
        if item not in nodes or not nodes[item].grabbable:
            return f"item {item} is missing or not grabbable"
        if not task.scene.parents.get(item):
            return f"item {item} rests on nothing"
    for t in {int(v) for v in info.get("targets", {}).values()} | set(info.get("containers", [])):
        if t not in nodes or not (nodes[t].is_container or nodes[t].is_surface):
            return f"target {t} cannot hold objects"
    if info["construct"] == "D3" and (info.get("knife") not in nodes or any(
            "CUTTABLE" not in nodes[i].properties for i in info["items"])):
        return "the knife or a sliceable item is missing"
    if info["construct"] == "D4" and not task.buffers:
        return "no buffer station"
    return None


def with_references(raw: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Return (the instance with oracle references and budget, why it failed a gate or None)."""
    why = placement_gate(raw)
    if why:
        return raw, f"placement: {why}"
    raw = json.loads(json.dumps(raw))
    raw["coordbench_budget"] = 10_000
    tr = run_construct(raw, ConstructSpec("decentralized", "oracle"), "reference")
    records = [a for e in tr.events if e.type == "household_step" for a in e.actions]
    if not tr.end.success or any(a.outcome != "ok" for a in records):
        return raw, "oracle: the reference plan fails or takes an illegal action"
    info = raw["coordbench_construct"]
    info["oracle_actions"] = len(records)
    info["oracle_steps"] = sum(e.type == "household_step" for e in tr.events)
    per_agent: dict[int, int] = {}
    for a in records:
        per_agent[a.agent] = per_agent.get(a.agent, 0) + 1
    info["oracle_makespan"] = max(per_agent.values())
    if info["construct"] == "D1":
        task, _ = load_instance(raw, "x")
        from coordbench.agents.constructs.oracle import ConstructOracle
        from coordbench.envs.household.engine import HouseholdEnv

        info["m_star"] = ConstructOracle(HouseholdEnv(task, len(task.start_rooms)), info).m_star
    elif info["construct"] == "D3":
        info["m_star"] = info["oracle_steps"]
    raw["coordbench_budget"] = math.ceil(1.5 * len(records))
    check = run_construct(raw, ConstructSpec("decentralized", "oracle"), "gate")
    score = construct_score(check)
    if not check.end.success or score is None or score < 0.95:
        return raw, f"metric: the oracle scores {score} on its construct"
    return raw, None


def v1_plan() -> list[tuple[str, int, int]]:
    """Return (family, team, index) for the 900 v1 instances, cell by cell."""
    plan = []
    for construct in CONSTRUCTS:
        for team in TEAMS:
            fams = [f for f, (c, _, teams) in TASK_FAMILIES.items() if c == construct
                    and team in teams]
            plan += [(fams[k % len(fams)], team, k) for k in range(PER_CELL)]
    return plan


def generate(family: str, team: int, index: int) -> dict[str, Any]:
    """Return the first seeded draw of an instance that passes every gate."""
    builder = TASK_FAMILIES[family][1]
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"coordbench-constructs-v1/{family}/{team}/{index}/{attempt}")
        raw, why = with_references(builder(rng, team, index))
        if why is None:
            return raw
    raise RuntimeError(f"{family} team {team} #{index}: no draw passed the gates")


@cache
def _generated(family: str, team: int, index: int) -> dict[str, Any]:
    return generate(family, team, index)


def v1() -> tuple[dict[str, Any], ...]:
    """Return the 900 v1 instances (each generated once per process, on first use)."""
    return tuple(_generated(*row) for row in v1_plan())


def fingerprint(raws: tuple[dict[str, Any], ...]) -> str:
    """Return the sha256 of an instance set's canonical JSON."""
    return hashlib.sha256(json.dumps(raws, sort_keys=True).encode()).hexdigest()


def _selection(subset: str, construct: str | None, team: int | None
               ) -> list[tuple[str, int, int]]:
    """Return the (family, team, index) rows of the v1 instances a selection holds, in set
    order (ConfigError for a subset, construct or team size that does not exist)."""
    if subset not in ("all", "rep240"):
        raise ConfigError(f"--subset must be all or rep240, not {subset!r}")
    if construct is not None and construct not in CONSTRUCTS:
        raise ConfigError(f"--construct must be one of {', '.join(CONSTRUCTS)}")
    if team is not None and team not in TEAMS:
        raise ConfigError(f"--team must be one of {', '.join(map(str, TEAMS))}")
    out = []
    for family, t, k in v1_plan():
        c = TASK_FAMILIES[family][0]
        if subset == "rep240" and k >= REP_PER_CELL:
            continue
        if (construct is None or c == construct) and (team is None or t == team):
            out.append((family, t, k))
    return out


def stratum(construct: str, team: int) -> tuple[str, int]:
    """Return an instance's stratum in a `--limit` sample: its construct and team size."""
    return (construct, team)


def selection_strata(subset: str = "all", construct: str | None = None,
                     team: int | None = None) -> list[tuple[str, int]]:
    """Return the stratum of every instance of a selection, in the selection's order (no
    instance is built)."""
    return [stratum(TASK_FAMILIES[f][0], t) for f, t, _ in _selection(subset, construct, team)]


def select_sample(subset: str = "all", construct: str | None = None, team: int | None = None,
                  limit: int | None = None) -> Sample:
    """Return the stratified sample of `limit` instances of a selection (constructs x team
    sizes, `core.sample`; None: every instance), its indices into the selection's order."""
    return stratified_sample(selection_strata(subset, construct, team), lambda s: s, limit)


def select_indexed(subset: str = "all", construct: str | None = None,
                   team: int | None = None, limit: int | None = None
                   ) -> list[tuple[int, dict[str, Any]]]:
    """Return (index in the selection, instance) of the v1 instances of a selection: all or
    rep240, optionally one construct and/or team size; with `limit`, a stratified sample of
    that many (`select_sample`), in selection order. Only the instances returned are built."""
    rows = _selection(subset, construct, team)
    picked = (range(len(rows)) if limit is None
              else select_sample(subset, construct, team, limit).indices)
    return [(i, _generated(*rows[i])) for i in picked]


def select(subset: str = "all", construct: str | None = None, team: int | None = None,
           limit: int | None = None) -> list[dict[str, Any]]:
    """Return v1 instances: all or rep240, optionally one construct and/or team size; with
    `limit`, a stratified sample of that many over constructs x team sizes (`select_sample`).
    The dicts are the process's cached instances, shared by every caller: copy one
    (copy.deepcopy) before changing it."""
    return [raw for _, raw in select_indexed(subset, construct, team, limit)]


def instance_at(subset: str, construct: str | None, team: int | None, index: int
                ) -> dict[str, Any] | None:
    """Return instance `index` of a selection (None past its end), building only that one."""
    rows = _selection(subset, construct, team)
    return _generated(*rows[index]) if 0 <= index < len(rows) else None
