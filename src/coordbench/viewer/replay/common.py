"""What every family's replay returns: a `Picture`, or `unavailable` with the reason."""

from __future__ import annotations

from typing import Any

Picture = dict[str, Any]


def unavailable(kind: str, why: str) -> Picture:
    """Return the picture of an episode whose state cannot be rebuilt, saying why."""
    return {"kind": kind, "static": None, "states": [],
            "replay": {"available": False, "ok": False, "reason": why}}
