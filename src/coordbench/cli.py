"""The `coordbench` command line."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from coordbench import __version__
from coordbench.errors import ConfigError, CoordbenchError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="coordbench: measure how teams of agents coordinate.")
stat_app = typer.Typer(no_args_is_help=True, help="STAT: spatial task allocation at scale.")
app.add_typer(stat_app, name="stat")
meco_app = typer.Typer(no_args_is_help=True, help="MECoBench: household teams.")
app.add_typer(meco_app, name="mecobench")
models_app = typer.Typer(no_args_is_help=True, help="Model registry: list and check aliases.")
app.add_typer(models_app, name="models")
cons_app = typer.Typer(no_args_is_help=True, help="Coordination constructs D1-D4.")
app.add_typer(cons_app, name="constructs")
phys_app = typer.Typer(no_args_is_help=True,
                       help="Physical multi-robot collaboration (MuJoCo): demos, eval, train.")
app.add_typer(phys_app, name="physical")

err = Console(stderr=True)
# Tables are wide; when stdout is a file or a pipe, do not squeeze them into 80 columns.
out = Console() if sys.stdout.isatty() else Console(width=200)

DEFAULT_CONFIGS = "3A-6T-5x3,5A-25T-50x30,9A-25T-50x30"
DEFAULT_POLICIES = "random,greedy,matching,hungarian"


def _command_line() -> str:
    return "coordbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _progress(quiet: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err, disable=quiet, transient=False)


def _run_stat_conditions(out_dir: Path, specs: list, episodes: int, quiet: bool):
    from coordbench.core.rundir import RunDir
    from coordbench.suites.stat_eval import run_condition

    run = RunDir.create_or_open(out_dir, command=_command_line())
    with _progress(quiet) as prog:
        for spec in specs:
            task = prog.add_task(f"{spec.config} {spec.policy}", total=episodes)
            run_condition(run, spec, episodes, progress=lambda k, t=task: prog.advance(t, k))
    return run


@app.command()
def run(
    out_dir: Path = typer.Option(Path("runs/default"), "--out", help="Run directory."),
    configs: str = typer.Option(DEFAULT_CONFIGS, help="Comma-separated STAT configs."),
    policies: str = typer.Option(DEFAULT_POLICIES, help="Comma-separated scripted policies."),
    episodes: int = typer.Option(100, help="Episodes per condition (100 = the paper layouts)."),
    layouts: str = typer.Option("paper", help="paper | uniform"),
    seed: int = typer.Option(0, help="Policy seed (and layout seed for uniform layouts)."),
    household: bool = typer.Option(True, help="Also run rule-based household teams (v1)."),
    physical: int = typer.Option(10, help="Physical suite: expert and noisy-expert rollouts "
                                          "per task (0 skips it)."),
) -> None:
    """Run the default benchmark and save a report.

    STAT: the scripted allocators on three configurations. Household (MECoBench v1, 192
    cases): rule-based teams without communication and with broadcast, parallel (team of 3)
    and sequential (team of 2).
    """
    from coordbench.report import household_report
    from coordbench.report.stat_report import collect, console_table, write_report
    from coordbench.suites.stat_eval import StatEvalSpec

    specs = [StatEvalSpec(c.strip(), p.strip(), layouts, seed)
             for c in configs.split(",") for p in policies.split(",")]
    run_dir = _run_stat_conditions(out_dir, specs, episodes, quiet=False)
    wanted = {s.condition for s in specs}
    results = [r for r in collect(run_dir, episodes) if r.condition in wanted]
    extra = ""
    if household:
        _run_household_defaults(run_dir)
        hh = household_report.collect(run_dir)
        extra = household_report.markdown(hh) + household_report.tags_and_failures(run_dir)
        extra += "\n" + _run_construct_defaults(run_dir)
    if physical > 0:
        extra += "\n" + _run_physical_defaults(run_dir, physical)
    write_report(run_dir, results, extra)
    out.print(console_table(results))
    if household:
        out.print(household_report.console_table(hh))
    out.print(f"run directory: {run_dir.path}  (report: {run_dir.path / 'report.md'})")


def _run_physical_defaults(run_dir, rollouts: int) -> str:
    """Run the scripted experts (nominal and noisy) on every physical task; return the
    report section."""
    from coordbench.envs.physical.tasks import TASKS
    from coordbench.suites.physical.evaluate import evaluate_main, main_summary

    lines = ["## Physical collaboration (scripted experts, seeds 1..N)", "",
             "| task | policy | success | p1 | p2 | p3 | drops |", "|---|---|---|---|---|---|---|"]
    with _progress(False) as prog:
        for name in TASKS:
            for policy in ("expert", "expert_noisy"):
                bar = prog.add_task(f"physical {name} {policy}", total=rollouts)
                trs = evaluate_main(name, policy, rollouts, run_dir,
                                    on_done=lambda k, b=bar: prog.advance(b, k))
                s = main_summary(trs)
                cells = [s["success"], *s["phases"].values()]
                lines.append(f"| {name} | {policy} | " + " | ".join(
                    _pct(_estimate_json(e)) for e in cells) +
                    f" | {s['coupling']['drops'].mean:.2f} |")
    return "\n".join(lines) + "\n"


def _run_construct_defaults(run_dir) -> str:
    """Run rule-based planners on rep240; return the report section."""
    from coordbench.suites.constructs.eval import condition_name, report_markdown, run_condition
    from coordbench.suites.constructs.runner import ConstructSpec
    from coordbench.suites.constructs.suite import select

    raws = select("rep240")
    with _progress(False) as prog:
        for planner in ("central", "decentralized", "decentralized_comm"):
            spec = ConstructSpec(planner, "rule")
            bar = prog.add_task(f"constructs rep240 {planner}", total=len(raws))
            run_condition(run_dir, condition_name("rep240", None, None, spec), raws, spec,
                          lambda k, b=bar: prog.advance(b, k))
    return report_markdown(run_dir)


def _run_household_defaults(run_dir) -> None:
    from coordbench.suites.mecobench.eval import load_source, run_condition
    from coordbench.suites.mecobench.runner import HouseholdSpec

    with _progress(False) as prog:
        for structure, team in (("parallel", 3), ("sequential", 2)):
            source, cases = load_source(None, "v1", structure)
            for protocol in ("none", "broadcast"):
                bar = prog.add_task(f"household {structure} n={team} {protocol}",
                                    total=len(cases))
                run_condition(run_dir, source, cases, HouseholdSpec(structure, team, protocol),
                              lambda k, b=bar: prog.advance(b, k))


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """Recompute every table of a run from its saved trajectories; rewrite its report."""
    from coordbench.core.rundir import RunDir
    from coordbench.report import household_report
    from coordbench.report.stat_report import collect, console_table, write_report

    run_obj = RunDir.open(run_dir)
    results = collect(run_obj)
    hh = household_report.collect(run_obj)
    from coordbench.suites.constructs.eval import report_markdown

    write_report(run_obj, results, (household_report.markdown(hh)
                                    + household_report.tags_and_failures(run_obj)
                                    + household_report.model_usage(run_obj) if hh else "")
                 + report_markdown(run_obj))
    if results:
        out.print(console_table(results))
    if hh:
        out.print(household_report.console_table(hh))
    out.print(f"report: {run_obj.path / 'report.md'}")


@app.command()
def schema(out_file: Path | None = typer.Option(None, "--out", help="Write to this file.")
           ) -> None:
    """Print (or write) the JSON Schema of trajectory files."""
    from coordbench.core.atomic import write_atomic
    from coordbench.core.trajectory import json_schema_text

    text = json_schema_text()
    if out_file is None:
        sys.stdout.write(text + "\n")
    else:
        write_atomic(out_file, text + "\n")


@app.command()
def version() -> None:
    """Print the coordbench version."""
    out.print(__version__)


@stat_app.command("configs")
def stat_configs() -> None:
    """List the nine named STAT configurations."""
    from rich.table import Table

    from coordbench.envs.stat.config import CONFIGS

    table = Table(title="STAT configurations")
    for col in ("name", "agents", "tasks", "plane", "regime", "train steps", "obs dim"):
        table.add_column(col)
    for c in CONFIGS.values():
        table.add_row(c.name, str(c.agents), str(c.tasks), f"{c.width:g}x{c.height:g}", c.regime,
                      f"{c.train_steps:,}", str(c.obs_dim))
    out.print(table)


def _json_number(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@stat_app.command("eval")
def stat_eval(
    config: str = typer.Option(..., help="STAT config name, e.g. 5A-25T-50x30."),
    policy: str = typer.Option(..., help="random | greedy | matching | hungarian"),
    episodes: int = typer.Option(100, help="Number of episodes (layouts 0..N-1)."),
    layouts: str = typer.Option("paper", help="paper (seeds s*1000+i) | uniform"),
    seed: int = typer.Option(0, help="Policy seed (and layout seed for uniform layouts)."),
    episode_limit: int = typer.Option(700, help="Truncate episodes at this many steps."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object of metrics."),
) -> None:
    """Evaluate a scripted allocator; mean and 95% CI of every diagnostic over episodes."""
    from coordbench.report.stat_report import collect, console_table
    from coordbench.suites.stat_eval import StatEvalSpec, condition_metrics, summarize

    spec = StatEvalSpec(config, policy, layouts, seed, episode_limit)
    out_dir = out_dir or Path("runs") / "stat-eval" / spec.condition
    run_obj = _run_stat_conditions(out_dir, [spec], episodes, quiet=as_json)
    summary = summarize(condition_metrics(run_obj, spec.condition, episodes))
    if as_json:
        payload = {k: {"mean": _json_number(e.mean), "ci95": _json_number(e.ci95), "n": e.n}
                   for k, e in summary.items()}
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    results = [r for r in collect(run_obj, episodes) if r.condition == spec.condition]
    out.print(console_table(results, title=f"STAT {config} {policy}"))
    out.print(f"run directory: {run_obj.path}")


@stat_app.command("train")
def stat_train(
    config: str = typer.Option(..., help="STAT config name."),
    algo: str = typer.Option(..., help="dqn | fdqn | vdn | qmix | qtran | iql | coma"),
    steps: int | None = typer.Option(None, help="Environment steps (default: the paper's)."),
    seeds: str = typer.Option("0-4", help="Training seeds, e.g. 0-4."),
    utd: float = typer.Option(8.0, help="Transitions replayed per transition collected "
                                        "(off-policy methods; the paper's learners: ~32)."),
    num_envs: int | None = typer.Option(None, help="Environments stepped together "
                                                   "(default 32; coma 8)."),
    eval_every: int = typer.Option(10_000, help="Environment steps between evaluations."),
    eval_episodes: int = typer.Option(20, help="Greedy episodes per evaluation "
                                               "(paper layouts seed*1000+i)."),
    arch: str = typer.Option("mlp", help="Agent network: mlp (the paper's) | pair "
                                         "(task-equivariant, same observation; not dqn/fdqn)"),
    executor: str = typer.Option("local", help="local (worker processes) | ray "
                                               "(RAY_ADDRESS or a local Ray instance)"),
    workers: int = typer.Option(2, help="Parallel seeds (local processes or Ray CPUs)."),
    out_dir: Path = typer.Option(Path("runs/train"), "--out", help="Results directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train a cooperative MARL method on STAT over seeds; final and max return with CIs."""
    _need_torch()
    from coordbench.learn.core import ARCHS
    from coordbench.learn.registry import check_algo, paper_config
    from coordbench.learn.sweep import EXECUTORS, parse_seeds, sweep
    from coordbench.learn.sweep import summarize as summarize_runs

    check_algo(algo, config)
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; choose from {', '.join(EXECUTORS)}")
    num_envs = num_envs or (8 if algo == "coma" else 32)
    if steps is not None and steps < num_envs:
        raise ConfigError(f"--steps must be at least --num-envs ({num_envs})")
    if eval_episodes < 1 or eval_every < 1 or workers < 1 or not utd > 0:
        raise ConfigError("--eval-episodes, --eval-every, --workers and --utd must be positive")
    overrides = {"utd": utd, "num_envs": num_envs, "eval_every": eval_every,
                 "eval_episodes": eval_episodes}
    if arch != "mlp":
        if arch not in ARCHS:
            raise ConfigError(f"unknown --arch {arch!r}; choose from {', '.join(ARCHS)}")
        if algo in ("dqn", "fdqn"):
            raise ConfigError(f"--arch {arch} needs per-agent networks; {algo} has its own "
                              f"(joint or multi-head) network")
        overrides["extra"] = {"arch": arch}
    if steps is not None:
        overrides["total_steps"] = steps
    tcs = [paper_config(config, algo, seed=s, **overrides) for s in parse_seeds(seeds)]
    results = sweep(tcs, out_dir, workers, executor)
    summary = summarize_runs(results)
    if as_json:
        sys.stdout.write(json.dumps({k: _estimate_json(e) for k, e in summary.items()}) + "\n")
        return
    from rich.table import Table

    table = Table(title=f"{algo} on {config}, seeds {seeds}")
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    for k, e in summary.items():
        table.add_row(k, e.fmt(4))
    out.print(table)


@stat_app.command("table")
def stat_table(
    dirs: list[Path] = typer.Argument(..., help="Directories of training results."),
    fmt: str = typer.Option("md", "--format", help="md | csv"),
    plots: Path | None = typer.Option(None, help="Also write learning-curve PNGs here."),
    references: bool = typer.Option(True, "--references/--no-references",
                                    help="Add scripted allocators as reference rows."),
    output: Path | None = typer.Option(None, "--output", help="Write the table to this file."),
) -> None:
    """Paper-style tables (final/max return, conflicts, diversity, throughput) from runs."""
    from coordbench.core.atomic import write_atomic
    from coordbench.report import stat_train_report as rep

    rep.check_format(fmt)
    results = rep.load_results(dirs)
    built = rep.build(results, references=references)
    text = rep.markdown(built) if fmt == "md" else rep.csv_text(built)
    if output:
        write_atomic(output, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if plots:
        for p in rep.plot_curves(results, plots, built["reference_samples"]):
            err.print(f"wrote {p}")


def _need_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ConfigError("the STAT learners need PyTorch: pip install 'coordbench[learn]' "
                          "(torch==2.13.0, CPU)") from None


@stat_app.command("speed")
def stat_speed(
    config: str = typer.Option("5A-25T-50x30", help="STAT config name."),
    batch: int = typer.Option(4096, help="Number of environments stepped together."),
    seconds: float = typer.Option(5.0, help="Measurement time."),
    no_obs: bool = typer.Option(False, "--no-obs", help="Skip building observation vectors."),
    threads: int | None = typer.Option(None, help="Threads for observations (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Measure joint environment steps per second under random valid actions."""
    from dataclasses import asdict

    from coordbench.envs.stat.config import get_config
    from coordbench.errors import ConfigError
    from coordbench.suites.stat_speed import measure_speed

    if batch < 1:
        raise ConfigError(f"--batch must be >= 1, got {batch}")
    if not seconds > 0:
        raise ConfigError(f"--seconds must be > 0, got {seconds}")
    res = measure_speed(get_config(config), batch, seconds, with_obs=not no_obs, threads=threads)
    if as_json:
        sys.stdout.write(json.dumps(asdict(res)) + "\n")
    else:
        out.print(f"{res.config} batch {res.batch}: {res.steps_per_s:,.0f} joint steps/s "
                  f"({res.steps:,} steps, {res.episodes:,} episodes in {res.seconds:.1f} s"
                  f"{'' if res.with_obs else ', no observations'}, {res.threads} thread(s))")


def _estimate_json(e) -> dict:
    return {"mean": _json_number(e.mean), "ci95": _json_number(e.ci95), "n": e.n}


@meco_app.command("run")
def mecobench_run(
    tasks: Path | None = typer.Option(None, help="A MECoBench task file (JSON)."),
    suite: str | None = typer.Option(None, help="A built-in instance set, e.g. v1."),
    structure: str = typer.Option("parallel", help="parallel | sequential"),
    team: int = typer.Option(2, help="Team size (sequential: 2)."),
    protocol: str = typer.Option("none", help="none|broadcast|discuss|leader|leader_vision|"
                                              "shared_memory"),
    agents: str = typer.Option("rule", help="oracle | rule | llm"),
    model: str | None = typer.Option(None, help="Model alias of every agent (agents=llm)."),
    leader_model: str | None = typer.Option(None, help="Model alias of the leader (agent 0)."),
    models: Path | None = typer.Option(None, help="Model registry file (YAML)."),
    max_connections: int | None = typer.Option(None, help="Cap concurrent calls per model."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Reuse cached replies."),
    cache_path: Path | None = typer.Option(None, help="Response cache file (sqlite)."),
    max_tokens_per_episode: int | None = typer.Option(None, help="Stop an episode's team "
                                                      "after this many model tokens."),
    cost_limit: float | None = typer.Option(None, help="Stop the run at this spend ($)."),
    max_steps: int | None = typer.Option(None, help="Cap team steps (short smoke runs)."),
    max_reply_tokens: int | None = typer.Option(None, help="Cap tokens per model reply."),
    in_flight: int = typer.Option(8, help="Episodes played concurrently (agents=llm)."),
    prior: str = typer.Option("full", help="full|no_appearance|no_location|none|noisy"),
    limit: int | None = typer.Option(None, help="Play only the first K cases."),
    seed: int = typer.Option(0, help="Base seed; case k uses seed + k."),
    images: bool = typer.Option(False, "--images", help="Render and store agents' views."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a household team on MECoBench cases; SR, CR, AUC, DOL, CAR, HFR, spatial errors."""
    from rich.table import Table

    from coordbench.core.rundir import RunDir
    from coordbench.errors import ConfigError
    from coordbench.suites.mecobench.eval import (
        HEADLINE,
        condition_values,
        load_source,
        run_condition,
        summarize,
    )
    from coordbench.suites.mecobench.runner import HouseholdSpec

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {limit}")
    if in_flight < 1:
        raise ConfigError(f"--in-flight must be >= 1, got {in_flight}")
    spec = HouseholdSpec(structure, team, protocol, agents, prior, seed, model, leader_model)
    source, cases = load_source(str(tasks) if tasks else None, suite, structure)
    cases = cases[:limit] if limit else cases
    out_dir = out_dir or Path("runs") / "mecobench"
    harness = None
    if agents == "llm":
        harness = _harness(models, cache, cache_path, max_connections, seed)
        for alias in {spec.alias(i) for i in range(team)}:
            harness.provider(alias)  # unknown alias or missing key: fail before any work
    run_obj = RunDir.create_or_open(out_dir, command=_command_line())
    with _progress(as_json) as prog:
        bar = prog.add_task(f"{structure} n={team} {protocol} {agents}", total=len(cases))
        if harness is None:
            cond = run_condition(run_obj, source, cases, spec, lambda k: prog.advance(bar, k),
                                 images=images)
        else:
            import asyncio

            from coordbench.suites.mecobench.eval import arun_condition

            def tick(k: int) -> None:
                st = harness.stats
                prog.update(bar, advance=k, description=(
                    f"{structure} n={team} {protocol} {model}: calls {st.calls} "
                    f"cached {st.cache_hits} retries {st.retries} in flight {st.in_flight} "
                    f"tokens {st.prompt_tokens + st.completion_tokens:,}"))

            cond = asyncio.run(arun_condition(
                run_obj, source, cases, spec, harness, progress=tick, images=images,
                in_flight=in_flight, max_tokens_per_episode=max_tokens_per_episode,
                cost_limit=cost_limit, max_steps=max_steps, max_reply_tokens=max_reply_tokens))
    summary = summarize(condition_values(run_obj, cond, len(cases)))
    if as_json:
        payload = {"cases": len(cases)}
        payload.update({k: _estimate_json(e) for k, e in summary.items()})
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    table = Table(title=f"MECoBench {structure}, team {team}, {protocol}, {agents}, {prior}")
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    table.add_column("n", justify="right")
    for k in (*HEADLINE, "tokens_per_step", "protocol_failures", "duplicate_grabs",
              "wrong_class_grabs",
              "hallucinated_completion", "steps"):
        e = summary[k]
        table.add_row(k, "n/a" if e.n == 0 else e.fmt(3), str(e.n))
    out.print(table)
    out.print(f"run directory: {run_obj.path}")


@cons_app.command("run")
def constructs_run(
    subset: str = typer.Option("all", help="all (900 instances) | rep240"),
    instances: Path | None = typer.Option(None, help="An instance file (JSON list) instead "
                                                     "of the built-in set."),
    construct: str | None = typer.Option(None, help="D1 | D2 | D3 | D4 (default: all)."),
    team: int | None = typer.Option(None, help="2 | 3 | 4 (default: all)."),
    planner: str = typer.Option("central", help="central | decentralized | "
                                                "decentralized_comm"),
    agents: str = typer.Option("rule", help="oracle | rule | llm"),
    model: str | None = typer.Option(None, help="Model alias (agents=llm)."),
    models: Path | None = typer.Option(None, help="Model registry file (YAML)."),
    observation: str = typer.Option("blind", help="image | blind"),
    order: str = typer.Option("index", help="Landing order within a step: index | reverse"),
    limit: int | None = typer.Option(None, help="Play only the first K instances."),
    seed: int = typer.Option(0, help="Episode seed."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Reuse cached replies."),
    max_connections: int | None = typer.Option(None, help="Cap concurrent calls per model."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run planners on the construct instances; SR, construct score and legality."""
    from rich.table import Table

    from coordbench.core.rundir import RunDir
    from coordbench.suites.constructs.eval import HEADLINE, condition_name, run_condition
    from coordbench.suites.constructs.eval import summarize as summarize_constructs
    from coordbench.suites.constructs.runner import ConstructSpec
    from coordbench.suites.constructs.suite import select

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {limit}")
    spec = ConstructSpec(planner, agents, observation, model, seed, order)
    if instances is not None:
        from coordbench.suites.constructs.runner import load_instance

        try:
            raws = json.loads(instances.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"{instances}: not a readable JSON file ({e})") from None
        if not isinstance(raws, list):
            raise ConfigError(f"{instances}: expected a JSON list of instances")
        for k, raw in enumerate(raws):
            load_instance(raw, f"{instances.name}[{k}] ({raw.get('task_id', '?')})"
                          if isinstance(raw, dict) else f"{instances.name}[{k}]")
        subset = f"file-{instances.stem}"
    else:
        raws = select(subset, construct, team)
    raws = raws[:limit] if limit else raws
    harness = None
    if agents == "llm":
        harness = _harness(models, cache, None, max_connections, seed)
        harness.provider(model)
    cond = condition_name(subset, construct, team, spec) + (f"_limit{limit}" if limit else "")
    run_obj = RunDir.create_or_open(out_dir or Path("runs") / "constructs",
                                    command=_command_line())
    with _progress(as_json) as prog:
        bar = prog.add_task(f"constructs {planner} {agents}", total=len(raws))
        run_condition(run_obj, cond, raws, spec, lambda k: prog.advance(bar, k), harness)
    overall, per = summarize_constructs(run_obj, cond, len(raws))
    if as_json:
        payload = {k: _estimate_json(overall[k]) for k in HEADLINE if k in overall}
        payload["per_construct"] = {c: {k: _estimate_json(d[k]) for k in HEADLINE if k in d}
                                    for c, d in per.items()}
        payload["instances"] = len(raws)
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    table = Table(title=f"constructs: {planner}, {agents}, {observation}")
    for col in ("construct", "n", "SR", "CS", "legal rate", "steps on success"):
        table.add_column(col)
    for c, d in sorted(per.items()):
        table.add_row(c, str(d["SR"].n), d["SR"].fmt(3),
                      d["CS"].fmt(3) if "CS" in d else "n/a", d["legal_rate"].fmt(3),
                      d["steps_on_success"].fmt(1) if "steps_on_success" in d else "n/a")
    out.print(table)
    out.print(f"run directory: {run_obj.path}")


def _harness(models: Path | None, cache: bool, cache_path: Path | None,
             max_connections: int | None, seed: int | None):
    from coordbench.llm.cache import DEFAULT_CACHE, ResponseCache
    from coordbench.llm.client import ModelHarness
    from coordbench.llm.registry import load_registry

    if max_connections is not None and max_connections < 1:
        raise ConfigError(f"--max-connections must be >= 1, got {max_connections}")
    store = ResponseCache(cache_path or DEFAULT_CACHE) if cache else None
    return ModelHarness(load_registry(models), store, seed=seed,
                        max_connections=max_connections)


@models_app.command("list")
def models_list(models: Path | None = typer.Option(None, help="Model registry file (YAML).")
                ) -> None:
    """List the model aliases this run knows (built-ins plus the registry file)."""
    from rich.table import Table

    from coordbench.llm.registry import load_registry

    table = Table(title="models")
    for col in ("alias", "provider", "model", "base_url", "images", "max conn"):
        table.add_column(col)
    for alias, spec in sorted(load_registry(models).models.items()):
        table.add_row(alias, spec.provider, spec.model, spec.base_url or "-",
                      "yes" if spec.supports_images else "no", str(spec.max_connections))
    out.print(table)


@models_app.command("check")
def models_check(alias: str = typer.Argument(..., help="Model alias."),
                 models: Path | None = typer.Option(None, help="Model registry file (YAML).")
                 ) -> None:
    """Make one ping call to a model; fail with one clear line if it cannot be reached."""
    import asyncio

    harness = _harness(models, False, None, None, None)
    harness.provider(alias)
    spec = harness.spec(alias)
    spec_retry = spec.model_copy(update={"max_retries": 1})
    harness.registry.models[alias] = spec_retry
    done = asyncio.run(harness.check(alias))
    if done.error:
        where = spec.base_url or "the local provider"
        raise ConfigError(f"model {alias!r} at {where} failed: {done.error}")
    out.print(f"{alias}: ok ({done.latency_s:.2f} s, {done.prompt_tokens}+"
              f"{done.completion_tokens} tokens): {done.text.strip()[:60]!r}")


def _physical_tasks(task: str) -> list[str]:
    from coordbench.envs.physical.tasks import TASKS, get_task

    if task == "all":
        return list(TASKS)
    get_task(task)
    return [task]


@phys_app.command("demos")
def physical_demos(
    task: str = typer.Option(..., help="Task name or all."),
    n: int = typer.Option(60, help="Successful demonstrations per task (5/6 train)."),
    images: bool = typer.Option(False, "--images", help="Also render egocentric frames "
                                                        "(10 Hz, replayed from states)."),
    size: int = typer.Option(64, help="Frame size (pixels, square)."),
    out_dir: Path = typer.Option(Path("runs/demos"), "--out", help="Output directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Record noisy-expert demonstrations (full states, actions, observations, phases)."""
    from coordbench.suites.physical.demos import make_demos

    if n < 1 or size < 16:
        raise ConfigError("--n must be >= 1 and --size >= 16")
    metas = {}
    for name in _physical_tasks(task):
        metas[name] = make_demos(name, n, out_dir, images=images, size=size)
        if not as_json:
            m = metas[name]
            out.print(f"{name}: {m['episodes']} episodes, rejection rate "
                      f"{m['rejection_rate']:.1%} -> {out_dir}")
    if as_json:
        sys.stdout.write(json.dumps(metas) + "\n")


@phys_app.command("eval")
def physical_eval(
    task: str = typer.Option(..., help="Task name or all."),
    policy: str = typer.Option("expert", help="expert | expert_noisy | PATH (checkpoint)"),
    rollouts: int = typer.Option(100, help="Rollouts with seeds 1..N."),
    phase_level: bool = typer.Option(False, "--phase-level", help="Also run phase-level "
                                     "evaluation from demonstrations."),
    demos: Path = typer.Option(Path("runs/demos"), help="Demonstrations directory "
                                                       "(for --phase-level)."),
    per_phase: int = typer.Option(50, help="Phase-level rollouts per phase."),
    out_dir: Path = typer.Option(Path("runs/physical"), "--out", help="Run directory "
                                                                      "(resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Evaluate a policy: success and cumulative phase rates with 95% CIs (per task)."""
    from coordbench.core.rundir import RunDir
    from coordbench.suites.physical.evaluate import (
        evaluate_main,
        evaluate_phases,
        main_summary,
        phase_summary,
    )

    if rollouts < 1 or per_phase < 1:
        raise ConfigError("--rollouts and --per-phase must be >= 1")
    names = _physical_tasks(task)
    run_dir = RunDir.create_or_open(out_dir, command=_command_line())
    payload = {}
    with _progress(as_json) as prog:
        for name in names:
            bar = prog.add_task(f"{name} {Path(policy).name}", total=rollouts)
            trs = evaluate_main(name, policy, rollouts, run_dir,
                                on_done=lambda k, b=bar: prog.advance(b, k))
            summ = main_summary(trs)
            entry = {"success": _estimate_json(summ["success"]),
                     "phases": {k: _estimate_json(v) for k, v in summ["phases"].items()},
                     "failure": summ["failure"],
                     "coupling": {k: _estimate_json(v) for k, v in summ["coupling"].items()}}
            if phase_level:
                pbar = prog.add_task(f"{name} phase level", total=3 * per_phase)
                by_phase = evaluate_phases(name, policy, demos / f"{name}_train.npz", run_dir,
                                           per_phase=per_phase,
                                           on_done=lambda k, b=pbar: prog.advance(b, k))
                ps = phase_summary(name, by_phase)
                entry["phase_level"] = {
                    "phases": {k: _estimate_json(v) for k, v in ps["phases"].items()},
                    "collaborative": _estimate_json(ps["collaborative"]),
                    "non_collaborative": _estimate_json(ps["non_collaborative"])}
            payload[name] = entry
    if as_json:
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    from rich.table import Table

    table = Table(title=f"physical: {policy}, seeds 1..{rollouts}")
    for col in ("task", "success", "p1", "p2", "p3", "fails at p1/p2/p3", "drops"):
        table.add_column(col, justify="right" if col != "task" else "left")
    for name, e in payload.items():
        f = e["failure"]
        table.add_row(name, _pct(e["success"]), *(_pct(e["phases"][p]) for p in
                                                  ("p1", "p2", "p3")),
                      f"{f['fail_p1']:.0%}/{f['fail_p2']:.0%}/{f['fail_p3']:.0%}",
                      f"{e['coupling']['drops']['mean']:.2f}")
    out.print(table)
    for name, e in payload.items():
        if "phase_level" in e:
            pl = e["phase_level"]
            out.print(f"{name} phase level: " + ", ".join(
                f"{k} {_pct(v)}" for k, v in pl["phases"].items()) +
                f"; collaborative {_pct(pl['collaborative'])}, non-collaborative "
                f"{_pct(pl['non_collaborative'])}")
    out.print(f"run directory: {run_dir.path}")


@phys_app.command("train")
def physical_train(
    task: str = typer.Option(..., help="Task name."),
    algo: str = typer.Option("bc", help="bc | act | dp"),
    obs: str = typer.Option("state", help="state | image"),
    scope: str = typer.Option("local", help="local (own observation) | global (all robots')"),
    sharing: str = typer.Option("separate", help="separate (one network per robot) | shared"),
    agent_id: bool = typer.Option(False, "--agent-id", help="Shared networks: add a robot id."),
    steps: int = typer.Option(2000, help="Gradient steps per network."),
    batch: int = typer.Option(64, help="Batch size."),
    seed: int = typer.Option(0, help="Training seed."),
    demos: Path = typer.Option(Path("runs/demos"), help="Demonstrations directory."),
    out_path: Path | None = typer.Option(None, "--out", help="Checkpoint file (.pt)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train an imitation baseline (BC, ACT-style, DP-style) on a task's demonstrations."""
    _need_torch()
    from coordbench.envs.physical.tasks import get_task
    from coordbench.suites.physical.baselines import default_config, train_policy

    t = get_task(task)
    cfg = default_config(task, algo, t.n_robots, obs=obs, scope=scope, sharing=sharing,
                         agent_id=agent_id, steps=steps, batch=batch, seed=seed)
    tag = f"{algo}_{obs}_{scope}_{sharing}{'_id' if agent_id else ''}_seed{seed}"
    out_path = out_path or Path("runs/policies") / f"{task}_{tag}.pt"
    res = train_policy(cfg, demos, out_path)
    if as_json:
        sys.stdout.write(json.dumps(res) + "\n")
        return
    val = "" if res["val_loss"] is None else f", val loss {res['val_loss']:.4f}"
    out.print(f"{task} {tag}: train loss {res['train_loss']:.4f}{val} "
              f"({res['parameters']:,} parameters, {res['train_s']:.0f} s) -> {out_path}")


def _pct(e: dict) -> str:
    if e["mean"] is None:
        return "n/a"
    ci = f" ± {100 * e['ci95']:.1f}" if e.get("ci95") is not None else ""
    return f"{100 * e['mean']:.1f}%{ci}"


def main() -> None:
    """Entry point of the `coordbench` script: user errors become one line and exit code 2."""
    try:
        app()
    except CoordbenchError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted; finished episodes are saved, rerun the command to resume")
        sys.exit(130)


if __name__ == "__main__":
    main()
