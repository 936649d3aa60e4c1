"""Seats of a STAT team that are not minds: allocators and learned policies, seat by seat.

`SeatPolicies` plays a team whose seats are allocators or learned policies (each from its
own run: another seed, another method): every step each distinct policy computes the joint
action of the batch, and seat i takes its own policy's pick for agent i. In a team that
also seats minds, `SeatPolicyMind` stands in for such a seat under the protocol: silent, it
plays the pick its policy made for it this step, which its observation carries (`pick`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coordbench.agents.team.protocols import Decision, Message
from coordbench.envs.stat.config import IDLE

from .scripted import get_policy, is_checkpoint


class SeatPolicies:
    """The joint policy of seats played by allocators and learned policies ({seat:
    policy name}); seats not named (minds) are left IDLE here."""

    def __init__(self, seats: dict[int, str]) -> None:
        self.seats = dict(seats)
        self.policies = {name: get_policy(name) for name in dict.fromkeys(self.seats.values())}
        self.reads_obs = any(is_checkpoint(n) or getattr(p, "reads_obs", False)
                             for n, p in self.policies.items())

    def __call__(self, env: Any, rng: Any) -> np.ndarray:
        """Return (B, n) actions: seat i's column from seat i's policy."""
        joint = {name: np.asarray(p(env, rng)) for name, p in self.policies.items()}
        out = np.full((env.batch, env.cfg.agents), IDLE, dtype=np.int64)
        for i, name in self.seats.items():
            out[:, i] = joint[name][:, i]
        return out


@dataclass
class SeatPolicyMind:
    """A policy's seat in a team of minds: silent under every protocol; it acts with the
    pick its policy made for it this step (its observation's `pick`)."""

    agent: int
    role: str = "agent"

    def speak(self, obs: Any, phase: str, inbox: list[Message], rnd: int) -> None:
        """Return None: a policy does not talk."""
        return None

    def assign(self, obs: Any, inbox: list[Message], views: Any) -> dict[int, str]:
        """Return no instructions (a policy in the leader's seat leads no one)."""
        return {}

    def update_memory(self, obs: Any, board: dict[str, Any]) -> dict[str, Any]:
        """Return the board unchanged."""
        return board

    def act(self, obs: Any, inbox: list[Message]) -> Decision:
        """Return the policy's pick for this seat (the forced action where there is one)."""
        if obs.forced_action is not None:
            return Decision(obs.forced_action)
        return Decision(IDLE if obs.pick is None else int(obs.pick))
