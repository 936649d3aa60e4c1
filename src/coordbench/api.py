"""The Python entry points: `evaluate` one condition of any family, `results` of a run.

Both go through the same runner and report as the command line, so a notebook gets the
numbers `coordbench ... --json` prints and the run directory the CLI would have written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordbench.errors import ConfigError

SUITES = ("stat", "mecobench", "constructs", "physical")


def _condition(suite: str, options: dict[str, Any]) -> tuple[Any, Any, int | None]:
    """Return (suite object, condition spec, case limit) from keyword options."""
    take = options.pop
    if suite == "stat":
        from coordbench.suites.stat.suite import SUITE, StatEvalSpec

        limit = take("episodes", 100)
        return SUITE, StatEvalSpec(**options), limit
    if suite == "mecobench":
        from coordbench.suites.mecobench.runner import HouseholdSpec
        from coordbench.suites.mecobench.suite import SUITE, household_condition

        tasks, instance_set, limit = take("tasks", None), take("suite", None), take("limit", None)
        spec = HouseholdSpec(**options)
        return SUITE, household_condition(str(tasks) if tasks else None, instance_set, spec), \
            limit
    if suite == "constructs":
        from coordbench.suites.constructs.runner import ConstructSpec
        from coordbench.suites.constructs.suite import SUITE, ConstructCondition

        where = {k: take(k) for k in ("subset", "construct", "team", "limit", "instances_file")
                 if k in options}
        return SUITE, ConstructCondition(ConstructSpec(**options), **where), None
    if suite == "physical":
        from coordbench.suites.physical.suite import SUITE, PhysicalSpec

        limit = take("rollouts", 100)
        return SUITE, PhysicalSpec(**options), limit
    raise ConfigError(f"unknown suite {suite!r}; choose from {', '.join(SUITES)}")


def evaluate(suite: str, *, out: str | Path | None = None, executor: str = "local",
             workers: int = 1, **options: Any) -> dict[str, Any]:
    """Play (or resume) one condition of `suite` and return its summary:
    {"suite", "condition", "run", "spec", "metrics": {metric: {"mean", "ci95", "n", "lo",
    "hi", "interval"}}} (the CLI's `--json` prints the mean, ci95 and n of each).

    `options` are the condition's fields, named as the CLI options are: e.g. stat: config,
    policy, layouts, seed, episode_limit, episodes; mecobench: structure, team, protocol,
    agents, prior, seed, tasks or suite, limit; constructs: planner, agents, observation,
    seed, order, subset, construct, team, limit; physical: task, policy, rollouts.
    Model-driven teams need the CLI (model registry, cache and limits).
    """
    from coordbench.core.rundir import RunDir
    from coordbench.report.compose import compose
    from coordbench.runner import run_conditions

    try:
        suite_obj, spec, limit = _condition(suite, dict(options))
    except TypeError as e:
        raise ConfigError(f"{suite}: {e}") from None
    cond = suite_obj.condition(spec)
    run = RunDir.create_or_open(Path(out) if out else Path("runs") / "api" / cond,
                                command=f"coordbench.evaluate({suite!r})")
    run_conditions(run, [(suite_obj, spec, limit)], executor=executor, workers=workers)
    result = _only(compose(run).results, cond)
    return {"suite": suite, "condition": cond, "run": str(run.path), **result}


def _only(results: dict[str, dict[str, Any]], cond: str) -> dict[str, Any]:
    entry = dict(results.get(cond, {"spec": {}, "metrics": {}}))
    entry.pop("suite", None)
    return entry


def results(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Return {condition: {"suite", "spec", "metrics"}} of a run (or training) directory,
    recomputed from what it saved (the content of its results.json)."""
    from coordbench.report.compose import compose, open_for_report

    return compose(open_for_report(run_dir)).results
