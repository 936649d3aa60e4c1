"""Writing a benchmark's results: one JSON file (meta + data) and one markdown table, both
atomically under benchmarks/results/, the markdown also printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic

RESULTS = Path(__file__).parent / "results"


def write_results(stem: str, data: dict[str, Any], lines: list[str]) -> Path:
    """Write RESULTS/<stem>.json (`data`) and RESULTS/<stem>.md (`lines`, one per line), print
    the markdown, and return the markdown's path."""
    write_atomic(RESULTS / f"{stem}.json", json.dumps(data, indent=1) + "\n")
    text = "\n".join(lines).rstrip("\n") + "\n"
    md = RESULTS / f"{stem}.md"
    write_atomic(md, text)
    print(text)
    return md
