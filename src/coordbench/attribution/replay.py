"""Replaying a saved episode, as recorded or with one seat taken over from a step on.

A replay is the family's own `Suite.play` of the episode's case, from the condition's
recorded spec and the case's seed, with the swap in force (`agents.team.counterfactual`).
Before any counterfactual, the plain replay must reproduce the recorded trajectory event for
event (`first_difference`); an episode that does not is refused, naming the first step
where they part. Replays are played in memory: nothing is written into the run's episodes.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

from coordbench.agents.team.counterfactual import Swap, swapped
from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import Trajectory
from coordbench.errors import ConfigError
from coordbench.runner.conditions import _iterate
from coordbench.runner.episode import Limits
from coordbench.runner.family import family, family_of
from coordbench.runner.suite import Case, PlayContext

# what differs between two plays of one episode without changing it: wall-clock times,
# a cache hit, and the model-call records themselves (their replies are in the steps)
_VOLATILE = {"created", "latency_s", "cached", "wall_s", "duration_s", "elapsed_s"}
_SKIP = {"model_call", "human_decision"}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def comparable(traj: Trajectory) -> list[dict[str, Any]]:
    """Return the events of `traj` that a faithful replay reproduces, as plain dicts (no
    model-call records, no wall-clock fields)."""
    return [_plain(e.model_dump(mode="json")) for e in traj.events
            if getattr(e, "type", "") not in _SKIP]


# header fields a faithful replay reproduces (not when or by which build it was written)
_HEADER_VOLATILE = {"created", "git_sha", "coordbench_version", "schema_version"}


def first_difference(recorded: Trajectory, replayed: Trajectory) -> tuple[int, str] | None:
    """Return (step, what differs) where `replayed` first departs from `recorded`: the
    header (step 0) or an event (None: they agree event for event)."""
    ha, hb = (_plain(t.header.model_dump(mode="json", exclude=_HEADER_VOLATILE))
              for t in (recorded, replayed))
    if ha != hb:
        keys = sorted(k for k in ha.keys() | hb.keys() if ha.get(k) != hb.get(k))
        return 0, f"header ({', '.join(keys)})"
    a, b = comparable(recorded), comparable(replayed)
    for x, y in zip(a, b, strict=False):
        if x != y:
            keys = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
            return int(x.get("t", y.get("t", 0)) or 0), f"{x.get('type')} ({', '.join(keys)})"
    if len(a) != len(b):
        shorter, longer = (a, b) if len(a) < len(b) else (b, a)
        t = longer[len(shorter)].get("t", 0)
        what = "the replay ends early" if len(b) < len(a) else "the replay plays on"
        return int(t or 0), what
    return None


def outcome_of(suite: Any, metric: str, traj: Trajectory) -> float | None:
    """Return the episode's value of `metric` (the family's success unless named)."""
    value = suite.metrics(traj).get(metric)
    return None if value is None else float(value)


@dataclass
class Replayer:
    """Plays one saved episode again: `play(swap)` -> Trajectory; counts its replays."""

    run: RunDir
    condition: str
    key: str
    harness: Any = None  # harness settings for model-driven seats
    replays: int = 0
    scratch: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="coordbench-cf-"))

    def __post_init__(self) -> None:
        fields = self.run.conditions.get(self.condition)
        if fields is None:
            raise ConfigError(f"{self.run.path}: no condition {self.condition}")
        name = family_of(self.condition, fields)
        fam = family(name) if name else None
        piece = fam.get("counterfactual") if fam is not None else None
        if piece is None:
            raise ConfigError(f"{self.condition}: the {name or 'unknown'} family has no "
                              "counterfactual replay")
        self.family, self.piece = fam, piece
        self.suite = fam.get("suite")
        self.spec = piece.spec(dict(fields))
        self.resources = piece.resources(dict(fields), self.harness)
        # the team's token budget the episode was played under (a run setting)
        self.max_tokens = fields.get("max_tokens_per_episode")
        cases = {c.key: c for c in self.suite.cases(self.spec)}
        if self.key not in cases:
            raise ConfigError(f"{self.condition}/{self.key}: not a case of its condition")
        self.case: Case = cases[self.key]

    def close(self) -> None:
        """Remove the replays' scratch folder (views a replay rendered, nothing else)."""
        shutil.rmtree(self.scratch, ignore_errors=True)

    def play(self, swap: Swap | None = None) -> Trajectory:
        """Return the episode played again from its seed, with `swap` in force."""
        ctx = PlayContext(run_path=self.scratch, resources=self.resources,
                          limits=Limits(max_tokens_per_episode=self.max_tokens))
        self.replays += 1
        with swapped(swap):
            for _case, traj in _iterate(self.suite.play(self.spec, [self.case], ctx)):
                return traj
        raise ConfigError(f"{self.condition}/{self.key}: the replay produced no episode")

    def outcome(self, traj: Trajectory, metric: str | None = None) -> float | None:
        """Return `traj`'s value of `metric` (default: the family's success)."""
        return outcome_of(self.suite, metric or self.piece.outcome, traj)
