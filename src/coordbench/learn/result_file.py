"""The text of a training result file (<algo>_<config>_seed<N>.json), both ways.

Strict JSON has no NaN, and a diagnostic can be undefined (conflicts per decision when no
step had a decision): such values are written as null and read back as NaN, so the means
over seeds skip them as they always did. Files written with NaN tokens still read.
Torch-free, so reports read results without loading the learners.
"""

from __future__ import annotations

import json
import math
from typing import Any

from coordbench.core.strict_json import dumps_strict


def result_text(res: dict[str, Any]) -> str:
    """Return a training result as the strict JSON text of its file."""
    return dumps_strict(res, indent=1) + "\n"


def parse_result(text: str) -> Any:
    """Return a result file's JSON, its undefined metrics (null in the curve rows and in
    `final`) as NaN."""
    res = json.loads(text)
    if isinstance(res, dict):
        curve = res.get("curve")
        rows = [r for r in curve if isinstance(r, dict)] if isinstance(curve, list) else []
        for row in [*rows, res.get("final")]:
            if isinstance(row, dict):
                row.update({k: math.nan for k, v in row.items() if v is None})
    return res
