"""A family's description of what it plays and who may sit: the `options` and `seats` pieces
of its `Family` record.

`Seats` says which seat kinds a family's teams take (`--team`, `--partner`, `play --team`),
how the family is named in a seat error, and who fills the seats a person leaves to the team.
`Played` is the contract of a family's `suites/<family>/options.py`: its `Option` fields
(`runner/options.py`) and the few functions that turn checked values into conditions. From
these two, `commands/family_commands.py` generates the family's run command, its
`crossplay` cell and its `play` command; nothing else of a command knows the family.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .options import Option


@dataclass(frozen=True)
class Seats:
    """The seat kinds of a family (`agents.team.seats.KINDS` names them all): `kinds` those a
    `--team` seat or a `--partner` takes, `label` the family as a seat error names it, and
    `others` the seat spec that fills the seats a person in `play` leaves to the team."""

    kinds: tuple[str, ...]
    label: str
    others: str = "rule"

    @property
    def partner_kinds(self) -> tuple[str, ...]:
        """Return the kinds a cross-play partner may be (a person plays through `play`)."""
        return tuple(k for k in self.kinds if k != "human")

    @property
    def play_kinds(self) -> tuple[str, ...]:
        """Return the kinds of `play --team` (the person's seat among them)."""
        return (*self.partner_kinds, "human")


@dataclass
class RunPlan:
    """What a family's run command plays: `items` ((suite, spec, limit) each), one label an
    item, the run directory, the model aliases of a model-driven team (None: no model
    plays), the run-wide resources given the harness settings and the reply cap, a note said
    before anything plays, and what the family's summary needs beyond the values."""

    items: list[tuple]
    labels: list[str]
    out: Path
    aliases: set[str] | None = None
    resources: Callable[[Any, int | None], Any] = lambda settings, max_reply_tokens: None
    note: str | None = None
    context: dict[str, Any] = field(default_factory=dict)


class Played(Protocol):
    """A family's options piece (see the module docstring)."""

    options: tuple[Option, ...]
    run_name: str  # the family's run command: `run` (`eval` for STAT and physical)
    run_help: str
    metric: str  # the default metric of its cross-play matrix
    model_replies: bool  # whether its model-driven teams take --max-reply-tokens

    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return what the run command plays for checked `values`."""

    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the number of seats of the team `values` describe (crossplay, play)."""

    def cell(self, values: dict[str, Any], seats: Sequence[Any]) -> tuple[Any, Any]:
        """Return (suite, spec) of the condition a team of `seats` plays."""

    def episodes(self, values: dict[str, Any]) -> int | None:
        """Return how many cases a cell or a play session plays (None: all)."""

    def resources(self, values: dict[str, Any], settings: Any, max_reply_tokens: int | None,
                  seat: Any) -> Any:
        """Return the run-wide resources of a cell or a play session (`seat`: the person's
        session, or None)."""

    def out(self, values: dict[str, Any], command: str) -> Path:
        """Return the default run directory of `command` (crossplay, play)."""

    def label(self, values: dict[str, Any], command: str) -> str:
        """Return the condition label of a play session."""

    def check_team(self, values: dict[str, Any], suite: Any, spec: Any, seats: int) -> None:
        """Raise ConfigError if the cases a team of `seats` would play cannot be played."""

    def check_partners(self, seats: Sequence[Any]) -> None:
        """Raise ConfigError for partners that cannot meet in one matrix."""


class PlayedBase(ABC):
    """Defaults of the `Played` contract a family may keep; a family writes `run`,
    `team_size` and `cell`, and names its run folders (`out_name`, `play_label`)."""

    options: tuple[Option, ...] = ()
    run_name = "run"
    run_help = ""
    metric = "success"
    more_metrics: tuple[str, ...] = ()  # episode metrics a matrix may show beyond `kinds`
    model_replies = True

    def seed(self, values: dict[str, Any]) -> int | None:
        """Return the seed the model harness is given (None: none)."""
        return values.get("seed")

    def check_team(self, values: dict[str, Any], suite: Any, spec: Any, seats: int) -> None:
        """Raise ConfigError if the cases cannot be played (here: a case file fails now)."""
        suite.cases(spec, self.episodes(values))

    def check_partners(self, seats: Sequence[Any]) -> None:  # noqa: B027 - a default
        """Every set of partners meets (a family with partners that cannot meet says so)."""

    def episodes(self, values: dict[str, Any]) -> int | None:
        """Return `values["limit"]` (None: every case)."""
        return values.get("limit")

    # the default run folder's name part (`runs/<command>/<name>`): a format of the values,
    # and in a cross-play matrix the team size too where the family's teams vary in size
    out_name: str
    team_in_name = False
    # what a play session's progress label names after `play`: a format of the values
    play_label: str

    def __init__(self) -> None:
        missing = [a for a in ("out_name", "play_label") if not hasattr(self, a)]
        if missing:
            raise TypeError(f"{type(self).__name__} names no {', '.join(missing)}")

    @abstractmethod
    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return what the run command plays for checked `values`."""

    @abstractmethod
    def cell(self, values: dict[str, Any], seats: Sequence[Any]) -> tuple[Any, Any]:
        """Return (suite, spec) of the condition a team of `seats` plays."""

    def out(self, values: dict[str, Any], command: str) -> Path:
        """Return runs/<command>/<out_name>[-teamN]."""
        name = self.out_name.format(**values)
        if command == "crossplay" and self.team_in_name:
            name += f"-team{self.team_size(values, command)}"
        return Path("runs") / command / name

    @abstractmethod
    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the number of seats of the team `values` describe."""

    def resources(self, values: dict[str, Any], settings: Any, max_reply_tokens: int | None,
                  seat: Any) -> Any:
        """Return the model resources of a team with a model or a person (else None)."""
        from .suite import ModelResources

        if settings is None and seat is None:
            return None
        return ModelResources(settings, max_reply_tokens, seat=seat)

    def label(self, values: dict[str, Any], command: str) -> str:
        """Return the label of a play session's condition."""
        return f"{command} {self.play_label.format(**values)}"
