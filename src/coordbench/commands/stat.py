"""`coordbench stat ...`: configurations, evaluation, training, tables, speed."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file, check_range
from coordbench.core.stats import few
from coordbench.errors import ConfigError

from .common import (
    dial_option,
    emit_json,
    err,
    executor_option,
    need_torch,
    out,
    say_err,
    workers_option,
    write_report,
)
from .limits import MAX_EPISODES, MAX_SEED, MAX_STEPS, MAX_WORKERS
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="STAT: spatial task allocation at scale.")


@app.command("configs")
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


@app.command("eval")
@run_options()
def stat_eval(
    config: str = typer.Option(..., help="STAT config name, e.g. 5A-25T-50x30."),
    policy: str = typer.Option(..., help="random | greedy | matching | hungarian | "
                                         "greedy_obs | hungarian_obs | nearest_obs | "
                                         "greedy_mem | nearest_mem | "
                                         "rule (minds under --protocol) | "
                                         "llm (with --model) | PATH (a checkpoint of "
                                         "`stat train`)"),
    episodes: int = typer.Option(100, help="Number of episodes (layouts 0..N-1)."),
    layouts: str = typer.Option("paper", help="paper (seeds s*1000+i) | uniform"),
    seed: int = typer.Option(0, help="Policy seed (and layout seed for uniform layouts)."),
    episode_limit: int = typer.Option(700, help="Truncate episodes at this many steps."),
    model: str | None = typer.Option(None, help="Model alias of every agent (policy llm)."),
    protocol: str = typer.Option("none", help="policies llm and rule: none | broadcast | "
                                              "leader | shared_memory"),
    dial: list[str] | None = dial_option(),
    team: str | None = typer.Option(None, help="Who sits where (policies rule and llm): "
                                               "agent_0=llm:A,agent_1=rule,... (one seat "
                                               "per agent of the configuration)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Evaluate a scripted allocator, a checkpoint or a model-driven team; mean and 95% CI
    of every diagnostic over episodes (--json: one object of metrics)."""
    from coordbench.core.stats import summarize
    from coordbench.metrics.stat import KINDS
    from coordbench.report.format import estimate_json
    from coordbench.report.stat_report import collect, console_table
    from coordbench.runner import ModelResources
    from coordbench.suites.stat.suite import LLM, SUITE, StatEvalSpec, condition_metrics

    check_range("--episodes", episodes, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--episode-limit", episode_limit, 1, MAX_STEPS)
    opts.check(out_dir)
    from coordbench.agents.dials import parse_dials

    seats = None
    if team is not None:
        from coordbench.agents.seats import parse_team

        parsed = parse_team(team, ("llm", "rule"), "STAT")
        if isinstance(parsed, int):
            raise ConfigError("stat eval's team size is the configuration's: --team names "
                              "the seats (agent_0=llm:A,agent_1=rule,...)")
        seats = parsed
        if policy == "rule" and any(s.kind == "llm" for s in seats):
            policy = LLM  # a team with a model seat is model-driven
    spec = StatEvalSpec(config, policy, layouts, seed, episode_limit, model, protocol,
                        parse_dials(dial), seats)
    aliases = {model} if seats is None else {s.arg for s in seats if s.kind == "llm"}
    settings = opts.harness(aliases, seed) if policy == LLM else None
    run = opts.play(out_dir or Path("runs") / "stat-eval" / spec.condition, [(SUITE, spec)],
                    limit=episodes, settings=settings,
                    resources=ModelResources(settings, opts.max_reply_tokens)
                    if policy == LLM else None,
                    labels=[f"{config} {policy}" + (f" {model} {protocol}" if model else "")])
    if opts.as_json:
        summary = summarize(condition_metrics(run, spec.condition, episodes), KINDS)
        emit_json({k: estimate_json(e) for k, e in summary.items()})
        return
    out.print(console_table(collect(run, [spec.condition], episodes),
                            title=f"STAT {config} {policy}"))
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


@app.command("train")
def stat_train(
    config: str = typer.Option(..., help="STAT config name."),
    algo: str = typer.Option(..., help="dqn | fdqn | vdn | qmix | qtran | iql | coma | "
                                            "mappo | ippo"),
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
                                         "(task-equivariant, same observation; not dqn/fdqn) "
                                         "| pair-seq (pair, agents deciding in index order, "
                                         "each seeing the lower agents' picks; mappo/ippo)"),
    lr: float | None = typer.Option(None, help="Learning rate (default: the paper's Table 4)."),
    eps_anneal_steps: int | None = typer.Option(
        None, help="Environment steps over which epsilon decays linearly (default: the "
                   "paper's fraction of the run)."),
    num_bins: int | None = typer.Option(
        None, help="Distance bins of the observation (default: the paper's 5). Any other "
                   "count is a richer observation, not the paper's: its runs are filed "
                   "as METHOD+binsK."),
    memory: bool = typer.Option(
        False, "--memory", help="Give the agents the observation memory (each executed "
                                "task's row of bins; --arch pair or pair-seq, mappo/ippo). "
                                "Runs are filed as METHOD+mem."),
    executor: str = executor_option("process"),
    workers: int = workers_option(2),
    out_dir: Path = typer.Option(Path("runs/train"), "--out", help="Results directory."),
    snapshot_every: float = typer.Option(60.0, "--snapshot-every", help="Seconds between "
                                         "snapshots of a seed in training (a killed sweep "
                                         "continues from the last one; 0: none)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train a cooperative MARL method on STAT over seeds (one seed per worker); final and
    max return with CIs."""
    need_torch()
    from coordbench.learn.methods import train_configs
    from coordbench.learn.sweep import MAX_NUM_ENVS, MAX_TRAIN_STEPS, parse_seeds, summarize, sweep
    from coordbench.report.format import estimate_json
    from coordbench.runner import check_executor

    check_executor(executor, workers)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--steps", steps, 1, MAX_TRAIN_STEPS)
    check_range("--utd", utd, 0, 1000, low_open=True)
    check_range("--num-envs", num_envs, 1, MAX_NUM_ENVS)
    check_range("--eval-every", eval_every, 1, MAX_TRAIN_STEPS)
    check_range("--eval-episodes", eval_episodes, 1, MAX_EPISODES)
    check_range("--lr", lr, 0, 10, low_open=True)
    check_range("--eps-anneal-steps", eps_anneal_steps, 1, MAX_TRAIN_STEPS)
    check_range("--snapshot-every", snapshot_every, 0, 86_400)
    check_out_dir(out_dir)
    tcs = train_configs(config, algo, parse_seeds(seeds), steps=steps, utd=utd,
                        num_envs=num_envs, eval_every=eval_every, eval_episodes=eval_episodes,
                        arch=arch, lr=lr, eps_anneal_steps=eps_anneal_steps,
                        num_bins=num_bins, memory=memory)
    say = say_err  # stderr, --json too
    summary = summarize(sweep(tcs, out_dir, workers, executor, say=say,
                              snapshot_every_s=snapshot_every))
    from coordbench.report.compose import open_for_report

    write_report(open_for_report(out_dir))
    if as_json:
        emit_json({k: estimate_json(e) for k, e in summary.items()})
        return
    from rich.table import Table

    table = Table(title=f"{algo} on {config}, seeds {seeds}")
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    for k, e in summary.items():
        table.add_row(k, e.fmt(4))
    out.print(table)


@app.command("tune")
def stat_tune(
    config: str = typer.Option(..., help="STAT config name (the paper tunes on one per size "
                                         "class: 3A-6T-5x3, 5A-25T-25x15, 5A-25T-50x30)."),
    algo: str = typer.Option(..., help="Method to tune (as for `stat train`)."),
    lrs: str = typer.Option("3e-4,1e-3", help="Learning rates of the grid (the paper's)."),
    eps_fracs: str = typer.Option("0.2,0.4", help="Epsilon-decay fractions of the grid "
                                                  "(the paper's; ignored by mappo/ippo)."),
    steps: int | None = typer.Option(None, help="Environment steps per run (default: the "
                                                "paper's)."),
    seeds: str = typer.Option("0-2", help="Training seeds per grid point."),
    utd: float = typer.Option(8.0, help="Transitions replayed per transition collected."),
    eval_every: int = typer.Option(10_000, help="Environment steps between evaluations."),
    eval_episodes: int = typer.Option(20, help="Greedy episodes per evaluation."),
    executor: str = executor_option("process"),
    workers: int = workers_option(2),
    out_dir: Path = typer.Option(Path("runs/tune"), "--out", help="Directory: one resumable "
                                 "sub-directory per grid point, and tune.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the tuning record as JSON."),
) -> None:
    """Run the paper's hyperparameter grid (its Appendix D) and select by mean evaluation
    return over the final 20% of checkpoints; writes OUT/tune.json with the chosen settings."""
    need_torch()
    from coordbench.learn.methods import train_configs
    from coordbench.learn.sweep import MAX_TRAIN_STEPS, parse_seeds
    from coordbench.learn.tune import tune
    from coordbench.runner import check_executor

    check_executor(executor, workers)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--steps", steps, 1, MAX_TRAIN_STEPS)
    check_range("--eval-every", eval_every, 1, MAX_TRAIN_STEPS)
    check_range("--eval-episodes", eval_episodes, 1, MAX_EPISODES)
    grid_lrs, grid_fracs = _floats("--lrs", lrs), _floats("--eps-fracs", eps_fracs)
    check_out_dir(out_dir)
    base = train_configs(config, algo, parse_seeds(seeds), steps=steps, utd=utd,
                         eval_every=eval_every, eval_episodes=eval_episodes)
    say = say_err  # stderr, --json too
    record = tune(base, out_dir, grid_lrs, grid_fracs, workers, executor, say=say)
    if as_json:
        emit_json(record)
        return
    from rich.table import Table

    table = Table(title=f"Tuning {algo} on {config}", caption=f"selected by {record['rule']}")
    for col in ("lr", "epsilon-decay fraction", "final-20% return", "curve mean", "chosen"):
        table.add_column(col)
    for p in record["grid"]:
        f, c = p["final_20pct"], p["curve_mean"]
        table.add_row(f"{p['lr']:g}", f"{p['eps_frac']:g}", _pm(f), _pm(c),
                      "yes" if p["chosen"] else "")
    out.print(table)
    out.print(f"chosen: lr {record['chosen']['lr']:g}, epsilon-decay fraction "
              f"{record['chosen']['eps_frac']:g}  (record: {out_dir / 'tune.json'})")


def _floats(flag: str, text: str) -> list[float]:
    """Return the comma-separated numbers of a grid option (one-line ConfigError)."""
    from coordbench.errors import ConfigError

    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not vals or len(vals) > 16 or len(set(vals)) != len(vals):
        raise ConfigError(f"{flag} must list 1 to 16 distinct numbers, got {text!r}")
    return vals


def _pm(e: dict) -> str:
    return (f"{e['mean']:.2f}" + (f" ± {e['ci95']:.2f}" if e.get("ci95") is not None else "")
            + few(e.get("n")))


@app.command("table")
def stat_table(
    dirs: list[Path] = typer.Argument(..., help="Directories of training results."),
    fmt: str = typer.Option("md", "--format", help="md | csv"),
    plots: Path | None = typer.Option(None, help="Also write learning-curve PNGs here."),
    references: bool = typer.Option(True, "--references/--no-references",
                                    help="Add scripted allocators as reference rows."),
    output: Path | None = typer.Option(None, "--output", help="Write the table to this file."),
    scaling: bool = typer.Option(False, "--scaling", help="Print the controlled scaling "
                                 "comparisons instead (the paper's Table 14 form)."),
) -> None:
    """Paper-style tables (final/max return, conflicts, diversity, throughput) from runs;
    with --scaling, the paper's Table 14: per method and matched pair of configurations, the
    direction of each metric's change and its Welch significance."""
    import sys

    from coordbench.core.atomic import write_atomic
    from coordbench.report import stat_train_report as rep

    rep.check_format(fmt)
    for d in dirs:
        check_in_dir(d, "DIRS", "training directory")
    if output:
        check_out_file(output, "--output")
    if plots:
        check_out_dir(plots, "--plots")
    results = rep.load_results(dirs)
    built = rep.build(results, references=references)
    if scaling:
        from coordbench.analyses.stat import scaling as scaling_changes

        methods = built["methods"] + built["references"]
        sc = scaling_changes(rep.seed_samples(built, results), methods)
        text = rep.scaling_markdown(sc, methods) if fmt == "md" else rep.scaling_csv(sc)
    else:
        text = rep.markdown(built) if fmt == "md" else rep.csv_text(built)
    if output:
        write_atomic(output, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if plots:
        for p in rep.plot_curves(results, plots, built["reference_samples"]):
            err.print(f"wrote {p}")


@app.command("speed")
def stat_speed(
    config: str = typer.Option("5A-25T-50x30", help="STAT config name."),
    batch: int = typer.Option(4096, help="Number of environments stepped together."),
    seconds: float = typer.Option(5.0, help="Measurement time."),
    no_obs: bool = typer.Option(False, "--no-obs", help="Skip building observation vectors."),
    threads: int | None = typer.Option(None, help="Threads for observations (default: all)."),
    sections: bool = typer.Option(
        False, "--sections", help="Split step()'s time per env step into masks, observations "
        "and the rest (one thread unless --threads)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Measure joint environment steps per second under random valid actions."""
    from dataclasses import asdict

    import numba

    from coordbench.envs.stat.config import get_config
    from coordbench.envs.stat.speed import MAX_BATCH, measure_sections, measure_speed
    from coordbench.errors import ConfigError

    check_range("--batch", batch, 1, MAX_BATCH)
    check_range("--seconds", seconds, 0, 3600, low_open=True)
    check_range("--threads", threads, 1, numba.config.NUMBA_NUM_THREADS)
    if sections:
        if no_obs:
            raise ConfigError("--sections times the observations; drop --no-obs")
        sec = measure_sections(get_config(config), batch, seconds, threads=threads or 1)
        if as_json:
            emit_json(asdict(sec))
        else:
            out.print(f"{sec.config} batch {sec.batch}, {sec.threads} thread(s), ns per env "
                      f"step: step() {sec.step_ns:,.0f} = masks {sec.masks_ns:,.0f} + "
                      f"observation {sec.observation_ns:,.0f} + rest {sec.rest_ns:,.0f}")
        return
    res = measure_speed(get_config(config), batch, seconds, with_obs=not no_obs, threads=threads)
    if as_json:
        emit_json(asdict(res))
    else:
        out.print(f"{res.config} batch {res.batch}: {res.steps_per_s:,.0f} joint steps/s "
                  f"with random valid actions, {res.step_only_per_s:,.0f} inside step() "
                  f"({res.steps:,} steps, {res.episodes:,} episodes in {res.seconds:.1f} s"
                  f"{'' if res.with_obs else ', no observations'}, {res.threads} thread(s))")
