"""`coordbench reproduce PAPER`: a paper's analyses rerun on coordbench, next to its numbers.

Each paper is one module here with the same two functions: `plan(options)` returns the
conditions its analyses need (played by the one runner, so a run resumes and uses any
executor), and `study(run, options)` recomputes every analysis from the saved trajectories
and returns a `Study`: per table or figure, what the paper reports, what coordbench measures
and whether each finding holds. `write.write_study` turns a Study into reproduce.md,
reproduce.html, PNG figures and findings.json.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from coordbench.errors import ConfigError

# paper name -> module
PAPERS: dict[str, str] = {
    "mecobench": "coordbench.reproduce.mecobench",
    "cocobench": "coordbench.reproduce.cocobench",
    "stat": "coordbench.reproduce.stat",
    "cross": "coordbench.reproduce.cross",
    "cohub": "coordbench.reproduce.cohub",
    "metrics": "coordbench.reproduce.metrics",
}


def paper_module(name: str) -> ModuleType:
    """Return the module that reproduces paper `name` (ConfigError naming the valid ones)."""
    if name not in PAPERS:
        raise ConfigError(f"unknown paper {name!r}; choose from {', '.join(PAPERS)}")
    return import_module(PAPERS[name])
