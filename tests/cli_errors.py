"""Running the installed entry point as a user would, for the one-line error contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def error_line(args: list[str], cwd: Path) -> str:
    """Run `coordbench ARGS` in `cwd`; assert it failed with exit status 2, no traceback and
    exactly one `error:` line on stderr; return that line."""
    res = subprocess.run([sys.executable, "-m", "coordbench", *args], capture_output=True,
                         text=True, timeout=120, cwd=cwd)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert len(errors) == 1, res.stderr
    return errors[0]
