"""What every family's report section returns to the composer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    """A family's part of a run report: markdown, console tables, and per-condition results
    ({condition: {"suite", "spec", "metrics": {metric: {mean, ci95, n}}}})."""

    title: str
    markdown: str = ""
    tables: list[Any] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # what the section's figures reuse
