"""The physical suite's decentralized scripted experts as a team policy, the one-shot
failure injected into them (`fail_at`), and the expert taking a robot over in a
counterfactual replay (`TakeOver`, docs/attribution.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from coordbench.agents.physical.skills import skills_of, stage_name
from coordbench.agents.team.counterfactual import faults_off
from coordbench.envs.physical.embodiment import KINDS, embodiment_of
from coordbench.envs.physical.env import PhysicalEnv, Sensing
from coordbench.envs.physical.scene import CONTROL_DT

# per-dimension scale of a CoBot's executed-action perturbations (base velocity, lift, arm,
# wrist pitch and roll, grip); a G1's is its embodiment record's
PERTURB_SCALE = KINDS["cobot"].perturb_scale
RESYNC_STEPS = 15  # 0.3 s of a grip that disagrees with touch before a labeller resyncs
TOUCH_STEPS = 5  # 0.1 s: a touch felt this recently still counts when the expert takes over
# the stages that bring an empty hand to its grasp point: each step they servo from the
# robot's own pose, so a shadow in one needs no restart to take an empty-handed robot over
# (a restart would back the hand off and begin the approach again while partners go on)
APPROACH = ("reach", "approach", "grasp", "regrasp", "await", "over", "place")


class ExpertPolicy:
    """The decentralized scripted experts; `noise` scales operator variability (0 = none).

    `perturb` > 0 executes the expert's action plus Gaussian noise (scaled per dimension by
    PERTURB_SCALE) while `label()` still gives the clean action: demonstrations recorded
    this way show the expert recovering from small deviations (the DART remedy for
    compounding errors in behaviour cloning).

    `resync` is for labelling states another policy drives into (DAgger): a phase machine
    that follows someone else's robot falls out of step with it (it still reaches while the
    learner already holds, or carries what the learner dropped). Once a robot's commanded
    grip has disagreed with its touch sensing for RESYNC_STEPS, its expert restarts from
    its own sensing (`resume`, as in phase-level evaluation).

    `fail_at` (control step T, CoBot robots) injects one failure, the ground truth of
    failure attribution: at step T every robot this policy drives whose hand is closed opens
    it and lets go of what it holds, while its phase machine carries on as if it still held
    it; the hand stays open until the machine itself opens it (release, a missed grasp).
    The let-go is a state of the robot, so a counterfactual replay that turns the seat's
    failures off (`clean`) from a step after T leaves it as it was; from T or before it
    never happens."""

    def __init__(self, noise: float = 0.0, perturb: float = 0.0, resync: bool = False,
                 fail_at: int | None = None) -> None:
        self.noise, self.perturb, self.resync = noise, perturb, resync
        self.fail_at = fail_at
        self.mismatch: dict[int, np.ndarray] = {}
        self.name = ("expert" if noise == 0 else "expert_noisy") + \
            ("" if fail_at is None else f"+fail_at={fail_at}")
        self.experts: dict[int, list] = {}
        self.clean: dict[int, np.ndarray] = {}
        self.rngs: dict[int, np.random.Generator] = {}
        self.letgo: dict[int, np.ndarray] = {}  # per robot: its hand is open by the failure

    def reset(self, envs: list[PhysicalEnv], resume: bool = False) -> None:
        """Draw each robot's operator variability from (seed, robot)."""
        self.experts = {}
        for env in envs:
            team = []
            for i in range(env.n):
                rng = np.random.default_rng([env.seed, i, 7919])
                ex = env.task.expert(env, i, rng, self.noise)
                if resume:
                    ex.resume(env.sense(i))
                team.append(ex)
            self.experts[id(env)] = team
            self.mismatch[id(env)] = np.zeros(env.n, dtype=int)
            self.rngs[id(env)] = np.random.default_rng([env.seed, 104729])
            self.letgo[id(env)] = np.zeros(env.n, dtype=bool)

    def act(self, envs: list[PhysicalEnv]) -> list[np.ndarray]:
        """Return every robot's action from its own sensing (perturbed if `perturb`)."""
        out = []
        for env in envs:
            team = self.experts[id(env)]
            senses = [env.sense(i) for i in range(env.n)]
            if self.resync:
                self._resync(env, team, senses)
            clean = np.array([ex.act(s, CONTROL_DT) for ex, s in zip(team, senses, strict=True)])
            self.clean[id(env)] = clean
            if self.fail_at is not None:
                clean = self._fail(env, team, clean)
            if self.perturb > 0:
                noise = self.rngs[id(env)].normal(size=clean.shape) * \
                    embodiment_of(env).perturb_scale
                clean = clean + self.perturb * noise
            out.append(clean)
        return out

    def _fail(self, env: PhysicalEnv, team: list, clean: np.ndarray) -> np.ndarray:
        """Return the actions executed after the injected failure (a copy where it acts)."""
        letgo = self.letgo[id(env)]
        if env.steps == self.fail_at:
            for i, ex in enumerate(team):
                # a hand that is open has nothing to let go of: the failure passes it by
                letgo[i] = ex.gripping(clean[i]) and not faults_off(i, env.steps)
        if not letgo.any():
            return clean
        out = clean.copy()
        grip = embodiment_of(env).action_names.index("grip")
        for i, ex in enumerate(team):
            if letgo[i] and not ex.gripping(clean[i]):
                letgo[i] = False  # its machine opened the hand itself: the failure is over
            elif letgo[i]:
                out[i, grip] = 0.0
        return out

    def _resync(self, env: PhysicalEnv, team: list, senses: list) -> None:
        last = self.clean.get(id(env))
        if last is None:
            return
        miss = self.mismatch[id(env)]
        for i, (ex, s) in enumerate(zip(team, senses, strict=True)):
            wrong = ex.grasps and ex.gripping(last[i]) != s.holding
            miss[i] = miss[i] + 1 if wrong else 0
            if miss[i] >= RESYNC_STEPS:
                ex.resume(s)
                miss[i] = 0

    def label(self, env: PhysicalEnv) -> np.ndarray:
        """Return the clean expert action of the last step of `env`."""
        return self.clean[id(env)]


class Shadow:
    """Robot `seat`'s clean scripted expert (no operator noise, no injected failure) in a
    counterfactual replay that hands the robot to it at control step `step`
    (`agents.team.counterfactual`, the `expert` reference).

    It is built at the start and shadows the robot: its phase machine is shown the robot's
    sensing every step, and its actions are dropped until `step`, so at `step` it is in the
    stage a machine that had played along is in. A robot the clean expert played so far
    plays on unchanged. Where the robot did otherwise (its last action is not the one the
    robot executed: a noisy operator's slower lift, a learned policy's, a model's skill, a
    hand let go), the machine's targets (torso, arm, a hold's height) are its own, not the
    robot's, and as it takes over it restarts from the robot's own sensing (`resume`, as
    phase-level evaluation does) unless it is still bringing an empty hand to the grasp
    point or the robot is a stage ahead of it (see `_catch_up`)."""

    def __init__(self, env: PhysicalEnv, seat: int, step: int, resume: bool = False) -> None:
        self.seat, self.step = seat, step
        # the stream ExpertPolicy draws this robot's operator from (unused at noise 0)
        rng = np.random.default_rng([env.seed, seat, 7919])
        self.expert = env.task.expert(env, seat, rng, 0.0)
        if resume:
            self.expert.resume(env.sense(seat))
        self.last: np.ndarray | None = None
        self.taken = False
        self.touch: tuple[bool, ...] = ()  # the robot's touch sensing, the last steps

    def plays(self, env: PhysicalEnv) -> bool:
        """Return whether the expert plays the robot at `env`'s current step."""
        return env.steps >= self.step

    def act(self, env: PhysicalEnv, executed: np.ndarray | None) -> np.ndarray:
        """Return the expert's action for the robot at this step (dropped before `step`);
        `executed`: the action the robot executed at the previous step (None: none yet)."""
        s = env.sense(self.seat)
        if not self.taken and self.plays(env):
            self.taken = True
            self._catch_up(env, s, executed)
        self.touch = (*self.touch[1 - TOUCH_STEPS:], s.holding)
        self.last = self.expert.act(s, CONTROL_DT)
        return self.last

    def _catch_up(self, env: PhysicalEnv, s: Sensing, executed: np.ndarray | None) -> None:
        """Restart the expert from the robot's own sensing where it is out of step with the
        robot it takes over: its hand's state is not the robot's, or it ran ahead of it."""
        if self.last is None or executed is None or np.array_equal(self.last, executed):
            return  # it did what the robot did: its targets are the robot's
        ex = self.expert
        # touch flickers for a step or two while the fingers slide: a hand that felt its
        # grasp part within the last few steps still holds it
        held = replace(s, holding=s.holding or any(self.touch))
        if ex.stage in APPROACH and not held.holding:
            return  # its hand is still on the way, servoed from the robot's own pose
        if ex.grasps and ex.gripping(self.last) != held.holding:
            ex.resume(held)  # it holds what the robot let go of, or the other way round
            return
        # where the robot is in the machine's stage or behind it (a slower lift), the
        # machine starts that stage again from the robot: a stage sets its targets from
        # where the robot was as it began (an offer's hand height, taken before a slower
        # lift was done). A robot ahead of its machine is not restarted: the machine's own
        # transitions read the robot's sensing and catch up, where a restart guesses the
        # stage from one look (a table still turning on its goal looks set down)
        probe = env.task.expert(env, self.seat, np.random.default_rng(0), 0.0)
        probe.resume(held)
        order = [stage_name(k) for k in skills_of(ex)]
        if probe.stage in order and ex.stage in order and \
                order.index(probe.stage) <= order.index(ex.stage):
            ex.resume(held)


class TakeOver:
    """A lockstep team policy whose robot `seat` is `Shadow`'s clean expert from control
    step `step` on and `policy`'s before (a counterfactual replay's `expert` reference)."""

    def __init__(self, policy: Any, seat: int, step: int) -> None:
        self.policy, self.seat, self.step = policy, seat, step
        self.name = policy.name
        self.drivers = getattr(policy, "drivers", None)
        self.shadows: dict[int, Shadow] = {}
        self.executed: dict[int, np.ndarray] = {}

    def reset(self, envs: list[PhysicalEnv], resume: bool = False) -> None:
        """Start the seat's policy and a shadowing expert per environment."""
        self.policy.reset(envs, resume=resume)
        self.shadows = {id(env): Shadow(env, self.seat, self.step, resume) for env in envs}
        self.executed = {}

    def act(self, envs: list[PhysicalEnv]) -> list[np.ndarray]:
        """Return every robot's action: the policy's, robot `seat`'s the expert's from
        `step` on."""
        shadow = [self.shadows[id(env)].act(env, self.executed.get(id(env))) for env in envs]
        own = self.policy.act(envs)
        out = []
        for env, a, r in zip(envs, own, shadow, strict=True):
            if self.shadows[id(env)].plays(env):
                a = np.array(a, dtype=np.float64)
                a[self.seat] = r
            self.executed[id(env)] = np.array(a[self.seat])
            out.append(a)
        return out
