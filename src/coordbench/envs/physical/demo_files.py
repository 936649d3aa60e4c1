"""Reading demonstration files (written by `coordbench physical demos`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coordbench.errors import RunDirError


def load_demos(path: Path) -> dict[str, np.ndarray]:
    """Return a demonstration split's arrays, or raise RunDirError naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise RunDirError(f"demonstration file {path} does not exist (make it with "
                          f"`coordbench physical demos`)")
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except Exception as exc:  # numpy raises several types for damaged archives
        raise RunDirError(f"demonstration file {path} is corrupt ({type(exc).__name__})") \
            from None
