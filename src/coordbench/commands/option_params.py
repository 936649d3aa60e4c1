"""A family's options as typer parameters: the one place a generated command's parameters
are declared (`commands/family_commands.py`, `crossplay.py`, `play.py`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from coordbench.errors import ConfigError
from coordbench.runner.options import REQUIRED, Option, check_values

from .common import out_option
from .run_options import RunOptions, param, with_signature

OUT_HELP = "Run directory (resumable)."


def typer_parameter(option: Option, command: str) -> inspect.Parameter:
    """Return the typer parameter that declares `option` in `command`."""
    default = option.default_in(command)
    kind: Any = list[option.kind] if option.many else option.kind
    if default is None:
        kind = kind | None
    if option.kind is bool:
        default = bool(default)
    return param(option.name, kind, typer.Option(... if default is REQUIRED else default,
                                                 option.cli, help=option.help_in(command),
                                                 metavar=option.metavar))


def with_options(options: tuple[Option, ...], command: str, own: list[inspect.Parameter],
                 body: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    """Return a typer command `name` whose parameters are `own` then `options` (the
    family's, for `command`), calling `body(values, **own)` with the family's values
    checked."""
    declared = [typer_parameter(o, command) for o in options]
    names = {p.name for p in declared}

    @functools.wraps(body)
    def run(**kwargs: Any) -> Any:
        values = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        check_values(options, values)
        return body(values, **kwargs)

    run.__name__ = name
    run.__doc__ = doc
    return with_signature(run, [*own, *declared])


def out_param(default: Path | None = None) -> inspect.Parameter:
    """Return the --out parameter of a generated command (a run directory)."""
    return param("out_dir", Path | None, out_option(default, OUT_HELP))


def opts_param() -> inspect.Parameter:
    """Return the place of the shared run options (`@run_options` fills it)."""
    return param("opts", RunOptions, RunOptions())


def without(played: Any, *more: str) -> tuple[str, ...]:
    """Return the run options a family's generated command leaves out (`more`, and
    --max-reply-tokens for a family whose teams take none)."""
    return (*more, *(() if played.model_replies else ("max_reply_tokens",)))


def check_metric(family: Any, metric: str) -> None:
    """Raise ConfigError unless `metric` is one of the family's episode metrics."""
    played = family.get("options")
    known = {*(family.get("kinds") or {}), *family.headline_metrics(),
             *played.more_metrics}
    if metric not in known:
        raise ConfigError(f"--metric {metric!r}: not a metric of {family.get('seats').label} "
                          f"episodes; choose from {', '.join(sorted(known))}")
