"""The one run report: every condition's section, chosen by the suite its manifest records.

`compose(run)` groups the run's conditions by suite, asks each family's section for its
markdown, console tables and results, adds the "who and when" section of a run that
`coordbench attribute` has attributed (`RUN/attribution/`), and returns them in one `Report`;
`write(run, report)` writes `results.json` and `report.md`. A training directory
(`coordbench stat train --out`) is reported the same way: its manifest records suite
`stat_train`, and an older training directory without a manifest is recognised by its
result files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coordbench.attribution.table import by_condition
from coordbench.attribution.table import markdown as attribution_markdown
from coordbench.core.rundir import RunDir
from coordbench.errors import RunDirError
from coordbench.runner.family import families, family_of

from .section import Section


def suite_of(condition: str, spec: dict[str, Any]) -> str:
    """Return the suite a condition belongs to (as recorded; inferred for old manifests)."""
    name = family_of(condition, spec)
    if name is None:
        raise RunDirError(f"condition {condition} records no suite")
    return name


@dataclass
class Report:
    """A composed report: its markdown, the console tables, and results per condition."""

    markdown: str
    tables: list[Any] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (suite, its conditions, its section) in report order: what the HTML report draws
    parts: list[tuple[str, list[str], Section]] = field(default_factory=list)
    intro: str = ""  # the markdown above the families' sections
    # the "who and when" section after the families' (empty: the run was never attributed)
    # and its per-condition table (attribution.table.by_condition; None: never attributed)
    who_when: str = ""
    attribution: dict[str, Any] | None = None

    def results_json(self) -> str:
        """Return results.json's text (an "attribution" key only for an attributed run)."""
        body: dict[str, Any] = {"generated": datetime.now(UTC).isoformat(),
                                "conditions": self.results}
        if self.attribution is not None:
            body["attribution"] = self.attribution
        return json.dumps(body, indent=2) + "\n"


def compose(run: RunDir) -> Report:
    """Return the report of every condition in `run`, recomputed from its saved runs."""
    by_suite: dict[str, list[str]] = {}
    for cond, spec in run.conditions.items():
        by_suite.setdefault(suite_of(cond, spec), []).append(cond)
    sections = {f.name: f.get("report") for f in families() if f.report is not None}
    unknown = sorted(set(by_suite) - set(sections))
    if unknown:
        raise RunDirError(f"{run.path} has conditions of unknown suite(s) {', '.join(unknown)}; "
                          "it was written by another coordbench")
    drawn = [(name, conds, sections[name](run, conds)) for name, conds in by_suite.items()]
    drawn = [(n, c, p) for n, c, p in drawn if p.markdown or p.results]
    from .crossplay_report import section as crossplay_section

    cross = crossplay_section(run)
    if cross is not None:  # a crossplay run: its matrix leads the report
        drawn.insert(0, ("crossplay", [], cross))
    parts = [p for _, _, p in drawn]
    m = run.manifest
    title = ", ".join(p.title for p in parts) or "no finished episodes"
    lines = [f"# coordbench report: {title}", "",
             f"- run: `{run.path.name}`; coordbench {m.get('coordbench_version')}, "
             f"git {m.get('git_sha') or 'unknown'}; trajectory schema {m.get('schema_version')}",
             "- every number is recomputed from the saved trajectories (`coordbench report DIR`)"]
    errored = sum(len(run.errored_keys(c)) for c in run.conditions)
    if errored:
        lines.append(f"- {errored} episode{'s' * (errored != 1)} errored by model provider "
                     "failures are not counted (`errors/`); rerunning the command replays them")
    lines.append("")
    intro = "\n".join(lines) + "\n"
    text = intro + "\n".join(p.markdown for p in parts if p.markdown)
    attributed = attributions(run)
    who_when = attribution_markdown(attributed)
    if who_when:
        text = text.rstrip("\n") + "\n\n" + who_when.rstrip("\n") + "\n"
    report = Report(text, [t for p in parts for t in p.tables], parts=drawn, intro=intro,
                    who_when=who_when,
                    attribution=by_condition(attributed) if attributed else None)
    for p in parts:
        report.results.update(p.results)
    return report


def attributions(run: RunDir) -> list[dict[str, Any]]:
    """Return the run's stored attributions and refusals (`coordbench attribute`) of the
    conditions its manifest holds ([] for a run never attributed)."""
    if not (run.path / "attribution").is_dir():  # attribution.run.FOLDER, not imported for
        return []                                 # nothing: it loads the replay machinery
    from coordbench.attribution.run import read_results

    return [r for r in read_results(run.path) if r.get("condition") in run.conditions]


def write(run: RunDir, report: Report, html: bool = True) -> None:
    """Write results.json, report.md and (with `html`) report.html atomically."""
    run.write_text("results.json", report.results_json())
    run.write_text("report.md", report.markdown)
    if html:
        from .html import render

        run.write_text("report.html", render(run, report))


def open_for_report(path: str | Path) -> RunDir:
    """Return the run directory at `path`; a training directory written before it had a
    manifest gets one (its result files are left as they are)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{path} is a file, not a run directory")
    for name in ("results.json", "report.md", "report.html"):
        # both are rewritten at the end: a folder in their place would fail after all the work
        if (path / name).is_dir():
            raise RunDirError(f"{path / name} is a folder; the report writes a file there "
                              "(move the folder away)")
    if path.is_dir() and not (path / "manifest.json").exists() and any(path.glob("*_seed*.json")):
        from .stat_train_report import adopt

        return adopt(path)
    return RunDir.open(path)
