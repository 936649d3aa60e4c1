"""What is played, described once: a family's options as frozen `Option` records.

A family's `options` piece (its `suites/<family>/options.py`) lists the fields that say what
is played (a configuration, a task set, a protocol, a prior, how many episodes...) with their
type, range, choices, default and help. From that one description coordbench generates the
family's `run`, `crossplay` and `play` commands (`commands/family_commands.py`), checks every
value in one place (`check_values`) and builds the family's spec. As inspect_ai's task
arguments, an option is declared once and reaches every command that plays the family.

This module sits with the runner (it imports only `core`): a family record may name its
options and any layer may read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordbench.core.files import check_range
from coordbench.errors import ConfigError

COMMANDS = ("run", "crossplay", "play")


class _Required:
    """The default of an option the user must give."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Option:
    """One field of what a family plays.

    `name` is the Python parameter (and the key of the values a command hands the family);
    `flag` the command-line flag (default: `--name-with-dashes`); `kind` one of int, float,
    str, bool, Path; `low`/`high` an inclusive range (`low_open`: excluded); `choices` the
    only values taken; `many` a repeatable flag (a list). `commands` are the generated
    commands that offer it, and `defaults` / `helps` a per-command default or help where a
    command differs from `default` / `help` (a person in a seat plays one episode).
    """

    name: str
    kind: type = str
    default: Any = None
    help: str = ""
    flag: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None
    many: bool = False
    metavar: str | None = None
    commands: tuple[str, ...] = COMMANDS
    defaults: Mapping[str, Any] = field(default_factory=dict)
    helps: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.commands) - set(COMMANDS)
        if unknown:
            raise ValueError(f"option {self.name}: no commands {sorted(unknown)}")

    @property
    def cli(self) -> str:
        """Return the option's command-line flag."""
        return self.flag or "--" + self.name.replace("_", "-")

    def default_in(self, command: str) -> Any:
        """Return the option's default in `command`."""
        return self.defaults.get(command, self.default)

    def help_in(self, command: str) -> str:
        """Return the option's help in `command`."""
        return self.helps.get(command, self.help)

    def check(self, value: Any) -> None:
        """Raise ConfigError (one line naming the flag) for a value out of range or not
        among the choices; None (an option left unset) passes."""
        if value is None or value is REQUIRED:
            return
        if self.many:
            for v in value:
                self._check_one(v)
            return
        self._check_one(value)

    def _check_one(self, value: Any) -> None:
        if self.kind in (int, float) and (self.low is not None or self.high is not None):
            check_range(self.cli, value, self.low, self.high, low_open=self.low_open)
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{self.cli} must be one of {', '.join(self.choices)}, "
                              f"not {value!r}")


def option_map(options: Iterable[Option]) -> dict[str, Option]:
    """Return `options` by name; ValueError for a name or flag given twice."""
    by_name: dict[str, Option] = {}
    flags: set[str] = set()
    for o in options:
        if o.name in by_name or o.cli in flags:
            raise ValueError(f"option {o.name} ({o.cli}) is described twice")
        by_name[o.name] = o
        flags.add(o.cli)
    return by_name


def check_values(options: Iterable[Option], values: Mapping[str, Any]) -> None:
    """Check every value of `values` that `options` describe (one line for the first bad
    one, in the options' order)."""
    for o in options:
        if o.name in values:
            o.check(values[o.name])


def for_command(options: Iterable[Option], command: str) -> tuple[Option, ...]:
    """Return the options `command` offers, in order."""
    return tuple(o for o in options if command in o.commands)


def path_or_none(value: Any) -> str | None:
    """Return a path option as the string a spec records (None stays None)."""
    return None if value is None else str(Path(value))


# The injected failures of rule minds: one flag the run commands of three families share.
DIAL = Option("dial", str, None, flag="--dial", many=True, metavar="NAME=VALUE",
              commands=("run",),
              help="Make the rule minds fail (repeatable): perception, hallucination, "
                   "message_loss, protocol_violation (rates in [0, 1]), memory (steps "
                   "remembered; 0: all), message_cost (tokens per message), fail_at (one "
                   "failure at this step; per seat: rule:fail_at=T). Recorded in each "
                   "header's params.")
TEAM_HELP = ("Who sits in the other seats, as --team elsewhere (the person's seat is human; "
             "default: rule minds), e.g. agent_0=human,agent_1=llm:A.")
