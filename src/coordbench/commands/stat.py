"""`coordbench stat ...`: configurations, evaluation, training, tables, speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file, check_range
from coordbench.core.limits import MAX_EPISODES, MAX_WORKERS
from coordbench.core.stats import few
from coordbench.errors import ConfigError
from coordbench.suites.stat.options import CONFIG

from .common import (
    batch_option,
    emit_json,
    err,
    executor_option,
    format_option,
    json_option,
    log_option,
    need_torch,
    out,
    out_option,
    say_err,
    snapshot_option,
    steps_option,
    workers_option,
    write_report,
)

app = typer.Typer(no_args_is_help=True, help="STAT: spatial task allocation at scale.")


# Flags `stat train`, `stat tune` and `stat speed` share, each declared once here.
def config_option(default: Any, help: str) -> Any:
    """Return the --config option of a STAT command that is not `stat eval` (the flag is
    the family's: `suites/stat/options.py`)."""
    return typer.Option(default, CONFIG.cli, help=help)


def algo_option(help: str) -> Any:
    """Return the --algo option (a MARL method)."""
    return typer.Option(..., "--algo", help=help)


def seeds_option(default: str | None, help: str) -> Any:
    """Return the --seeds option (training seeds, e.g. 0-4)."""
    return typer.Option(default, "--seeds", help=help)


def utd_option(help: str) -> Any:
    """Return the --utd option (transitions replayed per transition collected)."""
    return typer.Option(8.0, "--utd", help=help)


def eval_every_option() -> Any:
    """Return the --eval-every option."""
    return typer.Option(10_000, "--eval-every", help="Environment steps between evaluations.")


def eval_episodes_option(help: str) -> Any:
    """Return the --eval-episodes option."""
    return typer.Option(20, "--eval-episodes", help=help)


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


@app.command("train")
def stat_train(
    config: str = config_option(..., "STAT config name."),
    algo: str = algo_option("dqn | fdqn | vdn | qmix | qtran | iql | coma | "
                                            "mappo | ippo"),
    steps: int | None = steps_option(None, "Environment steps (default: the paper's)."),
    seeds: str = seeds_option("0-4", "Training seeds, e.g. 0-4."),
    utd: float = utd_option("Transitions replayed per transition collected "
                                        "(off-policy methods; the paper's learners: ~32)."),
    num_envs: int | None = typer.Option(None, help="Environments stepped together "
                                                   "(default 32; coma 8)."),
    eval_every: int = eval_every_option(),
    eval_episodes: int = eval_episodes_option("Greedy episodes per evaluation "
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
    out_dir: Path = out_option(Path("runs/train"), "Results directory."),
    snapshot_every: float = snapshot_option("a seed in training"),
    log: str = log_option(),
    as_json: bool = json_option(),
) -> None:
    """Train a cooperative MARL method on STAT over seeds (one seed per worker); final and
    max return with CIs. Each seed's scalars go to OUT/logs/<algo>_<config>_seed<N>/ as it
    trains (--log)."""
    from coordbench.learn.train_log import parse_log

    logs = parse_log(log)
    need_torch()
    from coordbench.learn.methods import train_configs
    from coordbench.learn.sweep import MAX_NUM_ENVS, MAX_TRAIN_STEPS, parse_seeds, summarize, sweep
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
                              snapshot_every_s=snapshot_every, logs=logs))
    _show_training(out_dir, summary, f"{algo} on {config}, seeds {seeds}", as_json)


def _show_training(out_dir: Path, summary: dict[str, Any], title: str, as_json: bool) -> None:
    """Write the training run's report; print its summary (a table, or JSON)."""
    from coordbench.report.compose import open_for_report
    from coordbench.report.format import estimate_json

    write_report(open_for_report(out_dir))
    if as_json:
        emit_json({k: estimate_json(e) for k, e in summary.items()})
        return
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    for k, e in summary.items():
        table.add_row(k, e.fmt(4))
    out.print(table)


@app.command("tune")
def stat_tune(
    config: str = config_option(..., "STAT config name (the paper tunes on one per size "
                                         "class: 3A-6T-5x3, 5A-25T-25x15, 5A-25T-50x30)."),
    algo: str = algo_option("Method to tune (as for `stat train`)."),
    lrs: str = typer.Option("3e-4,1e-3", help="Learning rates of the grid (the paper's)."),
    eps_fracs: str = typer.Option("0.2,0.4", help="Epsilon-decay fractions of the grid "
                                                  "(the paper's; ignored by mappo/ippo)."),
    steps: int | None = steps_option(None, "Environment steps per run (default: the "
                                                "paper's)."),
    seeds: str = seeds_option("0-2", "Training seeds per grid point."),
    utd: float = utd_option("Transitions replayed per transition collected."),
    eval_every: int = eval_every_option(),
    eval_episodes: int = eval_episodes_option("Greedy episodes per evaluation."),
    executor: str = executor_option("process"),
    workers: int = workers_option(2),
    out_dir: Path = out_option(Path("runs/tune"), "Directory: one resumable "
                                 "sub-directory per grid point, and tune.json."),
    as_json: bool = json_option("Print the tuning record as JSON."),
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
    fmt: str = format_option("md", "md | csv | marl-eval (the runs' curves as the JSON "
                                   "instadeepai's marl-eval tools read)"),
    plots: Path | None = typer.Option(None, help="Also write learning-curve PNGs here."),
    references: bool = typer.Option(True, "--references/--no-references",
                                    help="Add scripted allocators as reference rows."),
    output: Path | None = typer.Option(None, "--output", help="Write the table to this file."),
    scaling: bool = typer.Option(False, "--scaling", help="Print the controlled scaling "
                                 "comparisons instead (the paper's Table 14 form)."),
) -> None:
    """Paper-style tables (final/max return, conflicts, diversity, throughput) from runs;
    with --scaling, the paper's Table 14: per method and matched pair of configurations, the
    direction of each metric's change and its Welch significance; with --format marl-eval,
    every run's evaluation curve as marl-eval's raw JSON (env stat, task = configuration,
    algorithm = method, run = seed_N)."""
    import sys

    from coordbench.core.atomic import write_atomic
    from coordbench.report import stat_train_report as rep

    rep.check_format(fmt)
    if fmt == "marl-eval" and scaling:
        raise ConfigError("--scaling prints the Table 14 comparisons; --format marl-eval "
                          "writes the runs' curves: give one or the other")
    for d in dirs:
        check_in_dir(d, "DIRS", "training directory")
    if output:
        check_out_file(output, "--output")
    if plots:
        check_out_dir(plots, "--plots")
    results = rep.load_results(dirs)
    # marl-eval needs only the curves: no reference rows to evaluate unless plots want them
    built = rep.build(results, references=references) if fmt != "marl-eval" or plots else {}
    if fmt == "marl-eval":
        text = rep.marl_eval_text(results)
    elif scaling:
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
    config: str = config_option("5A-25T-50x30", "STAT config name."),
    batch: int = batch_option(4096, "Number of environments stepped together."),
    seconds: float = typer.Option(5.0, help="Measurement time."),
    no_obs: bool = typer.Option(False, "--no-obs", help="Skip building observation vectors."),
    threads: int | None = typer.Option(None, help="Threads for observations (default: all)."),
    sections: bool = typer.Option(
        False, "--sections", help="Split step()'s time per env step into masks, observations "
        "and the rest (one thread unless --threads)."),
    as_json: bool = json_option(),
) -> None:
    """Measure joint environment steps per second under random valid actions."""
    from dataclasses import asdict

    import numba

    from coordbench.envs.stat.config import get_config
    from coordbench.envs.stat.speed import MAX_BATCH, measure_sections, measure_speed

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
