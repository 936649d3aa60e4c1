"""What every command shares: consoles, progress bars, the executor options, run plans."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from coordbench.core.extras import need_av, need_torch  # noqa: F401 - the commands' import
from coordbench.errors import ConfigError, CoordbenchError

err = Console(stderr=True)
# Tables are wide; when stdout is a file or a pipe, do not squeeze them into 80 columns.
out = Console() if sys.stdout.isatty() else Console(width=200)


def executor_option(default: str = "local") -> Any:
    """Return the --executor option."""
    return typer.Option(default, help="local (this process) | process (a local process "
                                      "pool) | ray (RAY_ADDRESS, or a local instance on "
                                      "127.0.0.1)")


def workers_option(default: int = 1) -> Any:
    """Return the --workers option."""
    return typer.Option(default, help="Parallel workers (processes or Ray CPUs).")


def fail_fast_option() -> Any:
    """Return the --fail-fast option."""
    return typer.Option(False, "--fail-fast", help="Stop at the first episode a provider "
                                                    "failure (auth, unreachable, retries "
                                                    "exhausted) errors.")


def breaker_option() -> Any:
    """Return the --breaker option."""
    return typer.Option(5, min=1, help="Stop the run after this many provider failures in "
                                       "a row (the circuit breaker).")


def models_option() -> Any:
    """Return the --models option (a model registry file)."""
    return typer.Option(None, help="Model registry file (YAML).")


def max_connections_option() -> Any:
    """Return the --max-connections option."""
    return typer.Option(None, help="Cap concurrent calls per model.")


def cache_option() -> Any:
    """Return the --cache/--no-cache option."""
    return typer.Option(True, "--cache/--no-cache", help="Reuse cached replies.")


def cache_path_option() -> Any:
    """Return the --cache-path option."""
    return typer.Option(None, help="Response cache file (sqlite).")


def max_tokens_per_episode_option() -> Any:
    """Return the --max-tokens-per-episode option."""
    return typer.Option(None, help="Stop an episode's team after this many model tokens.")


def cost_limit_option() -> Any:
    """Return the --cost-limit option."""
    return typer.Option(None, help="Stop the run at this spend ($).")


def max_reply_tokens_option() -> Any:
    """Return the --max-reply-tokens option."""
    return typer.Option(None, help="Cap tokens per model reply.")


def check_model_limits(max_connections: int | None = None,
                       max_tokens_per_episode: int | None = None,
                       cost_limit: float | None = None,
                       max_reply_tokens: int | None = None) -> None:
    """Check the model options' ranges (one clear error each); return None."""
    from coordbench.core.files import check_range
    from coordbench.core.limits import MAX_CONNECTIONS, MAX_COST, MAX_REPLY_TOKENS, MAX_TOKENS

    check_range("--max-connections", max_connections, 1, MAX_CONNECTIONS)
    check_range("--max-tokens-per-episode", max_tokens_per_episode, 1, MAX_TOKENS)
    check_range("--cost-limit", cost_limit, 0, MAX_COST, low_open=True)
    check_range("--max-reply-tokens", max_reply_tokens, 1, MAX_REPLY_TOKENS)


def harness_settings(models: Path | None, cache: bool, cache_path: Path | None,
                     max_connections: int | None, seed: int | None, aliases: set[str],
                     breaker: int = 5):
    """Return harness settings after checking that every alias resolves (unknown alias or
    missing key: one clear error before any work)."""
    from coordbench.llm.client import HarnessSettings, harness_for

    settings = HarnessSettings(str(models) if models else None, cache,
                               str(cache_path) if cache_path else None, max_connections, seed,
                               breaker=breaker)
    harness = harness_for(settings)  # the same harness plays the run here (local executor)
    for alias in sorted(aliases):
        harness.provider(alias)
    return settings


def local_stats(settings, executor: str):
    """Return this process's harness counters when the run plays here (else None)."""
    if settings is None or executor != "local":
        return None
    from coordbench.llm.client import harness_for

    return harness_for(settings).stats


# provider-failure summaries of the commands of this invocation; the app's result callback
# prints them and exits non-zero once the command has written what it finished
PENDING_FAILURES: list[str] = []


def errored_details(run: Any, conditions: Sequence[str]) -> list[str]:
    """Return why each errored episode of `conditions` errored (its end detail; "" where the
    record cannot be read), in condition and key order."""
    out = []
    for cond in conditions:
        for key in run.errored_keys(cond):
            try:
                text = run.errored_path(cond, key).read_text(encoding="utf-8").rstrip("\n")
                out.append(str(json.loads(text.rsplit("\n", 1)[-1]).get("detail") or ""))
            except (OSError, ValueError, AttributeError):
                out.append("")
    return out


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def errored_summary(run: Any, conditions: Sequence[str]) -> str | None:
    """Return the one-line summary of the errored episodes of `conditions` (a provider
    failure, a person who left the play page, or cut short when the run stopped), None if
    there are none."""
    from coordbench.runner.episode import CUT_SHORT, PROVIDER_FAILURE, SEAT_LEFT

    details = errored_details(run, conditions)
    if not details:
        return None
    kinds = [("failed for provider reasons", PROVIDER_FAILURE),
             ("ended when the person left the play page", SEAT_LEFT),
             ("were cut short when the run stopped", CUT_SHORT)]
    parts = []
    for what, prefix in kinds:
        mine = [d for d in details if d.startswith(prefix)]
        if mine:
            shown = mine[0][len(prefix):][:160]
            parts.append(f"{len(mine)} {what} ({shown})")
    n = len(details)
    why = "; ".join(parts) or "see the errors folder"
    return (f"{_plural(n, 'episode errored', 'episodes errored')} and "
            f"{'is' if n == 1 else 'are'} not counted: {why}"
            f"; {'it is' if n == 1 else 'they are'} kept in {run.path / 'errors'} and a rerun "
            f"of this command replays {'it' if n == 1 else 'them'}")


def errored_json(run: Any, conditions: Sequence[str]) -> dict[str, Any]:
    """Return what a --json object says of the errored episodes of `conditions`:
    {"errored_episodes": N, "errored_reason": the first one's} ({} where none errored)."""
    details = errored_details(run, conditions)
    if not details:
        return {}
    return {"errored_episodes": len(details), "errored_reason": details[0][:300]}


def command_line() -> str:
    """Return the command line as the user typed it (recorded in manifests)."""
    return "coordbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])


LINE_EVERY_S = 10.0  # seconds between two plain progress lines of one condition


class Bars:
    """Progress bars for the condition engine (one per condition); with `stats`, a model
    harness of this process, each bar also shows its calls, cache hits, retries and tokens.

    When stderr is not a terminal (a log file, CI, a pipe) bars cannot redraw, so progress is
    printed as plain lines instead: one per condition at most every `every_s` seconds, and
    one when a condition is done. Model calls show between episodes too (`heartbeat`): an
    episode of a slow model can take minutes.
    """

    def __init__(self, prog: Progress, stats: Any = None, lines: bool = False,
                 every_s: float | None = None) -> None:
        self.prog, self.bars, self.labels, self.stats = prog, {}, {}, stats
        self.lines = lines
        self.every_s = LINE_EVERY_S if every_s is None else every_s
        self.counts: dict[str, list[float]] = {}  # condition -> [done, total, start, last line]
        self.seen_calls = 0  # the harness's calls when progress last showed them

    def start(self, condition: str, label: str, total: int, done: int) -> None:
        """Add a bar for `condition`."""
        self.labels[condition] = label
        self.bars[condition] = self.prog.add_task(label, total=total, completed=done)
        now = time.monotonic()
        self.counts[condition] = [done, total, now, now, done]
        if self.lines:
            self._line(condition, "started" if done == 0 else "resumed")

    def _harness(self) -> str:
        st = self.stats
        if st is None:
            return ""
        cap = st.cap_text() if hasattr(st, "cap_text") else ""
        return (f"; calls {st.calls} cached {st.cache_hits} retries {st.retries} "
                f"in flight {st.in_flight}{f' (cap {cap})' if cap else ''} "
                f"tokens {st.prompt_tokens + st.completion_tokens:,}")

    def _line(self, condition: str, what: str = "") -> None:
        done, total, start, _, first = self.counts[condition]
        took = time.monotonic() - start
        err.print(f"{self.labels[condition]}: {int(done)}/{int(total)} episodes, {took:.0f} s"
                  f"{pace(done - first, total - done, took)}{self._harness()}"
                  f"{' ' + what if what else ''}", highlight=False, soft_wrap=True)

    def heartbeat(self) -> None:
        """Show the model calls made since progress last moved (the calls, tokens and
        in-flight counts of each condition still playing): bars redraw, plain lines print
        at most every `every_s` seconds."""
        st = self.stats
        if st is None or st.calls == self.seen_calls:
            return
        now = time.monotonic()
        for condition, c in list(self.counts.items()):
            if c[0] >= c[1]:
                continue
            if not self.lines:
                self.seen_calls = st.calls
                self.prog.update(self.bars[condition],
                                 description=self.labels[condition] + ":" + self._harness()[1:])
            elif now - c[3] >= self.every_s:
                self.seen_calls = st.calls
                c[3] = now
                self._line(condition, "playing")

    def advance(self, condition: str, n: int) -> None:
        """Advance `condition`'s bar."""
        desc = self.labels[condition]
        if self.stats is not None:
            desc += ":" + self._harness()[1:]
        self.prog.update(self.bars[condition], advance=n, description=desc)
        c = self.counts[condition]
        c[0] += n
        now = time.monotonic()
        if self.lines and (c[0] >= c[1] or now - c[3] >= self.every_s):
            c[3] = now
            self._line(condition, "done" if c[0] >= c[1] else "")


def pace(played: float, left: float, seconds: float) -> str:
    """Return ", R/s, about T left" for `played` episodes in `seconds` with `left` to go
    ('' before the first, or once none is left)."""
    if played <= 0 or seconds <= 0 or left <= 0:
        return ""
    rate = played / seconds
    eta = left / rate
    when = f"{eta:.0f} s" if eta < 120 else (f"{eta / 60:.0f} min" if eta < 7200
                                             else f"{eta / 3600:.1f} h")
    return f", {rate:.3g}/s, about {when} left"


def say_err(line: str) -> None:
    """Print one progress line on stderr (with --json too: stdout keeps the JSON)."""
    err.print(line, highlight=False, soft_wrap=True)


@contextmanager
def bars(quiet: bool, stats: Any = None) -> Iterator[Bars]:
    """Yield progress bars on stderr (none when `quiet`; plain lines when stderr is not a
    terminal)."""
    lines = not quiet and not err.is_terminal
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                    console=err, disable=quiet or lines, transient=False)
    with prog:
        shown = Bars(prog, stats, lines=lines)
        stop = threading.Event()
        beat = threading.Thread(target=_beat, args=(shown, stop), daemon=True)
        if stats is not None and not quiet:
            beat.start()
        try:
            yield shown
        finally:
            stop.set()
            if beat.is_alive():
                beat.join(timeout=5)


def _beat(shown: Bars, stop: threading.Event) -> None:
    # a model episode can take minutes: its calls show as they are made
    while not stop.wait(min(1.0, shown.every_s)):
        shown.heartbeat()


def run_dir(path: Path):
    """Return the run directory at `path` (created if needed, this command recorded)."""
    from coordbench.core.rundir import RunDir

    return RunDir.create_or_open(path, command=command_line())


def write_report(run: Any) -> Any:
    """Recompute the whole run's report and write results.json, report.md and report.html;
    return the report."""
    from coordbench.report.compose import compose, write

    rep = compose(run)
    write(run, rep)
    return rep


class _Also:
    """Progress that also tells `on_saved(run, condition, key)` of each episode saved."""

    def __init__(self, shown: Any, run: Any, on_saved: Any) -> None:
        self.shown, self.run, self.on_saved = shown, run, on_saved
        self.known: dict[str, set[str]] = {}

    def start(self, condition: str, label: str, total: int, done: int) -> None:
        self.known[condition] = set(self.run.episode_keys(condition))
        if self.shown is not None:
            self.shown.start(condition, label, total, done)

    def advance(self, condition: str, n: int) -> None:
        keys = set(self.run.episode_keys(condition))
        for key in sorted(keys - self.known.get(condition, set())):
            self.on_saved(self.run, condition, key)
        self.known[condition] = keys
        if self.shown is not None:
            self.shown.advance(condition, n)


def play_plan(path: Path, plan: Sequence, *, quiet: bool = False,
              labels: Sequence[str] | None = None, stats: Any = None, report: bool = True,
              on_saved: Any = None, **options: Any):
    """Run `plan` ((suite, spec[, limit]) items) into the run at `path`, then (with `report`)
    write the run's report files; return the run."""
    from coordbench.runner import check_executor, run_conditions

    check_executor(options.get("executor", "local"), options.get("workers", 1))
    run = run_dir(path)
    try:
        with bars(quiet, stats) as shown:
            progress = shown if on_saved is None else _Also(shown, run, on_saved)
            names = run_conditions(run, plan, labels=labels, progress=progress, **options)
    finally:
        if run.set_aside_log:  # never silently, even when the run stops early
            err.print(f"note: {len(run.set_aside_log)} damaged episode file(s) moved to "
                      f"{run.path / 'damaged'} to be played again (e.g. "
                      f"{run.set_aside_log[0]})", highlight=False, soft_wrap=True)
    summary = errored_summary(run, names)
    if summary:
        PENDING_FAILURES.append(summary)
    if report:
        try:
            write_report(run)
        except CoordbenchError as e:
            # this command's episodes are saved; another condition's bad file must not make
            # the command fail (or hide its --json) after the work is done
            err.print(f"warning: report not rewritten: {e}", highlight=False, soft_wrap=True)
    return run


def emit_json(payload: Any) -> None:
    """Print one JSON object on stdout, every estimate in the `--json` contract's form."""
    from coordbench.report.format import contract_json

    sys.stdout.write(json.dumps(contract_json(payload)) + "\n")


def positive(**values: int | None) -> None:
    """Raise ConfigError naming the first option that is given and below 1."""
    for name, v in values.items():
        if v is not None and v < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {v}")


# Flags many commands share, each declared once here (a command names its own help).
def json_option(help: str = "Print one JSON object.") -> Any:
    """Return the --json option."""
    return typer.Option(False, "--json", help=help)


def out_option(default: Any, help: str) -> Any:
    """Return the --out option (a run directory, a folder or a file)."""
    return typer.Option(default, "--out", help=help)


def snapshot_option(what: str) -> Any:
    """Return the --snapshot-every option of a training command (`what` is snapshotted)."""
    return typer.Option(60.0, "--snapshot-every", help=f"Seconds between snapshots of {what} "
                        "(a killed run continues from the last one; 0: none).")


def seed_option(help: str = "Training seed.", default: int | None = 0) -> Any:
    """Return the --seed option of a command that is not a family's run command."""
    return typer.Option(default, "--seed", help=help)


def steps_option(default: int | None, help: str) -> Any:
    """Return the --steps option of a training command."""
    return typer.Option(default, "--steps", help=help)


def log_option() -> Any:
    """Return the --log option of the train commands (live training logs)."""
    from coordbench.learn.train_log import DEFAULT, HELP

    return typer.Option(DEFAULT, "--log", help=HELP)


def format_option(default: str, help: str) -> Any:
    """Return the --format option of a command that writes tables."""
    return typer.Option(default, "--format", help=help)


def batch_option(default: int, help: str) -> Any:
    """Return the --batch option."""
    return typer.Option(default, "--batch", help=help)


def episode_option(help: str, default: Any = None) -> Any:
    """Return the --episode option (CONDITION/KEY of a saved episode)."""
    return typer.Option(default, "--episode", help=help)


def reference_option(metavar: str, help: str) -> Any:
    """Return the --reference option (what others are compared with, or who takes a seat
    over)."""
    return typer.Option(None, "--reference", metavar=metavar, help=help)


def metric_option(help: str) -> Any:
    """Return the --metric option (an episode metric of the family)."""
    return typer.Option(None, "--metric", help=help)


def yes_option(help: str) -> Any:
    """Return the --yes option (start although the estimate exceeds --cost-limit)."""
    return typer.Option(False, "--yes", help=help)


def port_option(default: int, help: str) -> Any:
    """Return the --port option of a server on 127.0.0.1 (the viewer, the play page)."""
    return typer.Option(default, "--port", help=help)
