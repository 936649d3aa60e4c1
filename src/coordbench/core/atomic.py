"""Atomic file writes: write to a temporary file, fsync, rename, fsync the directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# the permissions a plain open() would give (mkstemp makes files owner-only): reports and
# exports are meant to be shared
_UMASK = os.umask(0)
os.umask(_UMASK)
_MODE = 0o666 & ~_UMASK


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so readers see either the old file or the complete new one."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically (temporary file, fsync, rename, fsync directory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
