"""DAgger for the physical imitation baselines: the learner drives, the scripted expert
labels.

Each round rolls the current policy out on fresh demonstration seeds while every robot's
nominal scripted expert runs alongside on the same sensing (it never acts: its phase machine
only follows what the learner does) and records what it would have done. The labelled
learner states join the dataset and training continues (Ross et al., 2011, with the mixing
coefficient at zero after the demonstrations). The labeller needs no partner information,
so it is the same decentralized expert that made the demonstrations; it restarts from its
own sensing where it has fallen out of step with the robot it follows (see ExpertPolicy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.suites.physical.demos import DEMO_SEED0, episode_arrays
from coordbench.suites.physical.runner import run

DAGGER_SEED0 = DEMO_SEED0 + 500_000  # never the evaluation seeds, nor the demonstrations'


class ShadowPolicy:
    """The learner acts; the nominal expert follows on the same sensing and labels."""

    def __init__(self, learner: Any, expert: ExpertPolicy) -> None:
        self.learner, self.expert = learner, expert
        self.name = learner.name

    def reset(self, envs: list, resume: bool = False) -> None:
        """Start both on the same environments."""
        self.learner.reset(envs, resume)
        self.expert.reset(envs, resume)

    def act(self, envs: list) -> list[np.ndarray]:
        """Advance the expert's phase machines (for labels); return the learner's actions."""
        self.expert.act(envs)
        return self.learner.act(envs)

    def label(self, env: Any) -> np.ndarray:
        """Return the expert's action for the state the learner is in."""
        return self.expert.label(env)


def dagger_rounds(cfg: Any, trainer: Any) -> list[dict[str, Any]]:
    """Run cfg.dagger rounds on `trainer` (an imitation.Trainer already fit on the
    demonstrations); return per round the learner's success and phase rates on its own
    rollouts, the rows added and the dataset size."""
    steps = cfg.dagger_steps or max(1, cfg.steps // 2)
    out = []
    for r in range(cfg.dagger):
        seeds = [DAGGER_SEED0 + 10_000 * cfg.seed + r * cfg.dagger_episodes + k
                 for k in range(cfg.dagger_episodes)]
        shadow = ShadowPolicy(trainer.policy(), ExpertPolicy(0.0, resync=True))
        trs, recs = run(cfg.task, shadow, seeds, record=True, poses=False)
        more = episode_arrays(cfg.task, list(zip(seeds, trs, recs, strict=True)),
                              images=cfg.obs == "image", size=cfg.image_size)
        trainer.add(more)
        trainer.fit(steps)
        phases = [sum(1 for e in tr.events if e.type == "physical_phase") for tr in trs]
        out.append({"round": r + 1, "success": float(np.mean([tr.end.success for tr in trs])),
                    "phases": {f"p{k}": float(np.mean([p >= k for p in phases]))
                               for k in (1, 2, 3)},
                    "rows_added": int(len(more["actions"])),
                    "rows": int(len(trainer.data["actions"]))})
    return out
