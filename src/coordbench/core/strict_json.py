"""Strict JSON: NaN and infinities, which JSON has no token for, written as null."""

from __future__ import annotations

import json
import math
from typing import Any


def clean_json(value: Any) -> Any:
    """Return `value` with NaN and infinities as None, in nested dicts, lists and tuples."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def dumps_strict(value: Any, **kwargs: Any) -> str:
    """Return `value` as JSON text any parser reads (undefined numbers as null)."""
    return json.dumps(clean_json(value), allow_nan=False, **kwargs)
