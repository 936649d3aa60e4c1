"""The options every run command shares, declared once: `@run_options()` adds them to a
command (as inspect_ai's shared-option decorators do) and hands the command one
`RunOptions`, which checks them, builds the model harness's settings and the run's limits,
and plays the command's plan into its run directory."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import typer

from .common import (
    breaker_option,
    cache_option,
    cache_path_option,
    cost_limit_option,
    executor_option,
    fail_fast_option,
    json_option,
    max_connections_option,
    max_reply_tokens_option,
    max_tokens_per_episode_option,
    models_option,
    workers_option,
)


@dataclass(frozen=True)
class RunOptions:
    """The shared options of a run command, as the user gave them (an option a command does
    not offer keeps its default here)."""

    models: Path | None = None
    max_connections: int | None = None
    cache: bool = True
    cache_path: Path | None = None
    max_tokens_per_episode: int | None = None
    cost_limit: float | None = None
    max_reply_tokens: int | None = None
    in_flight: int = 8
    fail_fast: bool = False
    breaker: int = 5
    executor: str = "local"
    workers: int = 1
    as_json: bool = False

    def check(self, out: Path | None = None) -> None:
        """Check every range and path before any work (one clear line each), the run
        directory `out` among them; the model registry is read even where the team does not
        use it, so a typo fails now."""
        from coordbench.core.files import check_out_dir, check_out_file, check_range
        from coordbench.core.limits import MAX_IN_FLIGHT, MAX_WORKERS
        from coordbench.llm.registry import load_registry

        from .common import check_model_limits

        check_range("--workers", self.workers, 1, MAX_WORKERS)
        check_range("--in-flight", self.in_flight, 1, MAX_IN_FLIGHT)
        check_model_limits(self.max_connections, self.max_tokens_per_episode, self.cost_limit,
                           self.max_reply_tokens)
        if self.models is not None:
            load_registry(self.models)
        if self.cache_path is not None:
            check_out_file(self.cache_path, "--cache-path")
        if out is not None:
            check_out_dir(out)

    def harness(self, aliases: set[str | None], seed: int | None = None) -> Any:
        """Return the model harness's settings for a model-driven team (every alias is
        resolved now: an unknown one or a missing key is one clear error)."""
        from .common import harness_settings

        return harness_settings(self.models, self.cache, self.cache_path,
                                self.max_connections, seed, {a or "" for a in aliases},
                                self.breaker)

    def limits(self) -> Any:
        """Return the run's limits (cost, tokens per episode, provider-failure stops)."""
        from coordbench.runner import Limits

        return Limits(self.cost_limit, self.max_tokens_per_episode, fail_fast=self.fail_fast,
                      breaker=self.breaker)

    def play_plan(self, out: Path, plan: Sequence, *, labels: Sequence[str], settings: Any = None,
             resources: Any = None, **options: Any) -> Any:
        """Play `plan` into the run at `out` on the chosen executor, with progress unless
        --json, the limits, and (for a model-driven team, `settings`) the harness counters on
        the bars; return the run."""
        from .common import local_stats, play_plan

        return play_plan(out, plan, labels=labels, executor=self.executor,
                    workers=self.workers, in_flight=self.in_flight, resources=resources,
                    limits=self.limits(), stats=local_stats(settings, self.executor),
                    **options)


def _declarations() -> dict[str, tuple[Any, Any]]:
    return {
        "models": (Path | None, models_option()),
        "max_connections": (int | None, max_connections_option()),
        "cache": (bool, cache_option()),
        "cache_path": (Path | None, cache_path_option()),
        "max_tokens_per_episode": (int | None, max_tokens_per_episode_option()),
        "cost_limit": (float | None, cost_limit_option()),
        "max_reply_tokens": (int | None, max_reply_tokens_option()),
        "in_flight": (int, typer.Option(8, help="Episodes played concurrently (model-driven "
                                                "teams).")),
        "fail_fast": (bool, fail_fast_option()),
        "breaker": (int, breaker_option()),
        "executor": (str, executor_option()),
        "workers": (int, workers_option()),
        "as_json": (bool, json_option()),
    }


def run_options(without: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Callable]:
    """Return a decorator that adds the shared run options (but those named in `without`)
    to a typer command, which receives them as its `opts: RunOptions` parameter."""
    known = {f.name for f in fields(RunOptions)}
    unknown = set(without) - known
    if unknown:
        raise ValueError(f"no run options {sorted(unknown)}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        declared = {k: v for k, v in _declarations().items() if k not in without}
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()
               if p.name != "opts"]
        added = [param(name, kind, option) for name, (kind, option) in declared.items()]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            opts = RunOptions(**{name: kwargs.pop(name) for name in declared})
            return fn(**kwargs, opts=opts)

        return with_signature(command, [*own, *added])

    return decorate


def param(name: str, kind: Any, option: Any) -> inspect.Parameter:
    """Return a keyword parameter `name: kind = option` (a typer option declaration)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option,
                             annotation=kind)


def with_signature(command: Callable[..., Any], params: list[inspect.Parameter]
                   ) -> Callable[..., Any]:
    """Return `command` (a functools.wraps wrapper) showing typer `params` as its signature
    instead of the wrapped function's."""
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # type: ignore[attr-defined]
    return command
