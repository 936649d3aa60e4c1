"""MECoBench's study design: the conditions the analyses need (`Key`, `keys`), how each is
played (offline rule teams, a model, the oracle), and the helpers every section shares."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coordbench.analyses.common import (
    mean_score,
)
from coordbench.core.atomic import write_atomic
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import HouseholdStepEvent, Trajectory

from .study import (
    Episodes,
    Options,
    gathered_json,
    model_settings,
)

PAPER = "mecobench"


TITLE = "MECoBench (household teams of MLLM agents)"


PROTOCOLS = ("none", "broadcast", "discuss", "leader", "leader_vision", "shared_memory")


PRIORS = ("full", "no_appearance", "no_location", "none", "noisy")


@dataclass(frozen=True)
class Key:
    """One condition of the study: structure, team size, protocol, prior, and who plays
    ("team": the rule team or the model; "oracle")."""

    structure: str
    team: int
    protocol: str = "broadcast"
    prior: str = "full"
    who: str = "team"
    # a many-model study's mixed team: this model leads, the Options' model follows
    leader: str | None = None


def keys() -> list[Key]:
    """Return every condition the study needs, each once, in a stable order."""
    out: list[Key] = [Key("parallel", 1, "none")]
    for n in (2, 3, 4, 5):  # Table 9 / Fig. 7: with and without communication
        out += [Key("parallel", n, "broadcast"), Key("parallel", n, "none")]
    for p in PROTOCOLS:  # Tables 11-12, Fig. 33: the protocols at two agents
        out += [Key("parallel", 2, p), Key("sequential", 2, p)]
    for prior in PRIORS:  # Table 13, Fig. 35
        out += [Key("parallel", 1, "none", prior), Key("parallel", 2, "broadcast", prior)]
    for n in (3, 4):  # Table 15: scaling without the location prior
        out.append(Key("parallel", n, "broadcast", "no_location"))
    for n in (3, 4, 5):  # Fig. 8b: the leader protocol as teams grow
        out.append(Key("parallel", n, "leader"))
    out.append(Key("parallel", 4, "shared_memory"))  # Fig. 10: shared memory at 4 agents
    for n in (3, 4, 5):  # wrong grabs for Tables 19-20 (no appearance: look-alikes fool)
        out += [Key("parallel", n, "broadcast", "no_appearance"),
                Key("parallel", n, "none", "no_appearance")]
    out += [Key("parallel", 2, "none", "no_appearance"),
            Key("sequential", 2, "broadcast", "no_appearance"),
            Key("sequential", 2, "none", "no_appearance")]
    out += [Key("parallel", n, "none", who="oracle") for n in (1, 2, 3, 4, 5)]
    out.append(Key("sequential", 2, "none", who="oracle"))
    seen: set[Key] = set()
    return [k for k in out if not (k in seen or seen.add(k))]  # type: ignore[func-returns-value]


def quick_tasks(out: Path) -> Path:
    """Write (once) and return the quick subset's task file: every fourth v1 case of each
    structure (all 8 templates and object counts 2-7 stay represented)."""
    from coordbench.suites.mecobench.instances import suite_dicts

    path = out / "reproduce-tasks" / "v1-quarter.json"
    if not path.exists():
        cases = suite_dicts("v1")
        chosen = cases[:96][::4] + cases[96:][::4]
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(chosen))
    return path


def _condition(key: Key, options: Options, out: Path):
    from coordbench.suites.mecobench.episode import RULE_DIALS, HouseholdSpec
    from coordbench.suites.mecobench.suite import mecobench_condition

    agents = "oracle" if key.who == "oracle" else ("llm" if options.model else "rule")
    spec = HouseholdSpec(key.structure, key.team, key.protocol, agents, key.prior,
                         options.seed if agents == "llm" else 0,
                         options.model if agents == "llm" else None, key.leader,
                         dials=options.dials(RULE_DIALS) if agents == "rule" else None)
    if options.tasks:  # the user's own task files, played whole
        return mecobench_condition(str(gathered_json(options.tasks, out, "task")), None, spec)
    if options.quick:
        return mecobench_condition(str(quick_tasks(out)), None, spec)
    return mecobench_condition(None, "v1", spec)


def plan(options: Options, out: Path) -> list[tuple]:
    """Return the (suite, condition[, limit]) items the study plays: the paper's keys, and
    in a many-model study Fig. 32's mixed team (the first model leading this one)."""
    from coordbench.suites.mecobench.suite import SUITE

    return [(SUITE, _condition(k, options, out), options.limit)
            for k in keys() + mixed_keys(options)]


def mixed_keys(options: Options) -> list[Key]:
    """Return Fig. 32's mixed team of a many-model study: the first model (the candidate
    strong leader) leading two agents whose follower is this Options' model."""
    if len(options.model_set) < 2 or options.model == options.model_set[0]:
        return []
    return [Key("parallel", 2, "leader", leader=options.model_set[0])]


def resources(options: Options):
    """Return the household resources of the study's runs (the model harness with `--model`,
    the step cap with `--max-steps`)."""
    from coordbench.suites.mecobench.suite import MecobenchResources

    settings = model_settings(options)
    if settings is None and options.max_steps is None:
        return None
    return MecobenchResources(settings, max_steps=options.max_steps)


def episodes(run: RunDir, options: Options, out: Path) -> Episodes:
    """Return the study's episodes by Key."""
    from coordbench.suites.mecobench.suite import SUITE

    return Episodes(run, {k: SUITE.condition(_condition(k, options, out))
                          for k in keys() + mixed_keys(options)})


def comm_groups(ep: Episodes, prior: str = "full", teams: Sequence[int] = (2, 3, 4, 5)
                 ) -> dict[str, list[Trajectory]]:
    single = ep(Key("parallel", 1, "none", prior))
    return {"with comm. (broadcast)": single + ep(*(Key("parallel", n, "broadcast", prior)
                                                    for n in teams)),
            "without comm. (none)": single + ep(*(Key("parallel", n, "none", prior)
                                                  for n in teams))}


def levels_rows(result: dict, label: str) -> list[list]:
    return [[label, team, lv["SR"], lv["CR"], lv["AUC"], str(lv["n"])]
            for team, lv in result["teams"].items()]


def step_count(traj: Trajectory) -> float:
    return float(len(traj.steps(HouseholdStepEvent)))


def metric_of(trajs: Sequence[Trajectory], fn) -> dict:
    return mean_score([v for v in (fn(t) for t in trajs) if v is not None])


def talking_episodes(ep: Episodes) -> list[Trajectory]:
    return [t for k in keys() if k.who == "team" and k.protocol != "none" for t in ep(k)]


def labels(options: Options, out: Path) -> list[str]:
    """Return a progress label per planned condition."""
    return [f"{k.structure} n={k.team} {k.protocol} {k.prior}"
            + (" oracle" if k.who == "oracle" else "")
            + (f" led by {k.leader}" if k.leader else "") for k in keys() + mixed_keys(options)]


# Table 8 (two agents, broadcast: the paper's normal setting; one agent, no protocol)
SINGLE = Key("parallel", 1, "none")


PAIR = Key("parallel", 2, "broadcast")


SEQUENTIAL = Key("sequential", 2, "broadcast")
