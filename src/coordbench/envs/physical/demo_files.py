"""Reading demonstration files (written by `coordbench physical demos`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coordbench.errors import RunDirError


def demos_name(task: str, embodiment: str = "cobot", split: str = "train") -> str:
    """Return the file name of a task's demonstrations split (`meta`: its metadata file); a
    G1's names the embodiment: the two never mix in a folder."""
    ext = "json" if split == "meta" else "npz"
    body = "" if embodiment == "cobot" else f"_{embodiment}"
    return f"{task}{body}_{split}.{ext}"


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
