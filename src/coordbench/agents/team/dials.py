"""Dials that make offline minds fail the way model-driven teams fail.

coordbench's rule minds never misread a scene, never claim work they did not do and never
break a protocol, so a study played by them says little about teams that do. Each dial
injects one failure at a set rate, independently per agent and per opportunity:

- perception (rate): misread a seen object's class or room (household) or the object an
  action targets (constructs), or a task's position (STAT);
- hallucination (rate): believe the task done when it is not (household: a `done` action and
  a DONE note about the agent's claim; constructs: the planner stops, as the paper's DONE
  without success);
- message_loss (rate): a teammate's message does not reach the agent;
- memory (steps, 0 = unbounded): forget what was seen or heard more than k steps ago;
- protocol_violation (rate): a decision that cannot be parsed (a recorded protocol failure);
- message_cost (tokens): every message the agent sends costs this many tokens (a
  shared-memory board write is not a message);
- contention (rate, household): the agent goes for the object a teammate grabs or opens in
  the same step (a same-step conflict);
- handover_slip (rate, household): a receiver a teammate hands over to is not ready (it walks
  off instead of receiving), so the handover fails.
- fail_at (a step): one failure at one known step, the ground truth of failure attribution
  (docs/attribution.md): at step t = fail_at the seat misperceives and believes the task done,
  each where its family's minds can (household: a false `done` and its DONE note; constructs:
  the planner stops; STAT: it misreads the task it goes for), and at no other step (the
  physical CoBot expert has its own: `scripted:expert+fail_at=T` lets go of what it holds).

A counterfactual replay (`agents.team.counterfactual`, the `clean` reference) turns one
seat's injected failures off from a given step on: every draw below asks it first.

Draws are pure functions of (episode seed, agent, dial, step, key), so a run is reproducible
and a dial at 0 draws nothing: with every dial at 0 a mind plays exactly as without dials.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from numbers import Integral
from typing import Any, TypeVar

from coordbench.agents.team.counterfactual import faults_off
from coordbench.errors import ConfigError

RATES = ("perception", "hallucination", "message_loss", "protocol_violation", "contention",
         "handover_slip")
COUNTS = ("memory", "message_cost")
STEPS = ("fail_at",)
DIALS = ("perception", "hallucination", "message_loss", "memory", "protocol_violation",
         "message_cost", "contention", "handover_slip", "fail_at")
# the failures the one-shot dial strikes with at its step (each family's minds ask for theirs)
ONE_SHOT = ("perception", "hallucination")
T = TypeVar("T")


@dataclass(frozen=True)
class Dials:
    """The failure rates (and memory span, message cost) of a population of minds."""

    perception: float = 0.0
    hallucination: float = 0.0
    message_loss: float = 0.0
    memory: int = 0
    protocol_violation: float = 0.0
    message_cost: int = 0
    contention: float = 0.0
    handover_slip: float = 0.0
    fail_at: int | None = None  # a step (0 is the first); None: no one-shot failure

    def __post_init__(self) -> None:
        for name in RATES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                raise ConfigError(f"--dial {name}={v}: a rate must be a number in [0, 1]")
        for name in COUNTS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1_000_000:
                raise ConfigError(f"--dial {name}={v}: must be a whole number >= 0")
        v = self.fail_at
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)
                              or not 0 <= v <= 1_000_000):
            raise ConfigError(f"--dial fail_at={v}: must be a step, a whole number >= 0")

    @property
    def active(self) -> bool:
        """Return whether any dial is set."""
        return bool(self.used())

    def as_dict(self) -> dict[str, Any]:
        """Return every dial by name (the header's `params["dials"]`); the one-shot step
        only where it is set, so a record made before it existed compares equal."""
        out = asdict(self)
        if out["fail_at"] is None:
            del out["fail_at"]
        return out

    def label(self) -> str:
        """Return the set dials as a short name part (e.g. `perception0.1-memory8`), '' if
        none is set."""
        return "-".join(f"{k}{_short(getattr(self, k))}" for k in self.used())

    def used(self) -> list[str]:
        """Return the names of the dials that are set (a one-shot step 0 is set)."""
        return [k for k, v in self.as_dict().items()
                if (v is not None if k in STEPS else bool(v))]


def _short(value: float) -> str:
    """Return a dial's value as a name part: the short form where it reads back as the same
    number (0.1, 8), else every digit (two rates equal to six digits stay apart)."""
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


# named populations for the studies' offline rows (`reproduce ... --offline-agents NAME`)
PROFILES: dict[str, Dials] = {
    "rule": Dials(),
    # per-decision rates that compound over an episode of tens of steps to about the open
    # models' failure levels of the papers (CoCoBench Fig. 9a: 17.5% protocol failures)
    "imperfect": Dials(perception=0.05, hallucination=0.005, message_loss=0.2, memory=12,
                       protocol_violation=0.01, message_cost=20),
}


def profile(name: str) -> Dials:
    """Return the dials of the offline profile `name`; ConfigError names the choices."""
    if name not in PROFILES:
        raise ConfigError(f"unknown offline profile {name!r}; choose from "
                          f"{', '.join(PROFILES)}")
    return PROFILES[name]


def restricted(dials: Dials | None, allowed: Sequence[str]) -> Dials | None:
    """Return `dials` with the dials a family's minds cannot fail by set to 0 (a profile
    played by every family: each takes the failures it has)."""
    if dials is None:
        return None
    return Dials(**{k: (v if k in allowed else None if k in STEPS else type(v)(0))
                    for k, v in dials.as_dict().items()})  # an unset step is left out


def parse_dials(items: Sequence[str] | None) -> Dials | None:
    """Return the dials `--dial NAME=VALUE` items set (None when none is given);
    ConfigError names an unknown failure, a malformed item or a value out of range."""
    if not items:
        return None
    values: dict[str, Any] = {}
    for item in items:
        name, sep, raw = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"--dial {item!r}: write NAME=VALUE, e.g. perception=0.1")
        if name not in DIALS:
            raise ConfigError(f"--dial {name}: unknown failure; choose from {', '.join(DIALS)}")
        try:
            value: Any = float(raw) if name in RATES else int(raw)
        except ValueError:
            kind = ("a number in [0, 1]" if name in RATES else
                    "a step, a whole number >= 0" if name in STEPS else "a whole number >= 0")
            raise ConfigError(f"--dial {name}={raw}: must be {kind}") from None
        if name in RATES and value != value:  # NaN
            raise ConfigError(f"--dial {name}={raw}: a rate must be a number in [0, 1]")
        values[name] = value
    return Dials(**values)


def dials_suffix(dials: Dials | None) -> str:
    """Return the condition-name part of a population's dials ('' without dials)."""
    return "" if dials is None else f"_dials-{dials.label() or 'zero'}"


def check_applicable(dials: Dials | None, allowed: Sequence[str], who: str) -> None:
    """Raise ConfigError naming the first set dial that `who` (a family's minds) cannot
    fail by."""
    if dials is None:
        return
    for name in dials.used():
        if name not in allowed:
            raise ConfigError(f"--dial {name}: {who} cannot fail this way (dials here: "
                              f"{', '.join(allowed)})")


def dials_from(raw: Any) -> Dials | None:
    """Return the Dials of a spec field (a Dials, a dict from a manifest, or None)."""
    if raw is None or isinstance(raw, Dials):
        return raw
    if isinstance(raw, dict):
        return Dials(**raw)
    raise ConfigError(f"dials must be a mapping of dial names to values, not {raw!r}")


class Faults:
    """One agent's injected failures: deterministic draws per (seed, agent, dial, key)."""

    def __init__(self, dials: Dials | None, seed: int | str, agent: int) -> None:
        self.dials = dials or Dials()
        self.seed, self.agent = seed, agent

    def uniform(self, name: str, *key: Any) -> float:
        """Return a uniform draw in [0, 1) for (this agent, `name`, `key`)."""
        text = f"{self.seed}/{self.agent}/{name}/" + "/".join(map(str, key))
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(),
                              "big") / 2**64

    def hit(self, name: str, *key: Any) -> bool:
        """Return whether the failure `name` strikes at `key` (a step first, then what the
        family draws for): never for a dial at 0, always at the one-shot step for the
        failures it strikes with, never from the step a counterfactual replay turns this
        seat's failures off."""
        t = int(key[0]) if key and isinstance(key[0], Integral) \
            and not isinstance(key[0], bool) else None
        if t is not None and faults_off(self.agent, t):
            return False
        if name in ONE_SHOT and self.dials.fail_at is not None and t == self.dials.fail_at:
            return True
        rate = getattr(self.dials, name)
        return rate > 0 and self.uniform(name, *key) < rate

    def pick(self, options: Sequence[T], name: str, *key: Any) -> T:
        """Return one of `options`, drawn for (`name`, `key`)."""
        return options[int(self.uniform(name + "/pick", *key) * len(options)) % len(options)]

    def heard(self, messages: Sequence[T], t: int) -> list[T]:
        """Return the teammates' `messages` that reach this agent at step `t` (each lost at
        the message_loss rate; its own always arrive)."""
        if not self.dials.message_loss:
            return list(messages)
        out = []
        for m in messages:
            sender = getattr(m, "sender", None)
            if sender == self.agent or not self.hit(
                    "message_loss", t, sender, getattr(m, "phase", ""), getattr(m, "round", 0),
                    getattr(m, "content", "")):
                out.append(m)
        return out

    def violation(self, t: int) -> str | None:
        """Return the reason of an injected protocol violation at step `t`, or None."""
        if self.hit("protocol_violation", t):
            return "injected protocol violation: the decision could not be parsed"
        return None


def with_message_cost(messages: Sequence[T], dials: Dials | None) -> list[T]:
    """Return `messages` (protocol Messages or MessageEvents) with each one's tokens raised by
    the message cost; the same objects when there is none. A shared-memory board write is
    not a message and costs nothing (the protocol skips message exchange)."""
    if dials is None or not dials.message_cost:
        return list(messages)
    from dataclasses import is_dataclass, replace

    out = []
    for m in messages:
        if getattr(m, "phase", None) == "memory":
            out.append(m)
            continue
        tokens = getattr(m, "tokens", 0) + dials.message_cost
        out.append(replace(m, tokens=tokens) if is_dataclass(m)  # type: ignore[type-var]
                   else m.model_copy(update={"tokens": tokens}))  # type: ignore[attr-defined]
    return out
