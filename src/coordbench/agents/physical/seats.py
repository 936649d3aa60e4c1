"""Seats of a physical team played by different policies, robot by robot.

`SeatPolicies` runs several team policies (the scripted experts, learned checkpoints trained
in separate runs) on the same environments and gives robot i the action its own seat's
policy computes for robot i; each policy keeps its own state (an expert's phase machine, a
learned policy's action chunk) as if it drove the whole team.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class SeatPolicies:
    """A lockstep team policy whose robot i is `policies[i]`'s robot i."""

    def __init__(self, policies: list[Any], drivers: list[str]) -> None:
        self.seats = policies
        self.distinct = list({id(p): p for p in policies}.values())
        self.drivers = drivers
        self.name = "seats"

    def reset(self, envs: list[Any], resume: bool = False) -> None:
        """Reset every policy on `envs`."""
        for p in self.distinct:
            p.reset(envs, resume=resume)

    def act(self, envs: list[Any]) -> list[np.ndarray]:
        """Return each environment's (n_robots, action) array, row i from seat i's policy."""
        joint = {id(p): p.act(envs) for p in self.distinct}
        out = []
        for k in range(len(envs)):
            rows = [np.asarray(joint[id(p)][k])[i] for i, p in enumerate(self.seats)]
            out.append(np.stack(rows))
        return out
