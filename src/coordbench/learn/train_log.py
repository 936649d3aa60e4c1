"""Live training logs: a run's scalars as it trains, in TensorBoard event files and a CSV.

Every train command (`stat train`, `constructs train`, `physical train`) takes `--log` (a
comma list of `tensorboard` and `csv`, or `none`; default `csv`) and writes one folder per
trained run, `OUT/logs/<run>/`: `scalars.csv` (one row per logged step: `step`, `wall_s`,
then every scalar) and, with `tensorboard`, one event stream written by TensorBoard's own
`EventFileWriter`. Both are flushed at every row, so `tensorboard --logdir OUT/logs` shows
the curves of a run still training.

A training loop only calls `log(row)` with a flat mapping: `step`, `wall_s` and the scalars
by tag (`eval/return`, `loss/train`, `explore/epsilon`, `speed/steps_per_s`, ...); it knows
nothing of files, and `log=None` trains without any. A run killed and continued from its
last snapshot replays, exactly, every step after that snapshot, so the first row a process
logs names the first step the earlier attempt may have logged past its snapshot: `TrainLog`
then rewrites what the folder holds keeping only the steps before it (the CSV atomically;
the event stream into a new file of TensorBoard's writer, the old files removed once it is
written) and appends from there. A resumed run thus leaves one stream whose steps strictly
increase, and one CSV row per evaluation.
"""

from __future__ import annotations

import csv
import io
import math
import sys
import time
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic
from coordbench.core.extras import need_tensorboard
from coordbench.errors import ConfigError

KINDS = ("tensorboard", "csv")
CHOICES = (*KINDS, "none")
DEFAULT = "csv"
LOGS = "logs"  # OUT/logs/<run>/
CSV_NAME = "scalars.csv"
HELP = ("Live training logs under OUT/logs/<run>/: a comma list of tensorboard (event files "
        "for `tensorboard --logdir OUT/logs`), csv (scalars.csv), or none.")
FIXED = ("step", "wall_s")  # the CSV's first columns; every other key is a scalar's tag


def parse_log(text: str, flag: str = "--log") -> tuple[str, ...]:
    """Return the log kinds a `--log` value names (in KINDS order; () for `none`); a
    one-line ConfigError naming the choices for anything else. Checks that TensorBoard is
    installed when it is asked for (before any training starts)."""
    words = [w.strip().lower() for w in str(text).split(",")]
    if not words or any(w not in CHOICES for w in words) or \
            ("none" in words and len(words) > 1):
        raise ConfigError(f"{flag} must be a comma list of {', '.join(KINDS)}, or none; "
                          f"got {text!r}")
    kinds = tuple(k for k in KINDS if k in words)
    if "tensorboard" in kinds:
        need_tensorboard()
    return kinds


def run_folder(out: Path, run: str) -> Path:
    """Return the log folder of run `run` under the command's output folder `out`."""
    return Path(out) / LOGS / run


@dataclass(frozen=True)
class LogSpec:
    """Where and how one run logs: picklable, so a job carries it to the worker that
    trains, which opens the files there (`open`)."""

    folder: str
    kinds: tuple[str, ...]

    @classmethod
    def of(cls, out: Path, run: str, kinds: Iterable[str]) -> LogSpec | None:
        """Return the spec of run `run` under `out`, or None when `kinds` is empty."""
        kinds = tuple(kinds)
        return cls(str(Path(out).resolve() / LOGS / run), kinds) if kinds else None

    def open(self) -> TrainLog:
        """Return the run's log (files are touched at its first row)."""
        return TrainLog(Path(self.folder), self.kinds)


def opened(spec: LogSpec | None) -> AbstractContextManager[TrainLog | None]:
    """Return a context that opens `spec`'s log and closes it at the end (None: no log)."""
    return spec.open() if spec is not None else nullcontext(None)


class TrainLog:
    """One run's scalars, appended row by row to `folder`'s CSV and event stream.

    Call it with a row (`step`, `wall_s` and scalars by tag; None or NaN values are left
    out of TensorBoard and written as empty / `nan` cells); `close()` (or leaving the
    `with` block) stops TensorBoard's writer thread. A log that cannot be written (a Ray
    node without the run's path or without TensorBoard, a full disk) says so once on
    stderr and stops logging: the training goes on, as it goes on without snapshots."""

    def __init__(self, folder: Path, kinds: Iterable[str]) -> None:
        self.folder = Path(folder)
        self.kinds = tuple(kinds)
        self._started = False
        self._header: list[str] = list(FIXED)
        self._rows: list[dict[str, str]] = []  # the CSV so far (one row per logged step)
        self._writer: Any = None

    @property
    def csv_path(self) -> Path:
        """Return the run's CSV file."""
        return self.folder / CSV_NAME

    def __call__(self, row: Mapping[str, Any]) -> None:
        """Log one row (flushed before it returns)."""
        if not self.kinds:
            return
        step = int(row["step"])
        try:
            if not self._started:
                self._start(step)
            if "csv" in self.kinds:
                self._csv_add(step, row)
            if "tensorboard" in self.kinds:
                self._tb_add(step, row)
        except (OSError, ImportError) as exc:
            print(f"training log {self.folder} off: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            self.kinds = ()
            try:
                self.close()
            except (OSError, ValueError):  # the writer's thread failed on the same file
                self._writer = None

    def close(self) -> None:
        """Flush and close the event stream (the CSV is closed after every row)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TrainLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- resuming: keep what an earlier attempt logged before `first` ----------------------
    def _start(self, first: int) -> None:
        self._started = True
        self.folder.mkdir(parents=True, exist_ok=True)
        if "csv" in self.kinds:
            self._csv_start(first)
        if "tensorboard" in self.kinds:
            self._tb_start(first)

    def _csv_start(self, first: int) -> None:
        try:
            text = self.csv_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        # a kill in the middle of an append leaves a last line without its newline: a cut
        # row ("1" of "160,...") must not pass for a step
        text = text[:text.rfind("\n") + 1]
        reader = csv.DictReader(io.StringIO(text))
        header = [h for h in (reader.fieldnames or []) if h not in FIXED]
        kept = []
        for r in reader:
            try:
                if int(float(r.get("step") or "nan")) < first:
                    kept.append({k: v or "" for k, v in r.items() if k is not None})
            except ValueError:
                continue  # a row a kill cut short
        self._header = [*FIXED, *header]
        self._rows = kept
        write_atomic(self.csv_path, self._csv_text())

    def _tb_start(self, first: int) -> None:
        from tensorboard.backend.event_processing.event_file_loader import (
            LegacyEventFileLoader,
        )
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        old = sorted(p for p in self.folder.iterdir() if ".tfevents." in p.name)
        # (step -> tag -> value) and each step's wall time; a kill in the middle of an
        # earlier rewrite leaves two files holding the same steps: keep one of each
        steps: dict[int, dict[str, Any]] = {}
        walls: dict[int, float] = {}
        for path in old:
            for ev in LegacyEventFileLoader(str(path)).Load():
                if not ev.HasField("summary") or ev.step >= first:
                    continue
                for v in ev.summary.value:
                    steps.setdefault(ev.step, {})[v.tag] = v
                walls[ev.step] = ev.wall_time
        self._writer = EventFileWriter(str(self.folder), flush_secs=30)
        for step in sorted(steps):
            summary = summary_pb2.Summary(value=list(steps[step].values()))
            self._writer.add_event(event_pb2.Event(wall_time=walls[step], step=step,
                                                   summary=summary))
        self._writer.flush()
        for path in old:  # only now: until here a reader still had the old stream whole
            path.unlink(missing_ok=True)

    # -- appending ---------------------------------------------------------------------------
    def _csv_add(self, step: int, row: Mapping[str, Any]) -> None:
        cells = {"step": str(step)}
        for k, v in row.items():
            if k != "step":
                cells[k] = "" if v is None else repr(float(v))
        self._rows.append(cells)
        new = [k for k in cells if k not in self._header]
        if new:  # a scalar first seen now (a loss once learning starts): rewrite whole
            self._header += new
            write_atomic(self.csv_path, self._csv_text())
            return
        with open(self.csv_path, "a", encoding="utf-8", newline="") as f:
            f.write(self._csv_text([cells], header=False))

    def _csv_text(self, rows: list[dict[str, str]] | None = None, header: bool = True) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, self._header, restval="", extrasaction="ignore",
                           lineterminator="\n")
        if header:
            w.writeheader()
        w.writerows(self._rows if rows is None else rows)
        return buf.getvalue()

    def _tb_add(self, step: int, row: Mapping[str, Any]) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        values = []
        for k, v in row.items():
            if k == "step" or v is None or not math.isfinite(float(v)):
                continue
            tag = "time/wall_s" if k == "wall_s" else k
            values.append(summary_pb2.Summary.Value(tag=tag, simple_value=float(v)))
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=step,
                                               summary=summary_pb2.Summary(value=values)))
        self._writer.flush()  # at every row: TensorBoard shows a run still training


def read_csv(folder: Path) -> list[dict[str, float]]:
    """Return the rows of a run's `scalars.csv` as numbers (an empty cell left out)."""
    text = (Path(folder) / CSV_NAME).read_text(encoding="utf-8")
    return [{k: float(v) for k, v in r.items() if v not in ("", None)}
            for r in csv.DictReader(io.StringIO(text))]
