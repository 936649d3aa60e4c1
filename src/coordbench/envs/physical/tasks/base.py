"""What a physical task defines: robots, objects, randomization, three latched phases, the
language instructions, and a decentralized scripted expert per robot."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Phase:
    """One of a task's three sequential phases."""

    name: str
    criterion: str  # the state-based test, in words
    collaborative: bool  # needs more than one robot acting together (our label)


@dataclass
class Task(ABC):
    """Abstract base; subclasses fill in the geometry, the phases and the expert."""

    name: str = ""
    n_robots: int = 2
    movement: str = "high"  # base movement: low | high (the paper's 2x2 taxonomy)
    coupling: str = "high"  # physical coupling: low | high | mixed
    limit: int = 1000  # control steps (50 Hz)
    settle_s: float = 0.2  # how long the last phase's condition must hold
    phases: tuple[Phase, Phase, Phase] = ()  # type: ignore[assignment]
    instructions: dict[str, str] = field(default_factory=dict)
    adaptation: str = ""  # how the paper's task was adapted to the CoBot embodiment
    object_body: str = "object"
    holders_needed: int | None = None  # robots that must hold a lifted object (None: all)
    object_holders: tuple[int, ...] | None = None  # robots that handle the main object
    demo_perturb: float = 0.5  # DART perturbation of demonstrations (see ExpertPolicy)
    extra_bodies: tuple[str, ...] = ()  # other bodies every robot sees (second vessel, cart)
    # MuJoCo's constraint Jacobian: "auto" (dense below 60 dofs), "dense" or "sparse". The same
    # physics either way, up to rounding; sparse is faster where many contacts touch few of
    # the dofs (benchmarks/results/physical_step_cost.md)
    jacobian: str = "auto"
    embodiment: str = "cobot"  # the robots: cobot | g1 (the G1 variants set their own)

    @abstractmethod
    def xml(self) -> str:
        """Return the task's MJCF model."""

    @abstractmethod
    def grasp_geoms(self) -> list[list[str]]:
        """Return, per robot, the geoms its fingers must both touch to count as holding."""

    def handle_sites(self) -> list[str]:
        """Return, per robot, the site marking its grasp point (default: grip0, grip1, ...)."""
        return [f"grip{i}" for i in range(self.n_robots)]

    @abstractmethod
    def reset(self, env, rng: np.random.Generator) -> None:
        """Randomize object and goal poses (writes env.data.qpos and env.goal)."""

    @abstractmethod
    def phase_flags(self, env) -> tuple[bool, bool, bool]:
        """Return the raw predicates of p1, p2 and p3 in the current state."""

    def robot_goal(self, env, i: int) -> np.ndarray:
        """Return the goal robot i's instruction names (default: the task's one goal)."""
        return env.goal

    @abstractmethod
    def expert(self, env, i: int, rng: np.random.Generator, noise: float):
        """Return robot i's scripted expert (noise 0 = nominal; 1 = full operator noise)."""
