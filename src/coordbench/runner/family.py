"""One record per benchmark family: everything the rest of coordbench dispatches on.

A `Family` names, as lazy ``"module:attr"`` strings (Gymnasium's entry points), the pieces a
family brings: its `Suite`, the expander of its section of the default benchmark, the API's
condition builder, its report section and figures, the viewer's replay, its coordination
profile and its command group. Nothing is imported until it is asked for, so this module sits
at the bottom of the house and every layer may look a family up; each dispatch table of
coordbench (plan, api, report, figures, viewer, profile, cli, load_run) iterates `families()`.

A new family is its own folder plus one `register(Family(...))`: the built-in ones are listed
at the end of this module; a package outside coordbench registers through the entry-point
group ``coordbench.families`` (each entry point names a `Family`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from coordbench.errors import ConfigError

ENTRY_POINT_GROUP = "coordbench.families"


@dataclass(frozen=True)
class Family:
    """A benchmark family, by the suite name its manifests and trajectories record.

    Every reference is a ``"module:attr"`` string (or None where the family has no such
    piece): `suite` the `runner.Suite` object; `plan` `expand(section) -> (items, labels)` of
    its section of the default benchmark (`default_plan`); `condition` the API's
    `build(options) -> (suite, spec, limit)`; `report` `section(run, conditions)`; `figures`
    `figures(run, conditions, entries, data) -> [Figure | None]`; `replay`
    `picture(run, condition, trajectory)`; `warm` `warm(spec)` (the viewer prepares a
    condition's replay off the request path); `profile` `profile(trajectory)`; `kinds` the
    {metric: estimate kind} of its episode metrics (`core.stats.estimate`); `commands` the
    typer app served as ``coordbench <command>``; `options` what it plays
    (`runner.played.Played`), `seats` who may sit (`runner.played.Seats`) and `summary` its
    run command's output: from these three, its run, crossplay and play commands are made;
    `counterfactual` its part in failure attribution (`runner.counterfactual`).
    """

    name: str
    title: str = ""
    suite: str | None = None
    plan: str | None = None
    default_plan: dict[str, Any] | None = None
    condition: str | None = None
    report: str | None = None
    figures: str | None = None
    replay: str | None = None
    warm: str | None = None
    profile: str | None = None
    kinds: str | None = None
    commands: str | None = None
    command: str | None = None
    # what is played (runner.played.Played), who may sit (runner.played.Seats), and the run
    # command's summary `summary(run, plan, values) -> (json payload, console renderables)`:
    # from these the family's run, crossplay and play commands are generated
    options: str | None = None
    seats: str | None = None
    summary: str | None = None
    # failure attribution (`coordbench attribute`): a `runner.counterfactual.Counterfactual`
    counterfactual: str | None = None
    # metrics a summary leads with, for a family without a Suite (e.g. training runs)
    headline: tuple[str, ...] = ()
    # condition-name prefixes of manifests written before suites were recorded
    prefixes: tuple[str, ...] = field(default_factory=tuple)

    def get(self, piece: str) -> Any | None:
        """Return the object a piece names (imported on first use), None where it names none."""
        ref = getattr(self, piece)
        return None if ref is None else load(ref)

    def headline_metrics(self) -> tuple[str, ...]:
        """Return the metrics a summary of this family leads with."""
        suite = self.get("suite")
        return tuple(suite.headline) if suite is not None else self.headline


_FAMILIES: dict[str, Family] = {}
_LOADED: dict[str, Any] = {}
_entry_points_read = False


def load(ref: str) -> Any:
    """Return the object a ``"module:attr"`` string names (ConfigError if it names none)."""
    if ref not in _LOADED:
        module, _, attr = ref.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in attr.split(".") if attr else ():
                obj = getattr(obj, part)
        except Exception as e:  # noqa: BLE001 - a broken piece is one line naming it
            raise ConfigError(f"family reference {ref!r} cannot be loaded: "
                              f"{type(e).__name__}: {e}") from e
        _LOADED[ref] = obj
    return _LOADED[ref]


def register(family: Family) -> Family:
    """Add `family` (replacing a record of the same name) and return it."""
    _FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove the family called `name` (nothing if there is none)."""
    _FAMILIES.pop(name, None)


def _read_entry_points() -> None:
    """Register the families installed packages name; a broken one is an error every time
    the registry is read (never a family silently missing)."""
    global _entry_points_read
    if _entry_points_read:
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin: one line naming it
            raise ConfigError(f"entry point {ep.name!r} of {ENTRY_POINT_GROUP} cannot be "
                              f"loaded: {type(e).__name__}: {e}") from None
        if not isinstance(found, Family):
            raise ConfigError(f"entry point {ep.name!r} of {ENTRY_POINT_GROUP} is not a Family")
        _FAMILIES.setdefault(found.name, found)
    _entry_points_read = True


def families() -> list[Family]:
    """Return every registered family, built-in ones first, in registration order."""
    _read_entry_points()
    return list(_FAMILIES.values())


def family(name: str) -> Family | None:
    """Return the family whose suite is called `name` (None for an unknown one)."""
    _read_entry_points()
    return _FAMILIES.get(name)


def suite_object(name: str) -> Any | None:
    """Return the Suite object of the family called `name` (None if unknown or suite-less)."""
    f = family(name)
    return None if f is None else f.get("suite")


def names(piece: str = "suite") -> tuple[str, ...]:
    """Return the names of the families that have `piece` (e.g. "suite", "condition")."""
    return tuple(f.name for f in families() if getattr(f, piece) is not None)


def family_of(condition: str, spec: dict[str, Any]) -> str | None:
    """Return the suite a condition belongs to: as recorded in its spec, or inferred from
    its name's prefix for manifests written before suites were recorded (None if neither)."""
    if "suite" in spec:
        return str(spec["suite"])
    for f in families():
        if any(condition.startswith(p) for p in f.prefixes):
            return f.name
    return None


# The built-in families. Each line names pieces that live in the family's own folders.
_S = "coordbench.suites"
_R = "coordbench.report"
_V = "coordbench.viewer.replay"
_P = "coordbench.metrics.profile"
_C = "coordbench.commands"
_M = "coordbench.metrics"

register(Family(
    "stat", "STAT", suite=f"{_S}.stat.suite:SUITE", plan=f"{_S}.stat.suite:plan_items",
    default_plan={"configs": ["3A-6T-5x3", "5A-25T-50x30", "9A-25T-50x30"],
                  "policies": ["random", "greedy", "matching", "hungarian"],
                  "episodes": 100, "layouts": "paper", "seed": 0},
    condition=f"{_S}.stat.suite:api_condition", report=f"{_R}.stat_report:section",
    figures=f"{_R}.figures:stat_figures", replay=f"{_V}.stat:picture",
    profile=f"{_P}:stat_profile", kinds=f"{_M}.stat:KINDS", commands=f"{_C}.stat:app",
    options=f"{_S}.stat.options:PLAYED", seats=f"{_S}.stat.options:FAMILY_SEATS",
    summary=f"{_R}.stat_report:run_summary",
    counterfactual=f"{_S}.stat.counterfactual:COUNTERFACTUAL",
    command="stat",
    prefixes=("stat_",)))
register(Family(
    "mecobench", "MECoBench household teams", suite=f"{_S}.mecobench.suite:SUITE",
    plan=f"{_S}.mecobench.suite:plan_items",
    default_plan={"instance_set": "v1",
                  "teams": [{"structure": "parallel", "team": 3},
                            {"structure": "sequential", "team": 2}],
                  "protocols": ["none", "broadcast"], "agents": "rule"},
    condition=f"{_S}.mecobench.suite:api_condition", report=f"{_R}.mecobench_report:section",
    figures=f"{_R}.figures:mecobench_figures", replay=f"{_V}.mecobench:picture",
    warm=f"{_V}.mecobench:warm", profile=f"{_P}:household_profile",
    kinds=f"{_M}.household:KINDS", commands=f"{_C}.mecobench:app",
    options=f"{_S}.mecobench.options:PLAYED", seats=f"{_S}.mecobench.options:FAMILY_SEATS",
    summary=f"{_R}.mecobench_report:run_summary",
    counterfactual=f"{_S}.mecobench.counterfactual:COUNTERFACTUAL", command="mecobench",
    prefixes=("mecobench_",)))
register(Family(
    "constructs", "CoCoBench coordination constructs", suite=f"{_S}.constructs.suite:SUITE",
    plan=f"{_S}.constructs.suite:plan_items",
    default_plan={"subset": "rep240", "agents": "rule",
                  "planners": ["central", "decentralized", "decentralized_comm"]},
    condition=f"{_S}.constructs.suite:api_condition",
    report=f"{_R}.constructs_report:section", figures=f"{_R}.figures:constructs_figures",
    replay=f"{_V}.constructs:picture", profile=f"{_P}:construct_profile",
    kinds=f"{_M}.constructs:KINDS", commands=f"{_C}.constructs:app",
    options=f"{_S}.constructs.options:PLAYED", seats=f"{_S}.constructs.options:FAMILY_SEATS",
    summary=f"{_R}.constructs_report:run_summary",
    counterfactual=f"{_S}.constructs.counterfactual:COUNTERFACTUAL", command="constructs",
    prefixes=("constructs_",)))
register(Family(
    "physical", "CoHuB physical collaboration", suite=f"{_S}.physical.suite:SUITE",
    plan=f"{_S}.physical.suite:plan_items",
    default_plan={"tasks": "all", "policies": ["expert", "expert_noisy"], "rollouts": 10},
    condition=f"{_S}.physical.suite:api_condition", report=f"{_R}.physical_report:section",
    figures=f"{_R}.figures:physical_figures", replay=f"{_V}.physical:picture",
    profile=f"{_P}:physical_profile", kinds=f"{_M}.physical:KINDS",
    commands=f"{_C}.physical:app",
    options=f"{_S}.physical.options:PLAYED", seats=f"{_S}.physical.options:FAMILY_SEATS",
    summary=f"{_R}.physical_report:run_summary",
    counterfactual=f"{_S}.physical.counterfactual:COUNTERFACTUAL", command="physical",
    prefixes=("physical_",)))
register(Family(
    "stat_train", "STAT training", report=f"{_R}.stat_train_report:section",
    figures=f"{_R}.figures:stat_train_figures", headline=("final_return", "max_return")))
