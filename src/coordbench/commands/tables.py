"""`coordbench export` (a run's trajectories as CSV or Parquet tables) and `coordbench table`
(conditions of several runs side by side, every family)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from coordbench.errors import ConfigError

from .common import err, format_option, json_option, out, out_option, reference_option


def export(
    run_dir: Path = typer.Argument(..., help="A run directory."),
    fmt: str = format_option("csv", "csv | parquet"),
    out_dir: Path = out_option(..., "Folder for the tables (created)."),
) -> None:
    """Write a run's episodes, steps, model calls, messages and conditions as tables
    (<table>.csv or <table>.parquet), recomputed from its trajectories."""
    from coordbench.core.files import check_out_dir
    from coordbench.data import export as write_tables
    from coordbench.data import load_run

    if fmt not in ("csv", "parquet"):
        raise ConfigError(f"--format must be csv or parquet, got {fmt!r}")
    check_out_dir(out_dir)
    data = load_run(run_dir)
    for path in write_tables(data, fmt, out_dir):
        out.print(f"wrote {path}", highlight=False)
    bad = data.problems()
    if len(bad):
        err.print(f"warning: {len(bad)} episode file{'s' * (len(bad) != 1)} could not be read "
                  f"and {'are' if len(bad) != 1 else 'is'} left out (problems.{fmt}): "
                  f"{bad.iloc[0]['reason']}", highlight=False, soft_wrap=True)


def table(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories to compare."),
    fmt: str = format_option("md", "md | csv | html"),
    out_file: Path | None = out_option(None, "Write to this file instead of "
                                                             "printing."),
    by: str | None = typer.Option(None, "--by", help="model: a leaderboard, models as rows, "
                                                     "with paired differences against "
                                                     "--reference."),
    reference: str | None = reference_option("MODEL", "With --by model: the model the others "
                                                      "are paired against (default: the "
                                                      "first)."),
    as_json: bool = json_option("With --by model: print a JSON list, "
                                                       "one object per model."),
) -> None:
    """Compare conditions across runs, for every family: one table per suite, each headline
    metric with its 95% interval (csv: every metric, long format). With --by model: one row
    per model (its model alias, or the agents of a team without one), its metrics, the
    coordination profile, tokens and cost per episode, and paired differences against the
    reference over the instances both played (McNemar's exact test for success, Wilcoxon
    for the others, Holm-adjusted)."""
    from coordbench.core.files import check_out_file
    from coordbench.report import across_runs
    from coordbench.report.compose import open_for_report

    if fmt not in across_runs.FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(across_runs.FORMATS)}, "
                          f"got {fmt!r}")
    if by is not None and by != "model":
        raise ConfigError(f"--by must be model, got {by!r}")
    if by is None and (reference is not None or as_json):
        raise ConfigError(f"{'--reference' if reference is not None else '--json'} needs "
                          "--by model")
    if out_file is not None:
        check_out_file(out_file)
    if by == "model":
        import json

        from coordbench.core.rundir import RunDir
        from coordbench.report import leaderboard

        boards = leaderboard.collect([RunDir.open(d) for d in run_dirs], reference)
        if as_json:
            text = json.dumps(leaderboard.json_rows(boards), indent=2) + "\n"
        else:
            text = {"md": leaderboard.markdown, "csv": leaderboard.csv_text,
                    "html": leaderboard.html_text}[fmt](boards)
        _write(out_file, text)
        return
    runs = [open_for_report(d) for d in run_dirs]
    tables = across_runs.collect(runs)
    _write(out_file, {"md": across_runs.markdown, "csv": across_runs.csv_text,
                      "html": across_runs.html_text}[fmt](tables))


def _write(out_file: Path | None, text: str) -> None:
    """Print `text`, or write it atomically to `out_file` and say so."""
    from coordbench.core.atomic import write_atomic

    if out_file is None:
        sys.stdout.write(text)
    else:
        write_atomic(out_file, text)
        out.print(f"wrote {out_file}", highlight=False)


def profile(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories (any families)."),
    fmt: str = format_option("md", "md | csv | html"),
    as_json: bool = json_option("Print a JSON list: one object per "
                                                       "condition."),
    out_file: Path | None = out_option(None, "Write to this file instead of "
                                                             "printing."),
) -> None:
    """The coordination profile of every condition of the runs, across families: redundancy,
    idle share, division of labour, hand-off failure, communication per unit of work and
    progress per step (and model tokens per unit), each with its 95% interval and the number
    of episodes it applies to (definitions: docs/cross-family.md)."""
    import json

    from coordbench.core.files import check_out_file
    from coordbench.core.rundir import RunDir
    from coordbench.report import profile_table

    if fmt not in profile_table.FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(profile_table.FORMATS)}, "
                          f"got {fmt!r}")
    if out_file is not None:
        check_out_file(out_file)
    runs = [RunDir.open(d) for d in run_dirs]
    table = profile_table.collect(runs)
    if as_json:
        text = json.dumps(profile_table.json_rows(table), indent=2) + "\n"
    else:
        text = {"md": profile_table.markdown, "csv": profile_table.csv_text,
                "html": profile_table.html_text}[fmt](table)
    _write(out_file, text)
    if table.problems:
        n = len(table.problems)
        err.print(f"warning: {n} episode file{'s' * (n != 1)} could not be read and "
                  f"{'are' if n != 1 else 'is'} left out: {table.problems[0]}",
                  highlight=False, soft_wrap=True)
    if not table.rows:
        err.print("warning: no condition with episodes of a family that has a profile",
                  highlight=False)
