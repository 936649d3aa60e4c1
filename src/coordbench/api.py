"""The Python entry points: `evaluate` one condition of any family, `results` of a run.

Both go through the same runner and report as the command line, so a notebook gets the
numbers `coordbench ... --json` prints and the run directory the CLI would have written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordbench.errors import ConfigError
from coordbench.runner.family import family, names


def _condition(suite: str, options: dict[str, Any]) -> tuple[Any, Any, int | None]:
    """Return (suite object, condition spec, case limit) from keyword options, through the
    family's `condition` builder."""
    f = family(suite)
    if f is None or f.condition is None:
        raise ConfigError(f"unknown suite {suite!r}; choose from {', '.join(names('condition'))}")
    played = f.get("options")
    if played is not None:  # the family's one description of its options checks them
        from coordbench.runner.options import check_values

        check_values(played.options, options)
    return f.get("condition")(options)


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
