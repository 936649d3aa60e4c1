"""Running the entry point as a user would, for the one-line error contract."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path


def error_line(args: list[str], cwd: Path) -> str:
    """Run `coordbench ARGS` in `cwd` through the script's own entry point
    (`coordbench.cli:main`, in this process: a new interpreter would add seconds a call);
    assert it failed with exit status 2, no traceback and exactly one `error:` line on
    stderr; return that line."""
    from coordbench.cli import main

    stderr, stdout = io.StringIO(), io.StringIO()
    here, argv = Path.cwd(), sys.argv
    code = 0
    try:
        os.chdir(cwd)
        sys.argv = ["coordbench", *args]
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            try:
                main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        os.chdir(here)
        sys.argv = argv
    text = stderr.getvalue()
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert code == 2 and "Traceback" not in text, (code, text, stdout.getvalue())
    assert len(errors) == 1, text
    return errors[0]
