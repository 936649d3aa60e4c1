"""Reading user files and checking user paths, each failure one ConfigError line.

Every user-named file (task, instance, registry, results) is read through `read_text` /
`read_json`, and every output path is checked with `check_out_dir` / `check_out_file`
before any work starts, so that a folder where a file is expected, a non-UTF-8 file, a path
under a regular file or an unwritable location is refused with the path in the message,
never a traceback halfway through a run.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coordbench.errors import ConfigError


def read_text(path: str | Path, what: str = "file") -> str:
    """Return the UTF-8 text of `path`; ConfigError names the path and what is wrong."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such {what}")
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, expected a {what}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a UTF-8 text {what} (byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the {what} ({e.strerror or e})") from None


def read_json(path: str | Path, what: str = "file") -> Any:
    """Return the parsed JSON of `path`; ConfigError names the path and the first problem.

    NaN and Infinity (which Python's json accepts but JSON does not) are refused too.
    """
    text = read_text(path, what)

    def no_constant(name: str) -> float:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e.msg} at line {e.lineno} column "
                          f"{e.colno})") from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None


def _nearest_existing(path: Path) -> Path:
    """Return `path` or its nearest ancestor that exists."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _writable_dir(folder: Path) -> bool:
    """Return whether a file can be created in `folder` (tried, since root ignores modes)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_out_dir(path: str | Path, option: str = "--out") -> Path:
    """Return `path` once it is an output folder that exists and is writable, or can be made
    (its nearest existing ancestor is a writable folder); ConfigError names the option."""
    path = Path(path)
    base = _nearest_existing(path)
    if base == path.absolute() and not base.is_dir():
        raise ConfigError(f"{option} {path}: exists and is not a folder")
    if not base.is_dir():
        raise ConfigError(f"{option} {path}: {base} is a file, not a folder")
    if not _writable_dir(base):
        raise ConfigError(f"{option} {path}: {base} is not writable")
    return path


def check_out_file(path: str | Path, option: str = "--out") -> Path:
    """Return `path` once it is an output file that can be written: not a folder, in a
    folder that exists and is writable or can be made; ConfigError names the option."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder, expected a file")
    check_out_dir(path.parent, option)
    return path


def check_in_dir(path: str | Path, option: str, what: str = "folder") -> Path:
    """Return `path` once it is an existing folder; ConfigError names the option."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{option} {path}: no such {what}")
    if not path.is_dir():
        raise ConfigError(f"{option} {path}: is a file, expected a {what}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: cannot read the {what}")
    return path


def check_range(option: str, value: float | None, low: float | None = None,
                high: float | None = None, *, low_open: bool = False) -> None:
    """Raise ConfigError unless `value` (when given) is a finite number in [low, high]
    ((low, high] with `low_open`); the message names the option and the valid range."""
    if value is None:
        return
    below = low is not None and (value <= low if low_open else value < low)
    if (isinstance(value, float) and not math.isfinite(value)) or below or (
            high is not None and value > high):
        parts = []
        if low is not None:
            parts.append(f"{'>' if low_open else '>='} {_num(low)}")
        if high is not None:
            parts.append(f"<= {_num(high)}")
        raise ConfigError(f"{option} must be {' and '.join(parts) or 'finite'}, got {value}")


def _num(v: float) -> str:
    """Return a bound as the user would type it (1000000, not 1e+06)."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def validation_line(e: ValidationError, where: str) -> str:
    """Return the first error of a pydantic ValidationError as one line: where, the field
    path, and what is allowed (the offending value, shortened)."""
    first = e.errors()[0]
    loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in first["loc"]).lstrip(".")
    value = repr(first.get("input"))
    value = value if len(value) <= 40 else value[:37] + "..."
    more = len(e.errors()) - 1
    tail = f" (and {more} more)" if more else ""
    field = f"field '{loc}' " if loc else ""
    msg = first["msg"].replace("Value error, ", "")
    return f"{where}: {field}{msg[0].lower() + msg[1:]}, got {value}{tail}"
