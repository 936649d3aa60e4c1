"""Team specs: who sits in each seat of a team (`--team SEAT=KIND[:ARG],...`).

A team spec names each seat's agent: `agent_0=llm:A,agent_1=llm:B,agent_2=rule`. The kind is
one of llm, rule, oracle, learned, scripted, human, and the argument names the particular
agent (a model alias for llm, a checkpoint for learned, an allocator for scripted, a variant
for rule: `rule:reverse` yields claimed targets to higher-index teammates instead of lower,
`rule:perception=0.2` fails as the dial says; `+` joins them). `expert` is
`scripted:expert`. A `human` seat is played by a person through `coordbench play`. A plain
integer keeps its old meaning: the team size, every seat played by the command's `--agents`.
Each family says which kinds its seats take.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from coordbench.errors import ConfigError

KINDS = ("llm", "rule", "oracle", "learned", "scripted", "human")
NEEDS_ARG = frozenset({"llm", "learned", "scripted"})
_SEAT = re.compile(r"agent_([0-9]{1,4})")


@dataclass(frozen=True)
class Seat:
    """One seat's agent: its kind and argument (a model alias, a checkpoint, ...)."""

    kind: str
    arg: str | None = None

    @property
    def driver(self) -> str:
        """Return the seat as the header's `team[].driver` names it (`llm:A`, `rule`)."""
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"


def parse_seat(agent: str, allowed: Sequence[str], family: str, where: str) -> Seat:
    """Return the seat `agent` names (`KIND[:ARG]`; `expert` is `scripted:expert`);
    ConfigError (one line, starting with `where`) names an unknown kind, a kind this family's
    seats do not take, or a missing argument."""
    agent = agent.strip()
    kind, _, arg = ("scripted:expert" if agent == "expert" else agent).partition(":")
    if kind not in KINDS:
        raise ConfigError(f"{where}: unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    if kind not in allowed:
        raise ConfigError(f"{where}: a {family} seat is one of {', '.join(allowed)}, "
                          f"not {kind}")
    if kind in NEEDS_ARG and not arg.strip():
        raise ConfigError(f"{where}: {kind} needs its argument"
                          + (f" ({kind}:ALIAS)" if kind == "llm" else ""))
    return Seat(kind, arg.strip() or None)


def parse_team(text: str, allowed: Sequence[str], family: str) -> int | tuple[Seat, ...]:
    """Return the team size (a plain integer) or the seats of a team spec, in seat order;
    ConfigError (one line) names a malformed entry, a seat that is not agent_0..agent_{n-1},
    a repeated seat, a kind this family's seats do not take, or a missing argument."""
    text = str(text).strip()
    if re.fullmatch(r"[0-9]{1,6}", text):
        return int(text)
    seats: dict[int, Seat] = {}
    for entry in (e.strip() for e in text.split(",")):
        name, sep, agent = entry.partition("=")
        m = _SEAT.fullmatch(name.strip())
        if not sep or not m:
            raise ConfigError(f"--team {entry!r}: write SEAT=KIND[:ARG] with SEAT agent_0, "
                              "agent_1, ... (or a plain team size)")
        k = int(m.group(1))
        if k in seats:
            raise ConfigError(f"--team names seat agent_{k} twice")
        seats[k] = parse_seat(agent, allowed, family, f"--team agent_{k}={agent.strip()}")
    missing = [i for i in range(len(seats)) if i not in seats]
    if missing:
        raise ConfigError(f"--team has {len(seats)} seats but no agent_{missing[0]}: name "
                          f"agent_0 .. agent_{len(seats) - 1}")
    return tuple(seats[i] for i in range(len(seats)))


def team_label(seats: Sequence[Seat]) -> str:
    """Return a team spec as a short name part, e.g. `llm-A+llm-B+rule`."""
    return "+".join(s.driver.replace(":", "-") for s in seats)


def has_human(seats: Sequence[Seat] | None) -> bool:
    """Return whether a person plays one of `seats` (the episode waits on a page)."""
    return any(s.kind == "human" for s in seats or ())


def one_partner(seats: Sequence[Seat]) -> Seat | None:
    """Return the one agent every seat holds (that partner's self-play), None for a mixed
    team."""
    return seats[0] if seats and all(s == seats[0] for s in seats) else None


def model_aliases(seats: Sequence[Seat] | None) -> set[str]:
    """Return the model aliases of the seats models play (empty: no model plays)."""
    return {str(s.arg) for s in seats or () if s.kind == "llm"}


def has_model(seats: Sequence[Seat] | None) -> bool:
    """Return whether a model plays one of `seats` (the team is model-driven)."""
    return any(s.kind == "llm" for s in seats or ())
