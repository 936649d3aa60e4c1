"""`coordbench reproduce PAPER`: rerun a paper's analyses and set its numbers beside ours."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_out_dir, check_range
from coordbench.errors import ConfigError

from .common import (
    emit_json,
    err,
    executor_option,
    fail_fast_option,
    models_option,
    need_torch,
    out,
    play,
    run_dir,
    workers_option,
    write_report,
)
from .limits import MAX_EPISODES, MAX_REPEATS, MAX_STEPS, MAX_WORKERS


def reproduce(
    paper: str = typer.Argument(..., help="mecobench | cocobench | stat | cross | cohub | "
                                          "metrics (do the metrics detect what they name?)"),
    model: list[str] | None = typer.Option(
        None, "--model", help="Model alias that plays every model row (default: the offline "
                              "agents); repeat it or give several comma-separated to compare "
                              "models on the same instances and seeds."),
    models: Path | None = models_option(),
    repeats: int = typer.Option(1, "--repeats", metavar="K",
                                help="Play every model row with K seeds (0..K-1) and report "
                                     "pass@K and pass^K per model."),
    quick: bool = typer.Option(False, "--quick", help="A minutes-long subset."),
    limit: int | None = typer.Option(None, help="Play only the first K cases per condition."),
    max_steps: int | None = typer.Option(None, help="Cap team steps per household episode "
                                                    "(smoke runs; mecobench only)."),
    regime: str | None = typer.Option(None, help="stat: baseline | extreme | all "
                                                 "(default baseline; --quick: all)."),
    methods: str | None = typer.Option(None, help="stat: methods to train, comma-separated "
                                                  "(default: the paper's seven + MAPPO, IPPO; "
                                                  "vdn+pair etc.: the task-equivariant "
                                                  "network)."),
    seeds: str | None = typer.Option(None, help="stat: training seeds, e.g. 0-4 (default "
                                                "0-4; --quick: 0-2)."),
    steps: int | None = typer.Option(None, help="stat: environment steps per run (default: "
                                                "the paper's budget; --quick: 20k); cross: "
                                                "the learned team's (100k; --quick: 20k); "
                                                "cohub: gradient steps (5000; --quick: "
                                                "800)."),
    tasks: Path | None = typer.Option(
        None, "--tasks", metavar="DIR",
        help="mecobench: play the study on the MECoBench task files (*.json) of DIR (the "
             "paper's own tasks, parallel and sequential), whole, instead of the v1 set."),
    instances: Path | None = typer.Option(
        None, "--instances", metavar="DIR",
        help="cocobench: play every condition on the construct instance files (*.json) of "
             "DIR instead of the built-in set."),
    offline_agents: str = typer.Option(
        "rule", "--offline-agents",
        help="Who plays the rows without --model (mecobench, cocobench, cross): rule "
             "(coordbench's rule minds) | imperfect (rule minds that misread, hallucinate, "
             "lose messages, forget and break the protocol; labelled as such)."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    fail_fast: bool = fail_fast_option(),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable); the "
                                        "study's files are written there too."),
    as_json: bool = typer.Option(False, "--json", help="Print {paper, findings} as JSON."),
) -> None:
    """Run the conditions a paper's analyses need, then write reproduce.md, reproduce.html,
    figures/*.png and findings.json: per table and figure, the paper's numbers, ours, and
    whether each finding holds."""
    from coordbench.reproduce import paper_module
    from coordbench.reproduce.models import combined_study, parse_models, per_model, plan_all
    from coordbench.reproduce.study import Options, verdict
    from coordbench.reproduce.write import write_study
    from coordbench.runner import Limits

    module = paper_module(paper)
    names = parse_models(model)
    model_given = bool(names)
    if paper in ("stat", "cross", "cohub"):  # all three train learners
        need_torch()
    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--repeats", repeats, 1, MAX_REPEATS)
    if repeats > 1 and not model_given:
        raise ConfigError("--repeats K repeats the model rows: give --model (the offline "
                          "rows are deterministic)")
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--max-steps", max_steps, 1, MAX_STEPS)
    if max_steps is not None and paper != "mecobench":
        raise ConfigError("--max-steps caps household episodes: it applies to mecobench only")
    if paper == "cross" and limit is not None and not model_given:
        raise ConfigError("--limit caps the cases of the model's rows: reproduce cross needs "
                          "--model with it (the offline rows always play in full)")
    trains = paper == "stat"
    for flag, value in (("--regime", regime), ("--methods", methods), ("--seeds", seeds)):
        if value is not None and not trains:
            raise ConfigError(f"{flag} sets what the STAT study trains: it applies to stat "
                              f"only")
    if steps is not None and paper not in ("stat", "cross", "cohub"):
        raise ConfigError("--steps sets what the STAT study trains (the cross study's "
                          "learned team, the CoHuB study's gradient steps): it applies to "
                          "stat, cross and cohub only")
    if tasks is not None and paper != "mecobench":
        raise ConfigError("--tasks names MECoBench task files: it applies to mecobench only")
    if instances is not None and paper != "cocobench":
        raise ConfigError("--instances names construct instance files: it applies to "
                          "cocobench only")
    for flag, folder, what in (("--tasks", tasks, "task"), ("--instances", instances,
                                                             "instance")):
        if folder is not None and (not folder.is_dir() or not any(folder.glob("*.json"))):
            raise ConfigError(f"{flag} {folder}: " + ("not a folder" if not folder.is_dir()
                                                     else f"holds no {what} files (*.json)"))
    if offline_agents != "rule":
        from coordbench.agents.dials import profile

        profile(offline_agents)  # an unknown profile: one line
        if paper not in ("mecobench", "cocobench", "cross"):
            raise ConfigError(f"--offline-agents sets who plays the rule-mind rows: it "
                              f"applies to mecobench, cocobench and cross, not {paper}")
        if model_given:
            raise ConfigError("--offline-agents names who plays the rows without a model: "
                              "drop it or --model")
    if paper == "metrics" and (model_given or limit is not None):
        raise ConfigError("reproduce metrics injects failures into rule minds: --model and "
                          "--limit do not apply")
    if paper == "cohub" and (model_given or limit is not None):
        raise ConfigError("reproduce cohub plays learned and scripted robots only: --model "
                          "and --limit do not apply")
    if trains and limit is not None:
        raise ConfigError("--limit caps cases per condition; the STAT study has none (use "
                          "--seeds and --steps)")
    if out_dir is not None:
        check_out_dir(out_dir)
    if models is not None:
        from coordbench.llm.registry import load_registry

        load_registry(models)
    if steps is not None or seeds is not None:  # studies that train (torch is there)
        from coordbench.learn.sweep import MAX_TRAIN_STEPS, parse_seeds

        check_range("--steps", steps, 1, MAX_TRAIN_STEPS)
    picked = None
    if methods is not None:
        picked = tuple(m.strip() for m in methods.split(",") if m.strip())
        if not picked:  # an empty list must not quietly mean "the defaults"
            raise ConfigError(f"--methods names no method ({methods!r}): give a "
                              "comma-separated list")
    options = Options(quick, names[0] if names else None, str(models) if models else None,
                      limit, max_steps,
                      regime=regime, methods=picked,
                      seeds=tuple(parse_seeds(seeds)) if seeds is not None else None,
                      steps=steps, offline_agents=offline_agents,
                      tasks=str(tasks) if tasks is not None else None,
                      instances=str(instances) if instances is not None else None,
                      repeats=repeats)
    tag = "" if offline_agents == "rule" else f"-{offline_agents}"
    path = out_dir or Path("runs") / f"reproduce-{paper}{tag}{'-quick' * quick}"
    each = per_model(options, names)
    # an unknown model alias fails here, before any work
    resources = [module.resources(o) for o in each][0]
    run_dir(path)  # the study may keep files of its own (a task subset) in the run
    if hasattr(module, "execute"):  # a study that trains: its sweep, then the run's report
        from coordbench.runner import check_executor

        check_executor(executor, workers)
        say = None if as_json else (lambda line: err.print(line, highlight=False,
                                                           soft_wrap=True))
        run = module.execute(each[0], path, executor, workers, say)
        from coordbench.report.compose import open_for_report

        write_report(open_for_report(path))
    else:
        if hasattr(module, "prepare"):  # a study that trains a team first (cross)
            from coordbench.runner import check_executor

            check_executor(executor, workers)
            module.prepare(each[0], path, executor, workers,
                           None if as_json else (lambda line: err.print(
                               line, highlight=False, soft_wrap=True)))
        items, labels = plan_all(module, each, path)
        run = play(path, items, quiet=as_json, executor=executor, workers=workers,
                   resources=resources, limits=Limits(fail_fast=fail_fast),
                   labels=[f"{paper} {k}" for k in labels])
    study = combined_study(module, run, each, path)
    written = write_study(study, run.path)
    if as_json:
        emit_json(study.as_json())
        return
    from rich.table import Table

    table = Table(title=f"Reproducing {study.title}", title_justify="left")
    for col in ("id", "paper", "verdict"):
        table.add_column(col)
    for f in study.findings:
        table.add_row(f.id, f.paper_ref, verdict(f.holds))
    out.print(table)
    out.print(f"study: {written['markdown']}  ({written.get('html', '')})", highlight=False)
