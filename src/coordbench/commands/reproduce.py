"""`coordbench reproduce PAPER`: rerun a paper's analyses and set its numbers beside ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.suites.physical.options import EMBODIMENT as EMBODIMENT_RECORD
from coordbench.suites.physical.options import G1_MODEL as G1_MODEL_RECORD

from .common import (
    emit_json,
    err,
    executor_option,
    fail_fast_option,
    json_option,
    models_option,
    out,
    out_option,
    play_plan,
    run_dir,
    say_err,
    workers_option,
    write_report,
    yes_option,
)

# the options of `reproduce`, declared once here (a paper's record says which it takes)
PAPER_ARG = typer.Argument(..., help="mecobench | cocobench | stat | cross | cohub | metrics "
                                     "(do the metrics detect what they name?) | attribution "
                                     "(who made a team fail, against injected failures)")
MODEL = typer.Option(None, "--model", help="Model alias that plays every model row (default: "
                     "the offline agents); repeat it or give several comma-separated to "
                     "compare models on the same instances and seeds.")
REPEATS = typer.Option(1, "--repeats", metavar="K", help="Play every model row with K seeds "
                       "(0..K-1) and report pass@K and pass^K per model.")
QUICK = typer.Option(False, "--quick", help="A minutes-long subset.")
LIMIT = typer.Option(None, help="Play a stratified sample of K cases per condition "
                                "(constructs x team sizes, structures x object counts; the "
                                "same K every time).")
MAX_STEPS = typer.Option(None, help="Cap team steps per household episode (smoke runs; "
                                    "mecobench only).")
REGIME = typer.Option(None, help="stat: baseline | extreme | all (default baseline; --quick: "
                                 "all).")
METHODS = typer.Option(None, help="stat: methods to train, comma-separated (default: the "
                                  "paper's seven + MAPPO, IPPO; vdn+pair etc.: the "
                                  "task-equivariant network).")
SEEDS = typer.Option(None, help="stat: training seeds, e.g. 0-4 (default 0-4; --quick: 0-2).")
STEPS = typer.Option(None, help="stat: environment steps per run (default: the paper's "
                                "budget; --quick: 20k); cross: the learned team's (100k; "
                                "--quick: 20k); cohub: gradient steps (5000; --quick: 800).")
TASKS = typer.Option(None, "--tasks", metavar="DIR", help="mecobench: play the study on the "
                     "MECoBench task files (*.json) of DIR (the paper's own tasks, parallel "
                     "and sequential), whole, instead of the v1 set.")
INSTANCES = typer.Option(None, "--instances", metavar="DIR", help="cocobench: play every "
                         "condition on the construct instance files (*.json) of DIR instead "
                         "of the built-in set.")
OFFLINE = typer.Option("rule", "--offline-agents", help="Who plays the rows without --model "
                       "(mecobench, cocobench, cross): rule (coordbench's rule minds) | "
                       "imperfect (rule minds that misread, hallucinate, lose messages, "
                       "forget and break the protocol; labelled as such).")
COST_LIMIT = typer.Option(None, "--cost-limit", help="Stop the study's model calls at this "
                          "spend ($); a study estimated to cost more asks first (--yes: "
                          "start anyway).")
JUDGE = typer.Option(None, "--judge", metavar="MODEL", help="attribution: also measure "
                     "the Who&When log-reading judge (all-at-once and step-by-step) played "
                     "by this model alias.")
YES = yes_option("Start a study whose estimate exceeds --cost-limit without asking.")
EMBODIMENT = typer.Option(EMBODIMENT_RECORD.default, EMBODIMENT_RECORD.cli,
                          help="cohub: the robots, cobot | g1 (the G1 humanoids play the "
                               "tasks they have: docs/physical.md).")
G1_MODEL = typer.Option(None, G1_MODEL_RECORD.cli, help=G1_MODEL_RECORD.help)
OUT = out_option(None, "Run directory (resumable); the study's files are written there too.")
JSON = json_option("Print {paper, findings} as JSON.")


def reproduce(
    paper: str = PAPER_ARG, model: list[str] | None = MODEL, models: Path | None = models_option(),
    repeats: int = REPEATS, quick: bool = QUICK, limit: int | None = LIMIT,
    max_steps: int | None = MAX_STEPS, regime: str | None = REGIME,
    methods: str | None = METHODS, seeds: str | None = SEEDS, steps: int | None = STEPS,
    tasks: Path | None = TASKS, instances: Path | None = INSTANCES,
    offline_agents: str = OFFLINE, embodiment: str = EMBODIMENT,
    g1_model: Path | None = G1_MODEL, judge: str | None = JUDGE,
    cost_limit: float | None = COST_LIMIT, yes: bool = YES,
    executor: str = executor_option(), workers: int = workers_option(),
    fail_fast: bool = fail_fast_option(), out_dir: Path | None = OUT, as_json: bool = JSON,
) -> None:
    """Run the conditions a paper's analyses need, then write reproduce.md, reproduce.html,
    figures/*.png and findings.json: per table and figure, the paper's numbers, ours, and
    whether each finding holds."""
    from coordbench.reproduce.models import parse_models
    from coordbench.reproduce.paper import options_of
    from coordbench.reproduce.paper import out_dir as study_dir
    from coordbench.reproduce.paper import paper as paper_of
    from coordbench.reproduce.run import Budget, run_study
    from coordbench.reproduce.write import write_study

    record = paper_of(paper)
    names = parse_models(model)
    options = options_of(record, {
        "models": models, "repeats": repeats, "quick": quick, "limit": limit,
        "max_steps": max_steps, "regime": regime, "methods": methods, "seeds": seeds,
        "steps": steps, "tasks": tasks, "instances": instances,
        "offline_agents": offline_agents, "embodiment": embodiment, "g1_model": g1_model,
        "judge": judge, "cost_limit": cost_limit, "workers": workers, "out": out_dir}, names)
    study = run_study(record, options, names, study_dir(record, options, out_dir),
                      Budget(cost_limit, yes, fail_fast, executor, workers), _study_io())
    written = write_study(study, study_dir(record, options, out_dir))
    if as_json:
        emit_json(study.as_json())
        return
    _show(study, written, quick)


def _study_io() -> Any:
    """Return how this command plays a study: progress bars, stderr, the terminal."""
    import sys

    from coordbench.reproduce.run import StudyIO

    def confirm(question: str) -> bool:
        return typer.confirm(question, default=False, err=True)

    return StudyIO(play_plan, run_dir, say_err, confirm if sys.stdin.isatty() else None,
                   write_report)


def _show(study: Any, written: dict[str, Any], quick: bool) -> None:
    """Print the study's findings and where its files are."""
    from rich.table import Table

    table = Table(title=f"Reproducing {study.title}", title_justify="left")
    for col in ("id", "paper", "verdict", "reason"):
        table.add_column(col)
    for f in study.findings:
        table.add_row(f.id, f.paper_ref, f.verdict, f.reason)
    out.print(table)
    out.print(f"study: {written['markdown']}  ({written.get('html', '')})", highlight=False)
    if quick:
        err.print("note: --quick verdicts come from small samples and short budgets; they "
                  "check the pipeline, not the papers' claims (run without --quick for those)",
                  highlight=False, soft_wrap=True)
