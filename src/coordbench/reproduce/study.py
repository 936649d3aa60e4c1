"""What a reproduction returns: findings, the items (tables and figures) they belong to, and
the study that holds them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordbench.core.stats import few


@dataclass(frozen=True)
class Options:
    """How a reproduction runs: a short subset (`quick`), a model that fills the paper's
    model rows (`model`, from the registry `models`), cases per condition (`limit`), a cap
    on team steps per household episode for smoke runs (`max_steps`); for a study that
    trains (STAT), the configurations (`regime`), methods, seeds and steps per run."""

    quick: bool = False
    model: str | None = None
    models: str | None = None
    limit: int | None = None
    max_steps: int | None = None
    regime: str | None = None
    methods: tuple[str, ...] | None = None
    seeds: tuple[int, ...] | None = None
    steps: int | None = None
    # who plays the offline rows: "rule" (coordbench's rule minds) or a dials profile of
    # imperfect rule minds (agents.team.dials.PROFILES)
    offline_agents: str = "rule"
    # a folder of the paper's own task files (mecobench) or instance files (cocobench) to
    # play instead of coordbench's generated sets
    tasks: str | None = None
    instances: str | None = None
    # every model of a many-model study (`model` is the one this Options plays)
    model_set: tuple[str, ...] = ()
    # the robots of a physical study (cohub): cobot | g1
    embodiment: str = "cobot"
    # the model rows' seed (`--repeats K` plays seeds 0..K-1), and K
    seed: int = 0
    repeats: int = 1
    # the attribution study's log-reading judge (a model alias of `models`)
    judge: str | None = None

    @property
    def agents(self) -> str:
        """Return who plays the rows: "llm" with a model, else the offline agents."""
        return "llm" if self.model else "offline"

    def dials(self, allowed: Sequence[str]):
        """Return the dials of the offline rule minds (None: the plain rule minds), those of
        the profile a family's minds can fail by."""
        from coordbench.agents.team.dials import profile, restricted

        if self.offline_agents == "rule":
            return None
        return restricted(profile(self.offline_agents), allowed)

    def offline_who(self, minds: str) -> str:
        """Return how a study's preamble names its offline `minds` (e.g. "rule teams")."""
        if self.offline_agents == "rule":
            return f"coordbench's {minds} (offline; no model)"
        from coordbench.agents.team.dials import profile

        return (f"coordbench's {minds} made imperfect (offline profile "
                f"`{self.offline_agents}`: {profile(self.offline_agents).label()}; each "
                "family takes the failures its minds have), not a model")


def gathered_json(folder: str | Path, out: Path, what: str) -> Path:
    """Return one JSON list file inside the run holding every item of the `*.json` files of
    `folder` (files in name order; a file holds a list or one object), written once per
    content; ConfigError (one line) names a folder without such files or a file that is not
    JSON."""
    import hashlib
    import json

    from coordbench.core.atomic import write_atomic
    from coordbench.core.files import read_json
    from coordbench.errors import ConfigError

    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder of {what} files")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise ConfigError(f"{folder} holds no {what} files (*.json)")
    items: list[Any] = []
    for f in files:
        data = read_json(f, f"{what} file")
        items += data if isinstance(data, list) else [data]
    if not items:
        raise ConfigError(f"{folder}: its {what} files hold no {what}")
    text = json.dumps(items)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    path = Path(out) / f"reproduce-{what}s" / f"{folder.name or 'set'}-{digest}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return path


def model_settings(options: Options) -> Any:
    """Return the model harness settings of a study played by `options.model` (None
    offline), after checking the alias resolves (an unknown alias: one ConfigError line
    naming the known ones, before any work)."""
    if not options.model:
        return None
    from coordbench.llm.client import HarnessSettings, harness_for

    # repeated trials must call the model again, unseeded: a cached reply, or a provider
    # seed, would repeat the first trial
    repeats = options.repeats > 1
    settings = HarnessSettings(options.models, not repeats, None, None,
                               None if repeats else 0)
    harness_for(settings).provider(options.model)
    return settings


class Episodes:
    """A study's trajectories by condition key ({key: condition name}), each condition
    loaded once; a key whose condition the run lacks has no episodes."""

    def __init__(self, run: Any, names: dict[Any, str]) -> None:
        self.run = run
        self.names = names
        self._cache: dict[Any, list[Any]] = {}

    @property
    def keys(self) -> list[Any]:
        """Return the study's keys in plan order."""
        return list(self.names)

    def __call__(self, *ks: Any) -> list[Any]:
        """Return the episodes of the conditions `ks`, concatenated."""
        out: list[Any] = []
        for k in ks:
            if k not in self._cache:
                name = self.names.get(k)
                self._cache[k] = (self.run.load_episodes(name)
                                  if name in self.run.conditions else [])
            out += self._cache[k]
        return out


def planned_episodes(run: Any, ks: list[Any], condition: Any) -> Episodes:
    """Return a study's episodes by key, where `condition(key)` gives the key's planned
    (suite, condition, limit)."""
    names = {}
    for k in ks:
        suite, cond, _ = condition(k)
        names[k] = suite.condition(cond)
    return Episodes(run, names)


@dataclass
class Finding:
    """One claim of the paper checked on coordbench's runs.

    `holds` is True or False where our numbers decide the claim, None where they cannot;
    `verdict` says which of four (`VERDICTS`) and `reason` why. Give `holds` a `Verdict`
    (from `judge`) and both are filled from it; a plain True / False / None is read as
    holds / contradicted / inconclusive, or untestable where the note starts with
    "untestable:". `note` says where coordbench deliberately measures differently.
    """

    id: str
    paper_ref: str
    claim: str
    paper_value: Any
    coordbench_value: Any
    holds: bool | None | Verdict
    note: str = ""
    # the models whose runs decide the finding (empty: offline agents only)
    models: list[str] = field(default_factory=list)
    verdict: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        v = self.holds
        if not isinstance(v, Verdict):
            v = from_holds(v, self.note)
        self.holds = v.holds
        self.verdict = self.verdict or v.verdict
        self.reason = self.reason or v.reason

    def as_json(self) -> dict[str, Any]:
        """Return the finding as the JSON object `reproduce --json` prints."""
        return {"id": self.id, "paper_ref": self.paper_ref, "claim": self.claim,
                "paper_value": self.paper_value, "coordbench_value": self.coordbench_value,
                "holds": self.holds, "verdict": self.verdict, "reason": self.reason,
                "note": self.note, "models": list(self.models)}


@dataclass
class Item:
    """One table or figure of the paper: what the paper reports (markdown), what coordbench
    measures (markdown tables), its figures (`report.figures.Figure`), the findings it
    decides, and its numbers as data (`data`, written to findings.json)."""

    ref: str
    title: str
    paper: str
    ours: str
    figures: list[Any] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    data: Any = None
    note: str = ""


@dataclass
class Study:
    """A paper's reproduction: its items in the paper's order, and a preamble saying which
    agents played and on which runs."""

    paper: str
    title: str
    preamble: str
    items: list[Item] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """Return every item's findings in order."""
        return [f for item in self.items for f in item.findings]

    def as_json(self) -> dict[str, Any]:
        """Return {"paper", "findings": [...]} (the `--json` contract)."""
        return {"paper": self.paper, "findings": [f.as_json() for f in self.findings]}


VERDICTS = ("holds", "contradicted", "inconclusive", "untestable")
VERDICT_RULE = (
    "Each finding gets one of four verdicts on these runs: *holds* when the whole 95% "
    "interval of the effect lies on the claimed side of zero; *contradicted* when it lies "
    "wholly on the other side; *inconclusive* when it includes zero (the reason says about "
    "how many units would decide it at the observed variance); *untestable* when there is "
    "nothing to test: every value equal, no events, too few units, or the claim is about "
    "something these runs do not have (the reason says which). Intervals: Wilson for "
    "rates, Newcombe for differences of rates, Welch for differences of means, t for "
    "slopes, Fisher's z for correlations, bootstrap for paired and stratum-adjusted "
    "differences.")


@dataclass(frozen=True)
class Verdict:
    """A finding's verdict (one of `VERDICTS`) and why."""

    verdict: str
    reason: str

    @property
    def holds(self) -> bool | None:
        """Return the verdict as `holds`: True, False (contradicted) or None."""
        return {"holds": True, "contradicted": False}.get(self.verdict)


def from_holds(holds: bool | None, note: str = "") -> Verdict:
    """Return the verdict of a plain True / False / None (a finding decided by its own rule:
    the note, where it starts with "untestable:", gives the reason it cannot be tested)."""
    if holds is True:
        return Verdict("holds", "the runs show the claimed direction (" + (note or
                                                                          "see the value") + ")")
    if holds is False:
        return Verdict("contradicted", "the runs show the other direction (" + (note or
                                                                               "see the value")
                       + ")")
    if note.startswith("untestable:"):
        return Verdict("untestable", note[len("untestable:"):].strip())
    if note.startswith(ABSENT) or any(x in note for x in ABSENT_INSIDE):
        return Verdict("untestable", note)  # the note names what these runs lack
    return Verdict("inconclusive", note or "the runs cannot tell either way")


# how a note of an undecided finding says that something it needs is not in the runs
ABSENT = ("no ", "needs ", "too few", "untestable")
ABSENT_INSIDE = ("not in these runs", "missing", "not both in these runs")


def judge_rate(r: dict[str, Any] | None, below: float, never: bool = False) -> Verdict:
    """Return the verdict of a claim that a rate is low: below `below` (holds when its whole
    95% interval is, contradicted when the whole interval is at or above it), or with
    `never`, that the event never happens (contradicted by one event; holds when none
    occurred and the interval's upper end is below `below`); untestable without units."""
    if not r or not r.get("n"):
        return Verdict("untestable", "no episodes to count")
    k, n, lo, hi = r.get("count"), r["n"], r["lo"], r["hi"]
    shown = f"{r['mean']:.3f} [{lo:.3f}, {hi:.3f}] of {n}"
    if never and k:
        return Verdict("contradicted", f"{k} of {n}: it happens")
    if hi < below:
        return Verdict("holds", f"{shown} lies below {below:g}")
    if not never and lo >= below:
        return Verdict("contradicted", f"{shown} lies at or above {below:g}")
    if not k:  # none seen: the Wilson upper end, z^2 / (n + z^2), falls below `below` at
        need = int(math.ceil(1.96 ** 2 * (1 - below) / below)) + 1  # about this many units
    else:
        p = r["mean"]
        need = int(math.ceil(1.96 ** 2 * p * (1 - p) / (below - p) ** 2)) if p < below \
            else None
    more = (f"; about {need} units would decide it at the observed rate" if need
            else "")
    return Verdict("inconclusive", f"{shown} includes {below:g}{more}")


def _n(diff: dict[str, Any]) -> int | None:
    """Return the units behind a difference: its smaller group (a slope's or correlation's
    points)."""
    ns = [k for k in (diff.get("n"), diff.get("n_ref")) if isinstance(k, int)]
    return min(ns) if ns else None


def judge(diff: dict[str, Any] | None, sign: int, unit: str = "units",
          missing: str = "no runs to compare") -> Verdict:
    """Return the verdict of a difference, slope or correlation (`sign` +1: the claim is up,
    -1: down): holds when its whole 95% interval lies on the claimed side of 0, contradicted
    when it lies wholly on the other, inconclusive when it includes 0 (the reason says about
    how many `unit` per group would decide it at the observed variance), untestable where
    there is nothing to test (no estimate, every value equal, no events, too few units;
    `missing`: the reason where there is no estimate at all)."""
    if diff and "slope" in diff and "delta" not in diff:
        diff = {"delta": diff["slope"], "lo": diff.get("lo"), "hi": diff.get("hi"),
                "n": diff.get("n")}
    if not diff:
        return Verdict("untestable", missing.removeprefix("untestable:").strip())
    n, d, lo, hi = _n(diff), diff.get("delta"), diff.get("lo"), diff.get("hi")
    counts = (diff.get("count"), diff.get("count_ref"))
    if d is None:
        if n == 0:
            return Verdict("untestable", f"a group has no {unit}")
        if diff.get("method") == "pearson-fisher" and (n or 0) >= 4:
            return Verdict("untestable", "no variation: a variable is the same in every unit")
        return Verdict("untestable", f"too few {unit} for an estimate (n = {n})")
    if None not in counts and diff.get("n") and diff.get("n_ref"):
        k_a, k_b = counts
        if k_a == k_b == 0:
            return Verdict("untestable", f"no events: 0 of {diff['n']} and 0 of "
                                         f"{diff['n_ref']}")
        if k_a == diff["n"] and k_b == diff["n_ref"]:
            return Verdict("untestable", f"no variation: every unit counts in both groups "
                                         f"({k_a} of {diff['n']}, {k_b} of {diff['n_ref']})")
    if lo is None or hi is None:
        return Verdict("untestable", f"too few {unit} for an interval (n = {n})")
    # sums of equal floats differ in the last bits: within `tol` of 0 is 0
    tol = 1e-9 * max(1.0, abs(d), abs(lo), abs(hi))
    if abs(lo) <= tol and abs(hi) <= tol:
        return Verdict("untestable", "no variation: every value is equal"
                       + (f" ({n} {unit})" if n else ""))
    if lo == hi and (n or 0) < 2:
        return Verdict("untestable", f"a single {unit[:-1] if unit.endswith('s') else unit}: "
                                     "no interval")
    low, high = (lo, hi) if sign > 0 else (-hi, -lo)  # the claimed side is positive
    shown = f"{d:+.3g} [{lo:+.3g}, {hi:+.3g}]"
    if low > tol:
        return Verdict("holds", f"{shown} lies on the claimed side of 0")
    if high < -tol:
        return Verdict("contradicted", f"{shown} lies on the other side of 0")
    half = (hi - lo) / 2
    if abs(d) <= 1e-9 * max(1.0, half) or not n:  # an estimate of 0 up to rounding
        return Verdict("inconclusive", f"{shown} includes 0 with an estimate of 0: no number "
                                       f"of {unit} decides an effect not seen")
    need = n * (half / abs(d)) ** 2
    side = "claimed" if sign * d > 0 else "other"
    many = (f"about {int(math.ceil(need))} {unit} (now {n})" if need < 1e6 else
            f"more than a million {unit} (now {n})")
    return Verdict("inconclusive", f"{shown} includes 0; the estimate points the {side} way, "
                                   f"and {many} would decide it at the observed variance")


def both(*verdicts: Verdict) -> Verdict:
    """Return the verdict of a claim made of several parts that must all hold: contradicted
    if one is, untestable if one is, holds if all do, else inconclusive."""
    for kind in ("contradicted", "untestable", "inconclusive"):
        hit = [v for v in verdicts if v.verdict == kind]
        if hit:
            return Verdict(kind, "; ".join(v.reason for v in hit))
    return Verdict("holds", "; ".join(v.reason for v in verdicts))


def verdict(holds: bool | None) -> str:
    """Return the word a report prints for a plain `holds` value."""
    return from_holds(holds).verdict


def direction(diff: dict[str, Any] | None, sign: int) -> bool | None:
    """Return `judge(diff, sign).holds`: True when the difference's whole 95% interval lies on
    the claimed side (`sign` +1: up, -1: down), False when it lies wholly on the other, None
    otherwise."""
    return judge(diff, sign).holds


def slope_direction(fit: dict[str, Any] | None, sign: int) -> bool | None:
    """Return `direction` for a fitted slope (`common.ols_slope`)."""
    return judge(fit, sign).holds


def show(value: Any, digits: int = 3) -> str:
    """Return a number, a rate/mean dict ("m [lo, hi]") or a difference dict ("+d [lo, hi]")
    as table text (n/a where undefined; noted where fewer than `few` units stand behind it:
    a slope's points, a difference's smaller group)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if "slope" in value:
            value = {"delta": value["slope"], "lo": value["lo"], "hi": value["hi"],
                     "n": value.get("n")}
        signed = "delta" in value
        x = value.get("delta" if signed else "mean")
        if x is None:
            return "n/a"
        spec = f"{'+' if signed else ''}.{digits}f"
        out = format(x, spec)
        if value.get("lo") is not None and value.get("hi") is not None:
            out += f" [{format(value['lo'], spec)}, {format(value['hi'], spec)}]"
        ns = [k for k in (value.get("n"), value.get("n_ref")) if isinstance(k, int)]
        return out + (few(min(ns)) if ns else "")
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """Return a markdown table; dict cells go through `show`."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(show(c) if not isinstance(c, str) else c for c in row)
                   + " |")
    return "\n".join(out) + "\n"
