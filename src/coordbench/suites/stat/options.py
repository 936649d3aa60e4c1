"""What a STAT run plays and who sits: the family's `options` and `seats` pieces.

`stat eval`, `crossplay stat` and `play stat` are generated from these fields
(`commands/family_commands.py`); a cross-play cell and a person's session are the team of
seats on the same configuration, layouts and seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coordbench.agents.team.seats import Seat, has_model, model_aliases, one_partner, parse_team
from coordbench.core.limits import MAX_EPISODES, MAX_SEED, MAX_STEPS
from coordbench.errors import ConfigError
from coordbench.runner import ModelResources
from coordbench.runner.options import DIAL, REQUIRED, TEAM_HELP, Option
from coordbench.runner.played import PlayedBase, RunPlan, Seats

from .suite import LLM, MIND_KINDS, RULE, SEAT_KINDS, SEATS, SUITE, StatEvalSpec

FAMILY_SEATS = Seats(SEAT_KINDS, "STAT", "rule")

# --config: what every STAT command plays (eval, crossplay, play, train, tune, speed)
CONFIG = Option("config", str, REQUIRED, "STAT config name, e.g. 5A-25T-50x30.",
                defaults={"play": "3A-6T-5x3"})
# --episodes and --layouts: also `coordbench run`'s overrides of the STAT section
EPISODES = Option("episodes", int, 100, "Number of episodes (layouts 0..N-1).", low=1,
                  high=MAX_EPISODES, defaults={"play": 1},
                  helps={"crossplay": "Episodes per cell (layouts 0..N-1).",
                         "play": "Episodes in the session (layouts 0..N-1)."})
LAYOUTS = Option("layouts", str, "paper", "paper (seeds s*1000+i) | uniform")
OPTIONS = (
    CONFIG,
    Option("policy", str, REQUIRED, "random | greedy | matching | hungarian | greedy_obs | "
           "hungarian_obs | nearest_obs | greedy_mem | nearest_mem | rule (minds under "
           "--protocol) | llm (with --model) | PATH (a checkpoint of `stat train`)",
           commands=("run",)),
    EPISODES,
    LAYOUTS,
    Option("seed", int, 0, "Policy seed (and layout seed for uniform layouts).", low=0,
           high=MAX_SEED),
    Option("episode_limit", int, 700, "Truncate episodes at this many steps.", low=1,
           high=MAX_STEPS),
    Option("model", str, None, "Model alias of every agent (policy llm).", commands=("run",)),
    Option("protocol", str, "none", "How seats played by minds talk (policies llm and rule): "
           "none | broadcast | leader | shared_memory; allocators and learned policies do "
           "not.", defaults={"play": "broadcast"}),
    DIAL,
    Option("team", str, None, "Who sits where (policies rule and llm): agent_0=llm:A,"
           "agent_1=rule,... (one seat per agent of the configuration).",
           commands=("run", "play"),
           helps={"play": TEAM_HELP + " STAT seats also take scripted:NAME and "
                                      "learned:CHECKPOINT."}),
)


def cell_spec(values: dict[str, Any], seats: Sequence[Seat]) -> StatEvalSpec:
    """Return the spec of a STAT team of `seats`: one partner in every seat is that partner's
    self-play (as `stat eval --policy` plays it); teams without a mind seat play no protocol
    (allocators and learned policies do not talk)."""
    config, layouts, seed, limit, protocol = (values["config"], values["layouts"],
                                              values["seed"], values["episode_limit"],
                                              values["protocol"])
    one = one_partner(seats)
    minds = any(s.kind in MIND_KINDS for s in seats)
    if one is not None and one.kind in ("scripted", "learned"):
        return StatEvalSpec(config, str(one.arg), layouts, seed, limit)
    if one is not None and one.kind == "llm":
        return StatEvalSpec(config, LLM, layouts, seed, limit, one.arg, protocol)
    if one is not None and one.kind == "rule" and one.arg is None:
        return StatEvalSpec(config, RULE, layouts, seed, limit, protocol=protocol)
    policy = (LLM if has_model(seats) else RULE) if minds else SEATS
    return StatEvalSpec(config, policy, layouts, seed, limit,
                        protocol=protocol if minds else "none", seats=tuple(seats))


class StatPlayed(PlayedBase):
    """STAT's options: a configuration, its layouts and seed, a policy or a team."""

    options = OPTIONS
    out_name = "stat-{config}"
    play_label = "{config}"
    run_name = "eval"
    run_help = ("Evaluate a scripted allocator, a checkpoint or a model-driven team; mean and "
                "95% CI of every diagnostic over episodes (--json: one object of metrics).")
    metric = "return"
    more_metrics = ("return", "length")

    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return the evaluation's plan: one condition, `episodes` layouts."""
        from coordbench.agents.team.dials import parse_dials

        policy, model, seats = values["policy"], values["model"], None
        if values["team"] is not None:
            parsed = parse_team(values["team"], ("llm", "rule"), "STAT")
            if isinstance(parsed, int):
                raise ConfigError("stat eval's team size is the configuration's: --team names "
                                  "the seats (agent_0=llm:A,agent_1=rule,...)")
            seats = parsed
            if policy == RULE and has_model(seats):
                policy = LLM  # a team with a model seat is model-driven
        spec = StatEvalSpec(values["config"], policy, values["layouts"], values["seed"],
                            values["episode_limit"], model, values["protocol"],
                            parse_dials(values["dial"]), seats)
        aliases = {model} if seats is None else model_aliases(seats)
        label = f"{values['config']} {policy}" + (f" {model} {values['protocol']}"
                                                   if model else "")
        return RunPlan([(SUITE, spec, values["episodes"])], [label],
                       values["out"] or Path("runs") / "stat-eval" / spec.condition,
                       aliases if policy == LLM else None,
                       lambda settings, replies: ModelResources(settings, replies)
                       if policy == LLM else None,
                       context={"spec": spec, "policy": policy})

    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the configuration's agents."""
        from coordbench.envs.stat.config import get_config

        return get_config(values["config"]).agents

    def cell(self, values: dict[str, Any], seats: Sequence[Seat]) -> tuple[Any, Any]:
        """Return (suite, spec) of a team of `seats`."""
        return SUITE, cell_spec(values, seats)

    def episodes(self, values: dict[str, Any]) -> int | None:
        """Return the episodes a cell or session plays."""
        return values["episodes"]

    def check_team(self, values: dict[str, Any], suite: Any, spec: Any, seats: int) -> None:
        """Every configuration's layouts can be played (the spec checked itself)."""



PLAYED = StatPlayed()
