"""Torch checkpoint files shared by every learner: atomic writes, safe reads, one-line errors.

Checkpoints are dicts with a `format` tag; reading uses `weights_only=True`, so a file can
never run code, and every way a file can be wrong becomes one error naming the file.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from coordbench.errors import CoordbenchError


def checkpoint_bytes(blob: dict[str, Any]) -> bytes:
    """Return a checkpoint dict serialized as bytes."""
    import torch

    buf = io.BytesIO()
    torch.save(blob, buf)
    return buf.getvalue()


def read_checkpoint(path: Path, fmt: str, what: str,
                    error: type[CoordbenchError]) -> dict[str, Any]:
    """Return the checkpoint dict at `path` whose `format` is `fmt`, or raise `error` naming
    the file and the problem (`what` says what the file should be)."""
    import torch

    path = Path(path)
    if path.is_dir():
        raise error(f"checkpoint {path} is a folder, not a checkpoint file ({what})")
    if not path.is_file():
        raise error(f"checkpoint {path} does not exist")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for damaged files
        raise error(f"checkpoint {path} is corrupt or not a checkpoint "
                    f"({type(exc).__name__})") from None
    if not isinstance(blob, dict) or blob.get("format") != fmt:
        raise error(f"checkpoint {path} is not a {what}")
    return blob
