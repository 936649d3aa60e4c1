"""Each family's cell of a crossplay matrix: the condition a team of seats plays.

A team whose seats all hold one partner is that partner's self-play, written as the family's
run command writes it (`stat eval --policy greedy`, `constructs run --agents rule --protocol
P`, ...), so the cell is that very condition; any other team is a mixed team (`--team`).
"""

from __future__ import annotations

from typing import Any

from coordbench.agents.seats import Seat


def _same(seats: tuple[Seat, ...]) -> Seat | None:
    """Return the one partner every seat holds (None: a mixed team)."""
    return seats[0] if all(s == seats[0] for s in seats) else None


def stat_cell(config: str, seats: tuple[Seat, ...], layouts: str, seed: int,
              episode_limit: int, protocol: str) -> Any:
    """Return the StatEvalSpec of a STAT team of `seats` (teams without a mind seat play no
    protocol: allocators and learned policies do not talk)."""
    from coordbench.suites.stat.suite import LLM, MIND_KINDS, RULE, SEATS, StatEvalSpec

    one = _same(seats)
    minds = any(s.kind in MIND_KINDS for s in seats)
    if one is not None and one.kind in ("scripted", "learned"):
        return StatEvalSpec(config, str(one.arg), layouts, seed, episode_limit)
    if one is not None and one.kind == "llm":
        return StatEvalSpec(config, LLM, layouts, seed, episode_limit, one.arg, protocol)
    if one is not None and one.kind == "rule" and one.arg is None:
        return StatEvalSpec(config, RULE, layouts, seed, episode_limit, protocol=protocol)
    policy = (LLM if any(s.kind == "llm" for s in seats) else RULE) if minds else SEATS
    return StatEvalSpec(config, policy, layouts, seed, episode_limit,
                        protocol=protocol if minds else "none", seats=seats)


def construct_cell(seats: tuple[Seat, ...], protocol: str, seed: int, subset: str,
                   construct: str | None, team: int, limit: int | None) -> Any:
    """Return the ConstructCondition of a construct team of `seats`: one mind per seat
    under `protocol` (planner decentralized)."""
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.suite import ConstructCondition

    one = _same(seats)
    if one is not None and one.kind == "rule" and one.arg is None:
        spec = ConstructSpec("decentralized", "rule", seed=seed, protocol=protocol)
    elif one is not None and one.kind == "llm":
        spec = ConstructSpec("decentralized", "llm", model=one.arg, seed=seed,
                             protocol=protocol)
    else:
        agents = "llm" if any(s.kind == "llm" for s in seats) else "rule"
        spec = ConstructSpec("decentralized", agents, seed=seed, protocol=protocol,
                             seats=seats)
    return ConstructCondition(spec, subset, construct, team, limit)


def household_cell(seats: tuple[Seat, ...], structure: str, protocol: str, prior: str,
                   seed: int, tasks: str | None, suite: str | None) -> Any:
    """Return the MECoBench condition of a household team of `seats`."""
    from coordbench.suites.mecobench.episode import HouseholdSpec
    from coordbench.suites.mecobench.suite import mecobench_condition

    one = _same(seats)
    n = len(seats)
    if one is not None and one.kind == "rule" and one.arg is None:
        spec = HouseholdSpec(structure, n, protocol, "rule", prior, seed)
    elif one is not None and one.kind == "llm":
        spec = HouseholdSpec(structure, n, protocol, "llm", prior, seed, one.arg)
    else:
        agents = "llm" if any(s.kind == "llm" for s in seats) else "rule"
        spec = HouseholdSpec(structure, n, protocol, agents, prior, seed, seats=seats)
    return mecobench_condition(tasks, suite, spec)


def physical_cell(seats: tuple[Seat, ...], task: str, controller: str = "per_robot") -> Any:
    """Return the PhysicalSpec of a physical team of `seats`: experts and checkpoints robot
    by robot (lockstep policies), or, with a model seat, skill-controlled robots (where
    `scripted:expert` is the skill controller's own suggestion)."""
    from coordbench.suites.physical.suite import LLM, SEATS, PhysicalSpec, make_policy

    one = _same(seats)
    if one is not None and one.kind in ("scripted", "learned"):
        make_policy(str(one.arg), task)  # an unknown policy or a foreign checkpoint: now
        return PhysicalSpec(task, str(one.arg))
    if one is not None and one.kind == "llm":
        return PhysicalSpec(task, LLM, model=one.arg, controller=controller)
    if any(s.kind == "llm" for s in seats):
        return PhysicalSpec(task, LLM, controller=controller, seats=seats)
    return PhysicalSpec(task, SEATS, seats=seats)
