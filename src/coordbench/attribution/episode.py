"""Counterfactual attribution of one failed episode: which seats, taken over by a reference,
rescue it, from which step at the latest, and each seat's share of the blame.

For each seat: replay the episode with the seat taken over from the first step. If that
does not rescue the episode, the seat is not responsible. If it does, search the decisive
step (`search.decisive_step`): the last step from which taking the seat over still rescues.
A seat's blame share is its rescue rate from the first step over the sum of all seats'
(two seats that each rescue alone share the blame). The engines are deterministic given the
episode's seed, so one replay decides each (seat, step): a rescue rate's n is the replays
it rests on, and its interval is Wilson's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from coordbench.agents.team.counterfactual import Swap
from coordbench.attribution.replay import Replayer, first_difference
from coordbench.attribution.search import decisive_step
from coordbench.core.stats import wilson_ci
from coordbench.core.trajectory import ModelCallEvent, Trajectory
from coordbench.errors import ConfigError


class ReplayMismatch(ConfigError):
    """An episode whose replay does not reproduce its recording (it cannot be attributed)."""


@dataclass(frozen=True)
class Question:
    """What counts as a failure (`metric` below `threshold`; default: not a success), which
    reference takes seats over (None: each seat's default), and how the step is searched."""

    metric: str | None = None
    threshold: float = 1.0
    reference: str | None = None
    steps: str = "binary"


def default_reference(traj: Trajectory, seat: int, offered: tuple[str, ...]) -> str:
    """Return the reference that takes `seat` over by default: `clean` (the seat's own mind,
    without its injected failures) for a seat that is its own reference (a rule mind, the
    clean scripted expert) or plays with dials; else the family's first reference (a
    model's, a learned policy's, an allocator's or a noisy expert's seat)."""
    driver = (traj.header.team[seat].driver if seat < len(traj.header.team) else "") or ""
    dialled = "=" in driver or bool((traj.header.params or {}).get("dials"))
    own = driver.startswith("rule") or driver in ("expert", "scripted:expert")
    return "clean" if dialled or own or not offered else offered[0]


def played_steps(traj: Trajectory) -> int:
    """Return the number of team steps the episode played (its end's step)."""
    end = traj.end
    return int(end.t) if end is not None else 0


def new_calls(traj: Trajectory) -> tuple[int, float]:
    """Return (model calls not served by the cache, their cost) of one replay."""
    calls = [e for e in traj.events if isinstance(e, ModelCallEvent) and not e.cache_hit]
    return len(calls), float(sum(e.cost for e in calls))


def failed(value: float | None, q: Question) -> bool:
    """Return whether an episode's outcome counts as a failure under `q`."""
    return value is not None and value < q.threshold


def attribute(replayer: Replayer, recorded: Trajectory, q: Question) -> dict[str, Any]:
    """Return one episode's attribution: {"episode", "outcome", "responsible": [{"seat",
    "step", "reference", "blame", "rescue_rate": {"mean", "ci95", "n", "lo", "hi"}}],
    "replays", "calls", "cost", "steps"}; ReplayMismatch (one line naming the first
    differing step) where the replay does not reproduce the recording."""
    episode = recorded.header.episode_id
    calls, cost = 0, 0.0

    def play(swap: Swap | None) -> Trajectory:
        nonlocal calls, cost
        traj = replayer.play(swap)
        c, usd = new_calls(traj)
        calls, cost = calls + c, cost + usd
        return traj

    plain = play(None)
    diff = first_difference(recorded, plain)
    if diff is not None:
        raise ReplayMismatch(f"episode {episode}: its replay differs from the recording at "
                             f"step {diff[0]} ({diff[1]}); it cannot be attributed")
    outcome = replayer.outcome(recorded, q.metric)
    steps = played_steps(recorded)
    offered = replayer.piece.references
    responsible: list[dict[str, Any]] = []
    rescued_at_start: dict[int, float] = {}
    for seat in range(len(recorded.header.team)):
        ref = q.reference or default_reference(recorded, seat, offered)
        seen: dict[int, bool] = {}

        def rescues(s: int, seat: int = seat, ref: str = ref,
                    seen: dict[int, bool] = seen) -> bool:
            if s not in seen:
                value = replayer.outcome(play(Swap(seat, s, ref)), q.metric)
                seen[s] = value is not None and value >= q.threshold
            return seen[s]

        step = decisive_step(rescues, steps + 1, q.steps)  # steps 0..T, T the end's
        rescued_at_start[seat] = float(seen.get(0, False))
        if step is None:
            continue
        rate = wilson_ci(int(seen[step]), 1).as_dict()
        rate.pop("interval", None)
        responsible.append({"seat": f"agent_{seat}", "step": step, "reference": ref,
                            "rescue_rate": rate})
    total = sum(rescued_at_start.values())
    for r in responsible:
        seat = int(r["seat"].removeprefix("agent_"))
        r["blame"] = rescued_at_start[seat] / total if total else 0.0
    return {"episode": episode, "outcome": outcome, "responsible": responsible,
            "replays": replayer.replays, "calls": calls, "cost": round(cost, 6),
            "steps": steps,
            "question": {**asdict(q), "measured": q.metric or replayer.piece.outcome}}
