"""What a construct run plays and who sits: the family's `options` and `seats` pieces.

`constructs run`, `crossplay constructs` and `play constructs` are generated from these
fields (`commands/family_commands.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coordbench.agents.team.seats import Seat, has_model, model_aliases, one_partner, parse_team
from coordbench.core.files import check_range
from coordbench.core.limits import MAX_EPISODES, MAX_SEED
from coordbench.errors import ConfigError
from coordbench.runner import ModelResources
from coordbench.runner.options import DIAL, TEAM_HELP, Option, path_or_none
from coordbench.runner.played import PlayedBase, RunPlan, Seats

from .episode import ConstructSpec
from .suite import SUITE, ConstructCondition

FAMILY_SEATS = Seats(("llm", "rule", "human"), "construct", "rule")
MAX_BUFFER_CAPACITY = 16  # a buffer never needs to hold more than an instance's items
TEAMS = (2, 3, 4)

# --construct: what every construct command plays (run, crossplay, play, train)
CONSTRUCT = Option("construct", str, None, "D1 | D2 | D3 | D4 (default: all).",
                   choices=("D1", "D2", "D3", "D4"))
OPTIONS = (
    Option("subset", str, "all", "all (900 instances) | rep240", choices=("all", "rep240"),
           defaults={"crossplay": "rep240", "play": "rep240"}),
    Option("instances", Path, None, "An instance file (JSON list) instead of the built-in "
           "set.", commands=("run",)),
    CONSTRUCT,
    Option("team", str, None, "2 | 3 | 4 (default: all), or who sits where (agent_0=llm:A,"
           "agent_1=rule: a mixed team of that size, one mind per seat under --protocol, "
           "none by default).", defaults={"crossplay": "2", "play": "2"},
           helps={"crossplay": "Team size: 2 | 3 | 4 (the instances played).",
                  "play": "Team size (2 | 3 | 4), or " + TEAM_HELP}),
    Option("planner", str, None, "central | decentralized | decentralized_comm (default: "
           "central; decentralized with --protocol)", commands=("run",)),
    Option("protocol", str, None, "A household protocol over one mind per agent: none | "
           "broadcast | discuss | leader | shared_memory (rule or llm agents; planner "
           "decentralized).", defaults={"crossplay": "broadcast", "play": "broadcast"}),
    Option("agents", str, "rule", "oracle | rule | llm | learned (with --checkpoint)",
           commands=("run",)),
    Option("checkpoint", Path, None, "A learned team's checkpoint (`constructs train`; "
           "agents learned).", commands=("run",)),
    Option("model", str, None, "Model alias (agents=llm).", commands=("run",)),
    Option("observation", str, "blind", "image | blind", commands=("run",)),
    Option("order", str, "index", "Landing order within a step: index | reverse",
           commands=("run",)),
    Option("buffer_capacity", int, None, "D4 buffer capacity for every instance played "
           "(>= 1; default: each instance's own, 2 in the built-in set). Part of the "
           "condition: another K is another condition.", low=1, high=MAX_BUFFER_CAPACITY,
           metavar="K", commands=("run",)),
    Option("on_protocol_failure", str, "end", "A planner reply that cannot be parsed or "
           "names no menu action: end the episode as a protocol failure (the paper's "
           "protocol) | skip (the agent idles, the episode runs on).", commands=("run",)),
    Option("limit", int, None, "Play a stratified sample of K instances (round-robin over "
           "constructs x team sizes, the same K instances every time).", low=1,
           high=MAX_EPISODES, defaults={"play": 1},
           helps={"play": "Instances in the session (a stratified sample of K)."}),
    Option("seed", int, 0, "Episode seed.", low=0, high=MAX_SEED),
    DIAL,
)


def _size(values: dict[str, Any], command: str) -> int:
    """Return the team size of a cross-play matrix or a play session."""
    text = str(values["team"]).strip()
    plain = re.fullmatch(r"[0-9]{1,3}", text) is not None
    if command == "crossplay":
        if not plain or int(text) not in TEAMS:
            raise ConfigError(f"--team must be 2, 3 or 4, got {text}")
        return int(text)
    n = int(text) if plain else len(text.split(","))
    check_range("--team", n, 2, 4)
    return n


def cell_spec(values: dict[str, Any], seats: Sequence[Seat]) -> ConstructCondition:
    """Return the condition of a construct team of `seats`: one mind per seat under the
    protocol (planner decentralized)."""
    one = one_partner(seats)
    protocol, seed = values["protocol"], values["seed"]
    if one is not None and one.kind == "rule" and one.arg is None:
        spec = ConstructSpec("decentralized", "rule", seed=seed, protocol=protocol)
    elif one is not None and one.kind == "llm":
        spec = ConstructSpec("decentralized", "llm", model=one.arg, seed=seed,
                             protocol=protocol)
    else:
        agents = "llm" if has_model(seats) else "rule"
        spec = ConstructSpec("decentralized", agents, seed=seed, protocol=protocol,
                             seats=tuple(seats))
    return ConstructCondition(spec, values["subset"], values["construct"], len(seats),
                              values["limit"])


class ConstructsPlayed(PlayedBase):
    """The constructs' options: instances, a planner or a protocol, who plays."""

    options = OPTIONS
    out_name = "constructs-{subset}"
    team_in_name = True
    play_label = "constructs"
    run_help = ("Run planners on the construct instances; SR, construct score and legality."
                "\n\n--json prints one object: SR, CS and legal_rate (overall and per "
                "construct), the termination shares {success, normal_stop, budget_exhausted, "
                "protocol_failure} and the failure shares {dependency, occupancy, affordance, "
                "illegal_skill} (of failed episodes; null when none failed), and the number "
                "of instances.")
    metric = "SR"
    model_replies = False

    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return the run's plan: one planner (or team of minds) on the instances."""
        from coordbench.agents.team.dials import parse_dials

        agents, protocol, team, seats = (values["agents"], values["protocol"],
                                         values["team"], None)
        if team is not None:
            parsed = parse_team(team, ("llm", "rule"), "construct")
            if not isinstance(parsed, int):
                seats = parsed
                protocol = "none" if protocol is None else protocol  # one mind a seat
                agents = "llm" if has_model(seats) else agents
            team = parsed if isinstance(parsed, int) else len(parsed)
        if team is not None and team not in TEAMS:
            raise ConfigError(f"--team must be 2, 3 or 4, got {team}")
        planner = values["planner"] or ("decentralized" if protocol is not None
                                        or agents == "learned" else "central")
        if agents == "learned":
            from coordbench.core.extras import need_torch

            need_torch()
        spec = ConstructSpec(planner, agents, values["observation"], values["model"],
                             values["seed"], values["order"], values["buffer_capacity"],
                             protocol, path_or_none(values["checkpoint"]),
                             values["on_protocol_failure"], parse_dials(values["dial"]), seats)
        _check_checkpoint(spec, values, team)
        cond = ConstructCondition(spec, values["subset"], values["construct"], team,
                                  values["limit"], path_or_none(values["instances"]))
        cases = SUITE.cases(cond)  # a bad instance file fails here, before any work
        aliases = ({values["model"]} if seats is None
                   else model_aliases(seats))
        return RunPlan([(SUITE, cond, None)], [f"constructs {protocol or planner} {agents}"],
                       values["out"] or Path("runs") / "constructs",
                       aliases if agents == "llm" else None,
                       lambda settings, replies: settings,
                       context={"cond": cond, "cases": len(cases), "agents": agents,
                                "planner": planner, "protocol": protocol})

    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the team's size."""
        return _size(values, command)

    def cell(self, values: dict[str, Any], seats: Sequence[Seat]) -> tuple[Any, Any]:
        """Return (suite, condition) of a team of `seats`."""
        return SUITE, cell_spec(values, seats)

    def episodes(self, values: dict[str, Any]) -> int | None:
        """Return None: the condition holds its limit."""
        return None

    def resources(self, values: dict[str, Any], settings: Any, max_reply_tokens: int | None,
                  seat: Any) -> Any:
        """Return the harness settings (a person's seat: model resources around them)."""
        return settings if seat is None else ModelResources(settings, None, seat=seat)



def _check_checkpoint(spec: ConstructSpec, values: dict[str, Any], team: int | None) -> None:
    """Raise ConfigError when a learned team plays instances it was not trained for."""
    if spec.checkpoint is None or values["instances"] is not None:
        return
    from coordbench.learn.menu_ppo import load_cached

    meta = load_cached(spec.checkpoint)[1]
    if (values["construct"], team) != (meta.get("construct"), meta.get("team")):
        raise ConfigError(f"checkpoint {values['checkpoint']} was trained on "
                          f"{meta.get('construct')} with teams of {meta.get('team')}: play it "
                          f"with --construct {meta.get('construct')} --team {meta.get('team')}")


PLAYED = ConstructsPlayed()
