"""What a reproduction returns: findings, the items (tables and figures) they belong to, and
the study that holds them."""

from __future__ import annotations

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

    `holds` is True or False where our numbers decide the claim, None where they cannot
    (too few episodes, a quantity that does not apply to these agents); `note` says why, or
    where coordbench deliberately measures differently.
    """

    id: str
    paper_ref: str
    claim: str
    paper_value: Any
    coordbench_value: Any
    holds: bool | None
    note: str = ""
    # the models whose runs decide the finding (empty: offline agents only)
    models: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Return the finding as the JSON object `reproduce --json` prints."""
        return {"id": self.id, "paper_ref": self.paper_ref, "claim": self.claim,
                "paper_value": self.paper_value, "coordbench_value": self.coordbench_value,
                "holds": self.holds, "note": self.note, "models": list(self.models)}


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


VERDICT_RULE = (
    "Each verdict says whether the paper's qualitative finding holds on these runs: *holds* "
    "when the whole 95% interval of the effect lies on the claimed side of zero; *does not "
    "hold* when the estimate lies on the other side or at zero (the runs show no effect in "
    "the claimed direction, whatever the interval's width); *undecided* when the estimate "
    "points the claimed way but the interval includes zero, or the quantity does not occur "
    "(the note says which). Intervals: Wilson for rates, Newcombe for differences of rates, "
    "Welch for differences of means, t for slopes, a stratified bootstrap for "
    "stratum-adjusted differences.")


def verdict(holds: bool | None) -> str:
    """Return the word a report prints for a finding's verdict."""
    return {True: "holds", False: "does not hold", None: "undecided"}[holds]


def direction(diff: dict[str, Any] | None, sign: int) -> bool | None:
    """Return whether a difference shows the claimed direction (`sign` +1: up, -1: down):
    True when its whole 95% interval lies on that side of 0, False when its estimate lies on
    the other side or at 0, None when the estimate agrees but the interval includes 0 (the
    runs cannot tell) or there is no estimate."""
    if not diff or diff.get("delta") is None:
        return None
    d, lo, hi = diff["delta"], diff.get("lo"), diff.get("hi")
    if sign * d <= 0:
        return False
    bound = lo if sign > 0 else hi
    if bound is None:
        return None
    return True if sign * bound > 0 else None


def slope_direction(fit: dict[str, Any] | None, sign: int) -> bool | None:
    """Return `direction` for a fitted slope (`common.ols_slope`)."""
    if not fit or fit.get("slope") is None:
        return None
    return direction({"delta": fit["slope"], "lo": fit["lo"], "hi": fit["hi"]}, sign)


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
