"""What a study says of its `--limit K` sample (`core.sample`): a line for its preamble, an
item with the strata drawn (findings.json carries them as data), and the findings a sample
too small cannot test: those whose comparison needs a stratum the sample lacks (D4 rows,
3- or 4-agent teams, a second object count) get no verdict, their note saying which strata
are missing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace

from coordbench.core.sample import Sample

from .study import Item, table

UNTESTABLE = "untestable: "


def sample_line(limit: int, samples: Mapping[str, Sample], what: str,
                where: str = "every condition") -> str:
    """Return the preamble's sentence on a `--limit` sample played in `where`: per sampled
    set (`samples`: a name, e.g. "the 240 subset", -> its sample), how many of how many
    `what` and how many per stratum."""
    parts = [f"{name}: {s.describe(what)}" for name, s in samples.items()]
    return (f"--limit {limit} plays a stratified sample in {where} (round-robin over the "
            f"strata, the same cases every run): {'; '.join(parts)}.")


def sample_item(limit: int, samples: Mapping[str, Sample], what: str) -> Item:
    """Return the item listing each sampled set's strata and counts (its `data`: per set,
    {"size", "population", "strata", "missing"})."""
    rows = [[name, stratum, str(n)] for name, s in samples.items()
            for stratum, n in s.strata.items()]
    rows += [[name, stratum, "0"] for name, s in samples.items() for stratum in s.missing]
    return Item("Sample", f"The --limit {limit} sample",
                f"The paper plays every {what[:-1] if what.endswith('s') else what}.",
                table(["set", "stratum", f"{what} drawn"], rows),
                data={name: s.as_json() for name, s in samples.items()},
                note="Each condition plays the stratified sample of its set: strata in "
                     "turn, each stratum's members in a fixed shuffled order. A finding "
                     "whose comparison needs a stratum the sample lacks is untestable.")


def missing_reason(limit: int, sample: Sample, dim: int, want: int, what: str) -> str | None:
    """Return why a comparison over dimension `dim` of `sample` cannot be made (fewer than
    `want` of its values drawn; `what` names them, e.g. "team sizes"), or None when it can."""
    if len(sample.values(dim)) >= want:
        return None
    absent = sample.missing_values(dim)
    strata = [s for s in sample.missing if sample.parts[s][dim] in absent]
    return (f"the --limit {limit} sample holds {len(sample.values(dim))} of the {what} "
            f"(needs {want}); missing strata: {', '.join(strata)}")


def lacks_value(limit: int, sample: Sample, dim: int, value: object, what: str) -> str | None:
    """Return why a comparison that needs `value` of dimension `dim` cannot be made (the
    sample has none of it; `what` names it, e.g. "D4 instance"), or None when it can."""
    if value in sample.values(dim) or value not in {p[dim] for p in sample.parts.values()}:
        return None
    strata = [s for s in sample.missing if sample.parts[s][dim] == value]
    return f"the --limit {limit} sample has no {what}; missing strata: {', '.join(strata)}"


def mark_untestable(items: list[Item], reasons: Mapping[str, str | None]) -> None:
    """Make each finding of `items` whose id `reasons` maps to a reason untestable: no
    verdict (`holds` None) and a note "untestable: <reason>" (in place)."""
    for item in items:
        item.findings = [_untestable(f, reasons[f.id]) if reasons.get(f.id) else f
                         for f in item.findings]


def _untestable(finding, reason: str):
    changes: dict[str, object] = {"holds": None, "note": UNTESTABLE + reason}
    # a Finding that derives a verdict from `holds` and `note` when built: rebuild it with
    # no verdict of its own, so the derived one is the untestable verdict
    names = {f.name for f in fields(finding)}
    changes.update({k: "" for k in ("verdict", "reason") if k in names})
    return replace(finding, **changes)
