"""One record per reproduced paper, beside the families' records: what `coordbench reproduce
PAPER` needs to know of a paper, and the one check of the options a user gives it.

A `Paper` names its module (whose `plan`, `labels`, `resources`, `study`, `PAPER` and `TITLE`
every study has), the pieces only some papers have (`compare`: the model comparisons of a
many-model study; `prepare`: training before the plan is played; `execute`: a study that is a
training sweep instead of a plan), and the options it accepts. `options_of` checks the
options against the record and returns the study's `Options`; `reproduce/run.py` plays it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from coordbench.core.files import check_out_dir, check_range
from coordbench.core.limits import (
    MAX_COST,
    MAX_EPISODES,
    MAX_REPEATS,
    MAX_STEPS,
    MAX_WORKERS,
)
from coordbench.errors import ConfigError

from .study import Options

# what an option that a paper does not take is, in the line refusing it
_WHAT = {
    "max_steps": "--max-steps caps household episodes",
    "regime": "--regime sets what the STAT study trains",
    "methods": "--methods sets what the STAT study trains",
    "seeds": "--seeds sets what the STAT study trains",
    "steps": "--steps sets what the STAT study trains (the cross study's learned team, the "
             "CoHuB study's gradient steps)",
    "tasks": "--tasks names MECoBench task files",
    "instances": "--instances names construct instance files",
    "offline_agents": "--offline-agents sets who plays the rule-mind rows",
    "embodiment": "--embodiment sets the CoHuB study's robots",
    "judge": "--judge names the log-reading judge of the attribution study",
}


@dataclass(frozen=True)
class Paper:
    """A reproduced paper: its module, the pieces it has, the options it takes (`takes`:
    names of `Options` fields beyond --quick), whether its study trains learners (PyTorch),
    and the one line refusing --model and --limit where it takes neither."""

    name: str
    module: str
    takes: frozenset[str]
    trains: bool = False
    compare: bool = False
    prepare: bool = False
    execute: bool = False
    refuses: str | None = None

    def load(self) -> ModuleType:
        """Return the paper's module."""
        return import_module(self.module)

    def piece(self, name: str) -> Any | None:
        """Return the paper's `compare`, `prepare` or `execute` (None where it has none)."""
        return getattr(self.load(), name) if getattr(self, name) else None


_R = "coordbench.reproduce"
_MODELS = frozenset({"model", "limit", "offline_agents"})
PAPERS: dict[str, Paper] = {p.name: p for p in (
    Paper("mecobench", f"{_R}.mecobench", _MODELS | {"max_steps", "tasks"}, compare=True),
    Paper("cocobench", f"{_R}.cocobench", _MODELS | {"instances"}, compare=True),
    Paper("stat", f"{_R}.stat", frozenset({"regime", "methods", "seeds", "steps"}),
          trains=True, execute=True),
    Paper("cross", f"{_R}.cross", _MODELS | {"steps"}, trains=True, prepare=True),
    Paper("cohub", f"{_R}.cohub", frozenset({"steps", "embodiment"}), trains=True,
          prepare=True,
          refuses="reproduce cohub plays learned and scripted robots only: --model and "
                  "--limit do not apply"),
    Paper("attribution", f"{_R}.attribution", frozenset({"judge"}),
          refuses="reproduce attribution injects failures into rule teams: --model and "
                  "--limit do not apply (--judge MODEL adds the log-reading judge)"),
    Paper("metrics", f"{_R}.metrics", frozenset(),
          refuses="reproduce metrics injects failures into rule minds: --model and --limit "
                  "do not apply"),
)}


def paper(name: str) -> Paper:
    """Return the paper called `name` (ConfigError naming the valid ones)."""
    if name not in PAPERS:
        raise ConfigError(f"unknown paper {name!r}; choose from {', '.join(PAPERS)}")
    return PAPERS[name]


def _takers(option: str) -> str:
    """Return the papers that take `option`, as a line names them."""
    names = [p.name for p in PAPERS.values() if option in p.takes]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _folder(flag: str, folder: Path | None, what: str) -> None:
    if folder is not None and (not folder.is_dir() or not any(folder.glob("*.json"))):
        raise ConfigError(f"{flag} {folder}: " + ("not a folder" if not folder.is_dir()
                                                  else f"holds no {what} files (*.json)"))


def _check_taken(p: Paper, v: dict[str, Any], model_given: bool) -> None:
    """Raise ConfigError for an option the paper does not take (one line each)."""
    if p.refuses and (model_given or v["limit"] is not None):
        raise ConfigError(p.refuses)
    if p.name == "cross" and v["limit"] is not None and not model_given:
        raise ConfigError("--limit caps the cases of the model's rows: reproduce cross needs "
                          "--model with it (the offline rows always play in full)")
    if "limit" not in p.takes and v["limit"] is not None:
        raise ConfigError("--limit caps cases per condition; the STAT study has none (use "
                          "--seeds and --steps)")
    for option, what in _WHAT.items():
        given = (v.get(option) not in (None, "rule", "cobot")
                 if option in ("offline_agents", "embodiment") else v.get(option) is not None)
        if given and option not in p.takes:
            raise ConfigError(f"{what}: it applies to {_takers(option)}"
                              + (f", not {p.name}" if option == "offline_agents" else " only"))
    if v["offline_agents"] != "rule" and model_given:
        raise ConfigError("--offline-agents names who plays the rows without a model: drop "
                          "it or --model")


def options_of(p: Paper, v: dict[str, Any], models: tuple[str, ...]) -> Options:
    """Return the study's Options from the command's values `v` (model, models, repeats,
    quick, limit, max_steps, regime, methods, seeds, steps, tasks, instances,
    offline_agents, cost_limit, workers, out), every check made first: ranges, options
    the paper does not take, folders, the model registry (ConfigError, one line)."""
    from coordbench.core.extras import need_torch

    model_given = bool(models)
    if p.trains:
        need_torch()
    check_range("--limit", v["limit"], 1, MAX_EPISODES)
    check_range("--repeats", v["repeats"], 1, MAX_REPEATS)
    check_range("--cost-limit", v["cost_limit"], 0, MAX_COST, low_open=True)
    if v["cost_limit"] is not None and not model_given:
        raise ConfigError("--cost-limit caps the model calls of a study: give --model")
    if v["repeats"] > 1 and not model_given:
        raise ConfigError("--repeats K repeats the model rows: give --model (the offline "
                          "rows are deterministic)")
    check_range("--workers", v["workers"], 1, MAX_WORKERS)
    check_range("--max-steps", v["max_steps"], 1, MAX_STEPS)
    _check_taken(p, v, model_given)
    _folder("--tasks", v["tasks"], "task")
    _folder("--instances", v["instances"], "instance")
    embodiment = v.get("embodiment") or "cobot"
    if embodiment != "cobot" or v.get("g1_model") is not None:
        from coordbench.suites.physical.options import embodiment_from

        embodiment = embodiment_from({"embodiment": embodiment, "g1_model": v.get("g1_model")})
    if v["offline_agents"] != "rule":
        from coordbench.agents.team.dials import profile

        profile(v["offline_agents"])  # an unknown profile: one line
    if v["out"] is not None:
        check_out_dir(v["out"])
    if v["models"] is not None:
        from coordbench.llm.registry import load_registry

        load_registry(v["models"])
    if v.get("judge"):  # an unknown alias or a missing key: one line before any work
        from coordbench.llm.client import HarnessSettings, harness_for

        harness_for(HarnessSettings(str(v["models"]) if v["models"] else None)).provider(
            v["judge"])
    seeds = None
    if v["steps"] is not None or v["seeds"] is not None:  # studies that train (torch is there)
        from coordbench.learn.sweep import MAX_TRAIN_STEPS, parse_seeds

        check_range("--steps", v["steps"], 1, MAX_TRAIN_STEPS)
        seeds = tuple(parse_seeds(v["seeds"])) if v["seeds"] is not None else None
    methods = None
    if v["methods"] is not None:
        methods = tuple(m.strip() for m in v["methods"].split(",") if m.strip())
        if not methods:  # an empty list must not quietly mean "the defaults"
            raise ConfigError(f"--methods names no method ({v['methods']!r}): give a "
                              "comma-separated list")
    return Options(v["quick"], models[0] if models else None,
                   str(v["models"]) if v["models"] else None, v["limit"], v["max_steps"],
                   regime=v["regime"], methods=methods, seeds=seeds, steps=v["steps"],
                   offline_agents=v["offline_agents"],
                   tasks=str(v["tasks"]) if v["tasks"] is not None else None,
                   instances=str(v["instances"]) if v["instances"] is not None else None,
                   repeats=v["repeats"], embodiment=embodiment, judge=v.get("judge"))


def out_dir(p: Paper, options: Options, out: Path | None) -> Path:
    """Return the study's run directory: `out`, or
    runs/reproduce-PAPER[-profile][-embodiment][-quick]."""
    tag = "" if options.offline_agents == "rule" else f"-{options.offline_agents}"
    tag += "" if options.embodiment == "cobot" else f"-{options.embodiment}"
    return out or Path("runs") / f"reproduce-{p.name}{tag}{'-quick' * options.quick}"
