"""The commands every family gets from its record: `coordbench <family> run`, `coordbench
crossplay <family>` and `coordbench play <family>`, one generic body each.

A family describes what it plays once (`options`, `seats`: `runner/played.py`); each body
declares the family's options for its command beside the options the command itself owns
(`--partner`, `--seat`, `--port`, ...: declared here and nowhere else), checks them, hands the
values to the family and plays what it returns on the one runner. The command only parses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from coordbench.runner.options import for_command

from .common import emit_json, errored_json, out
from .option_params import opts_param, out_param, with_options, without
from .run_options import RunOptions, run_options


def run_command(family: Any) -> Callable[..., Any]:
    """Return the family's run command (`coordbench <family> run|eval`)."""
    played = family.get("options")

    def body(values: dict[str, Any], out_dir: Path | None, opts: RunOptions) -> None:
        opts.check(out_dir)
        plan = played.run(dict(values, out=out_dir))
        # every model alias resolves (or fails in one line) before anything is said or played
        settings = (opts.harness(plan.aliases, played.seed(values))
                    if plan.aliases is not None else None)
        if plan.note and not opts.as_json:
            from .common import err

            err.print(plan.note, highlight=False, soft_wrap=True)
        run = opts.play_plan(plan.out, plan.items, labels=plan.labels, settings=settings,
                        resources=plan.resources(settings, opts.max_reply_tokens))
        payload, shown = family.get("summary")(run, plan, values)
        if opts.as_json:
            emit_json({**payload, **errored_json(run, [item[0].condition(item[1])
                                                      for item in plan.items])})
            return
        for thing in shown:
            out.print(thing)
        out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")

    command = with_options(for_command(played.options, "run"), "run",
                           [out_param(), opts_param()], body, f"{family.name}_run",
                           played.run_help)
    return run_options(without=without(played))(command)


def add_family_commands(family: Any, crossplay_app: typer.Typer, play_app: typer.Typer
                        ) -> None:
    """Add the family's run command to its own group and its crossplay and play commands to
    `crossplay_app` and `play_app` (a family without an `options` piece gets none)."""
    if family.options is None:
        return
    from .crossplay import crossplay_command
    from .play import play_command

    played = family.get("options")
    group = family.get("commands")
    if group is not None:
        group.command(played.run_name)(run_command(family))
    crossplay_app.command(family.name)(crossplay_command(family))
    play_app.command(family.name)(play_command(family))
