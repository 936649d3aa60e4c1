"""What a MECoBench run plays and who sits: the family's `options` and `seats` pieces.

`mecobench run`, `crossplay mecobench` and `play mecobench` are generated from these fields
(`commands/family_commands.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coordbench.agents.team.seats import Seat, has_model, one_partner, parse_team
from coordbench.core.files import check_range
from coordbench.core.limits import MAX_EPISODES, MAX_SEED, MAX_STEPS
from coordbench.errors import ConfigError
from coordbench.runner.options import DIAL, TEAM_HELP, Option, path_or_none
from coordbench.runner.played import PlayedBase, RunPlan, Seats

from .episode import SEAT_KINDS, HouseholdSpec
from .instances import check_playable
from .suite import SUITE, MecobenchResources, mecobench_condition

FAMILY_SEATS = Seats(SEAT_KINDS, "MECoBench", "rule")
MAX_TEAM = 5

OPTIONS = (
    Option("tasks", Path, None, "A MECoBench task file (JSON)."),
    Option("suite", str, None, "A built-in instance set, e.g. v1."),
    Option("structure", str, "parallel", "parallel | sequential"),
    Option("team", str, "2", "Team size (sequential: 2), or who sits where: "
           "agent_0=llm:A,agent_1=rule (a mixed team; seats are llm:ALIAS or rule).",
           helps={"crossplay": "Team size (sequential: 2).",
                  "play": "Team size, or " + TEAM_HELP}),
    Option("protocol", str, "none", "none|broadcast|discuss|leader|leader_vision|"
           "shared_memory", defaults={"crossplay": "broadcast", "play": "broadcast"}),
    Option("agents", str, "rule", "oracle | rule | llm", commands=("run",)),
    Option("model", str, None, "Model alias of every agent (agents=llm).", commands=("run",)),
    Option("leader_model", str, None, "Model alias of the leader (agent 0).",
           commands=("run",)),
    Option("max_steps", int, None, "Cap team steps (short smoke runs).", low=1,
           high=MAX_STEPS),
    Option("prior", str, "full", "full|no_appearance|no_location|none|noisy"),
    Option("conflict_set", str, "paper", "Same-step contention: paper (grab, open) | "
           "with_close (grab, open, close).", commands=("run",)),
    Option("limit", int, None, "Play a stratified sample of K cases (round-robin over "
           "object counts, the same K cases every time).", low=1, high=MAX_EPISODES,
           defaults={"play": 1},
           helps={"play": "Cases in the session (a stratified sample of K)."}),
    Option("seed", int, 0, "Base seed; case k uses seed + k.", low=0, high=MAX_SEED),
    Option("images", bool, False, "Render and store agents' views.", flag="--images",
           commands=("run", "play"), helps={"play": "Render your seat's views."}),
    DIAL,
)


def _team(values: dict[str, Any], command: str) -> tuple[int, tuple[Seat, ...] | None]:
    """Return (the team's size, its seats or None for a plain size)."""
    text = str(values["team"]).strip()
    if command == "crossplay":
        if not re.fullmatch(r"[0-9]{1,3}", text):
            raise ConfigError(f"--team {text!r}: crossplay takes a team size (the partners "
                              "fill its seats)")
        check_range("--team", int(text), 1, MAX_TEAM)
        return int(text), None
    if command == "play":
        plain = re.fullmatch(r"[0-9]{1,3}", text) is not None
        n = int(text) if plain else len(text.split(","))
        check_range("--team", n, 1, MAX_TEAM)
        return n, None
    parsed = parse_team(text, ("llm", "rule"), "MECoBench")
    return (parsed, None) if isinstance(parsed, int) else (len(parsed), parsed)


def cell_spec(values: dict[str, Any], seats: Sequence[Seat]) -> Any:
    """Return the MECoBench condition of a household team of `seats` (one partner in every
    seat: that partner's own team, as `mecobench run` plays it)."""
    one = one_partner(seats)
    structure, protocol, prior, seed, n = (values["structure"], values["protocol"],
                                           values["prior"], values["seed"], len(seats))
    if one is not None and one.kind == "rule" and one.arg is None:
        spec = HouseholdSpec(structure, n, protocol, "rule", prior, seed)
    elif one is not None and one.kind == "llm":
        spec = HouseholdSpec(structure, n, protocol, "llm", prior, seed, one.arg)
    else:
        agents = "llm" if has_model(seats) else "rule"
        spec = HouseholdSpec(structure, n, protocol, agents, prior, seed, seats=tuple(seats))
    return mecobench_condition(path_or_none(values["tasks"]), values["suite"], spec)


class MecobenchPlayed(PlayedBase):
    """MECoBench's options: cases (a task file or a built-in set), a team, a protocol."""

    options = OPTIONS
    out_name = "mecobench-{structure}"
    team_in_name = True
    play_label = "{structure}"
    run_help = ("Run a household team on MECoBench cases; SR, CR, AUC, DOL, CAR, HFR, spatial "
                "errors.")
    metric = "SR"
    more_metrics = ("steps",)

    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return the run's plan: one team on the cases."""
        from coordbench.agents.team.dials import parse_dials

        size, seats = _team(values, "run")
        agents, structure, protocol = values["agents"], values["structure"], values["protocol"]
        if seats is not None and agents == "rule" and has_model(seats):
            agents = "llm"  # a team with a model seat is model-driven
        spec = HouseholdSpec(structure, size, protocol, agents, values["prior"],
                             values["seed"], values["model"], values["leader_model"],
                             values["conflict_set"], parse_dials(values["dial"]), seats)
        cond = mecobench_condition(path_or_none(values["tasks"]), values["suite"], spec)
        limit = values["limit"]
        cases = SUITE.cases(cond, limit)
        check_playable([c.data[1] for c in cases], size, values["prior"])
        note = None
        if values["tasks"] is None and values["suite"] is None:
            # the examples are a smoke test, not the benchmark: say so before anything runs
            note = (f"note: no --tasks or --suite given, so this plays the {len(cases)} "
                    f"bundled example {structure} task{'s' * (len(cases) != 1)}; --suite v1 "
                    "plays the MECoBench instance set")
        who = values["model"] or (values["team"] if seats else agents)
        images, max_steps = values["images"], values["max_steps"]
        return RunPlan(
            [(SUITE, cond, limit)], [f"{structure} n={size} {protocol} {who}"],
            values["out"] or Path("runs") / "mecobench",
            {a for a in (spec.alias(i) for i in range(size)) if a} if agents == "llm"
            else None,
            lambda settings, replies: MecobenchResources(settings, replies, images=images,
                                                         max_steps=max_steps),
            note, {"cond": cond, "cases": len(cases), "keys": [c.key for c in cases],
                   "agents": agents, "seats": seats})

    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the team's size."""
        return _team(values, command)[0]

    def cell(self, values: dict[str, Any], seats: Sequence[Seat]) -> tuple[Any, Any]:
        """Return (suite, condition) of a team of `seats`."""
        return SUITE, cell_spec(values, seats)

    def check_team(self, values: dict[str, Any], suite: Any, spec: Any, seats: int) -> None:
        """Raise ConfigError if a case has fewer goals than the team needs, or the like."""
        cases = suite.cases(spec, values["limit"])
        check_playable([c.data[1] for c in cases], seats, values["prior"])

    def resources(self, values: dict[str, Any], settings: Any, max_reply_tokens: int | None,
                  seat: Any) -> Any:
        """Return the household resources (views rendered for a person with --images)."""
        return MecobenchResources(settings, max_reply_tokens, seat=seat,
                                  images=bool(values.get("images")),
                                  max_steps=values["max_steps"])



PLAYED = MecobenchPlayed()
