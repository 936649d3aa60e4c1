"""The physical suite's decentralized scripted experts as a team policy."""

from __future__ import annotations

import numpy as np

from coordbench.envs.physical.embodiment import KINDS, embodiment_of
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.scene import CONTROL_DT

# per-dimension scale of a CoBot's executed-action perturbations (base velocity, lift, arm,
# wrist pitch and roll, grip); a G1's is its embodiment record's
PERTURB_SCALE = KINDS["cobot"].perturb_scale
RESYNC_STEPS = 15  # 0.3 s of a grip that disagrees with touch before a labeller resyncs


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
    its own sensing (`resume`, as in phase-level evaluation)."""

    def __init__(self, noise: float = 0.0, perturb: float = 0.0, resync: bool = False) -> None:
        self.noise, self.perturb, self.resync = noise, perturb, resync
        self.mismatch: dict[int, np.ndarray] = {}
        self.name = "expert" if noise == 0 else "expert_noisy"
        self.experts: dict[int, list] = {}
        self.clean: dict[int, np.ndarray] = {}
        self.rngs: dict[int, np.random.Generator] = {}

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
            if self.perturb > 0:
                noise = self.rngs[id(env)].normal(size=clean.shape) * \
                    embodiment_of(env).perturb_scale
                clean = clean + self.perturb * noise
            out.append(clean)
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
