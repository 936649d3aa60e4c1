"""`coordbench reproduce PAPER`: rerun a paper's analyses and set its numbers beside ours."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_out_dir, check_range
from coordbench.errors import ConfigError, CoordbenchError

from .common import (
    check_model_limits,
    emit_json,
    err,
    executor_option,
    fail_fast_option,
    models_option,
    need_torch,
    out,
    play,
    run_dir,
    say_err,
    workers_option,
    write_report,
)
from .limits import MAX_EPISODES, MAX_REPEATS, MAX_STEPS, MAX_WORKERS

QUICK_CAVEAT = ("**Quick mode.** These runs are a minutes-long subset: small samples, short "
                "training budgets and few seeds. A verdict here says what these runs show; "
                "it is not the paper's test of its claim (run without --quick for that).")


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
    cost_limit: float | None = typer.Option(
        None, "--cost-limit", help="Stop the study's model calls at this spend ($); a "
                                   "study estimated to cost more asks first (--yes: start "
                                   "anyway)."),
    yes: bool = typer.Option(False, "--yes", help="Start a study whose estimate exceeds "
                                                  "--cost-limit without asking."),
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
    check_model_limits(cost_limit=cost_limit)
    if cost_limit is not None and not model_given:
        raise ConfigError("--cost-limit caps the model calls of a study: give --model")
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
        run = module.execute(each[0], path, executor, workers, say_err)
        from coordbench.report.compose import open_for_report

        write_report(open_for_report(path))
    else:
        if hasattr(module, "prepare"):  # a study that trains a team first (cross)
            from coordbench.runner import check_executor

            check_executor(executor, workers)
            module.prepare(each[0], path, executor, workers, say_err)
        items, labels, owners = plan_all(module, each, path)
        run = _play_study(path, paper, items, labels, owners, names, False, yes,
                          cost_limit, executor=executor, workers=workers,
                          resources=resources,
                          limits=Limits(cost_limit=cost_limit, fail_fast=fail_fast))
    study = combined_study(module, run, each, path)
    if quick:
        study.preamble = QUICK_CAVEAT + " " + study.preamble
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
    if quick:
        err.print("note: --quick verdicts come from small samples and short budgets; they "
                  "check the pipeline, not the papers' claims (run without --quick for those)",
                  highlight=False, soft_wrap=True)


def _play_study(path: Path, paper: str, items: list, labels: list[str],
                owners: list[str | None], models: tuple[str, ...], quiet: bool, yes: bool,
                cost_limit: float | None, **options):
    """Play a study's plan: the shared rows, then each model's (timed), after printing the
    models' planned episodes, calls, tokens and cost (a pilot episode first for a model with
    none on disk) and, where the estimate exceeds --cost-limit, asking (or refusing without a
    terminal unless --yes); return the run."""
    import sys
    import time
    from dataclasses import replace

    from coordbench.reproduce.cost import (
        ModelPlan,
        add_wall,
        count,
        describe,
        estimate,
        per_episode,
        pilot_item,
    )
    from coordbench.runner.conditions import stats_entries

    run = run_dir(path)
    groups: dict[str | None, list[tuple[tuple, str]]] = {}
    for item, label, who in zip(items, labels, owners, strict=True):
        groups.setdefault(who, []).append((item, label))
    # --cost-limit caps this command's spend over everything it plays, the pilot included
    # (episodes the limit cut are not saved but were paid for: harness_stats counts them)
    first_entry = len(stats_entries(path))
    if models:
        plans = [count(run, ModelPlan(m, [i for i, _ in groups.get(m, [])])) for m in models]
        fresh = [p for p in plans if p.items and p.left and per_episode(
            run, [i[0].condition(i[1]) for i in p.items], 1) is None]
        if fresh:  # a pilot episode per model with none to estimate from (kept: it is one)
            play(path, [pilot_item(p) for p in fresh], quiet=quiet, report=False,
                 labels=[f"{paper} pilot ({p.model})" for p in fresh], **options)
            run = run_dir(path)  # the pilot registered its conditions
            plans = [count(run, p) for p in plans]
        est = estimate(run, plans, _priced(options["resources"]))
        if not quiet:
            err.print(f"{paper} study plan:\n" + "\n".join(describe(est)), highlight=False,
                      soft_wrap=True)
        unknown = [r["model"] for r in est["models"] if r["left"] and r["calls"] is None]
        what = None
        if cost_limit is not None and unknown:
            what = (f"the cost of {', '.join(unknown)} cannot be estimated (no finished "
                    f"episode: its pilot stopped at --cost-limit ${cost_limit:g}?)")
        piloted = sum(float(e.get("cost") or 0) for e in stats_entries(path)[first_entry:])
        if cost_limit is not None and not unknown and \
                piloted + est["total"]["cost"] > cost_limit:
            what = (f"the study is estimated at ${piloted + est['total']['cost']:.2f} (its "
                    f"pilot included), over --cost-limit ${cost_limit:g} (the run stops at "
                    "the limit)")
        if what is not None and not yes:
            if not sys.stdin.isatty():
                raise ConfigError(f"{what}: pass --yes to start anyway, or raise the limit")
            if not typer.confirm(f"{what}; start?", default=False, err=True):
                raise ConfigError(f"{what}: not started")
    order = [None, *models] if models else [None]
    limits = options.pop("limits")
    for who in order:
        todo = groups.get(who, [])
        if not todo:
            continue
        so_far = sum(float(e.get("cost") or 0) for e in stats_entries(path)[first_entry:])
        if who is not None and limits.cost_limit is not None and so_far >= limits.cost_limit:
            err.print(f"{paper}: --cost-limit ${limits.cost_limit:g} reached; the rows of "
                      f"{who} are not played (run the command again to go on)",
                      highlight=False, soft_wrap=True)
            continue
        start = time.monotonic()
        run = play(path, [i for i, _ in todo], quiet=quiet, report=False,
                   labels=[f"{paper} {label}" for _, label in todo],
                   limits=replace(limits, spent=so_far), **options)
        if who is not None:
            add_wall(path, who, time.monotonic() - start)
    try:  # the report once, after every row
        write_report(run)
    except CoordbenchError as e:
        err.print(f"warning: report not rewritten: {e}", highlight=False, soft_wrap=True)
    return run


def _priced(resources) -> object:
    """Return whether a model alias has prices in the registry the study uses."""
    from coordbench.llm.client import harness_for

    settings = getattr(resources, "harness", resources)
    harness = harness_for(settings) if settings is not None else None

    def priced(alias: str) -> bool:
        if harness is None:
            return False
        prices = harness.spec(alias).prices
        return bool(prices.prompt_per_mtok or prices.completion_per_mtok)
    return priced
