"""Provenance of a run: coordbench version and the git commit of the source tree, if any."""

from __future__ import annotations

import hashlib
import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _installed
from pathlib import Path

try:
    VERSION = _installed("coordbench")
except PackageNotFoundError:  # running from a source tree without an install
    VERSION = "0.0.0+unknown"


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """Return the commit of the checkout coordbench runs from (with '-dirty'), or None.

    Read once per process: it describes the code this process loaded, and every episode
    header records it (two git calls per episode cost more than a STAT episode)."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha or None


def version() -> str:
    """Return the installed coordbench version."""
    return VERSION


def file_digest(path: str | Path, length: int = 10) -> str:
    """Return the first `length` hex digits of a file's sha256 (names a file's content in run
    conditions, so a changed checkpoint is never mistaken for a finished one)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:length]
