"""Imitation training of the physical baselines, with DAgger rounds: the learner drives,
the scripted expert labels.

Each round rolls the current policy out on fresh demonstration seeds while every robot's
nominal scripted expert runs alongside on the same sensing (it never acts: its phase machine
only follows what the learner does) and records what it would have done. The labelled
learner states join the dataset and training continues (Ross et al., 2011, with the mixing
coefficient at zero after the demonstrations). The labeller needs no partner information,
so it is the same decentralized expert that made the demonstrations; it restarts from its
own sensing where it has fallen out of step with the robot it follows (see ExpertPolicy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.demo_files import load_demos
from coordbench.learn import imitation
from coordbench.learn.imitation import PolicyConfig

from .demos import DEMO_SEED0, episode_arrays
from .runner import run

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


def fit_on(cfg: PolicyConfig, train: dict[str, np.ndarray],
           val: dict[str, np.ndarray] | None) -> tuple[dict[str, Any], bytes]:
    """Train the baseline on demonstration arrays and DAgger rounds where cfg.dagger > 0;
    return (losses, rounds and timing, checkpoint bytes)."""
    return imitation.fit_on(cfg, train, val, dagger_rounds)


def train_policy(cfg: PolicyConfig, demos_dir: Path, out: Path) -> dict[str, Any]:
    """Train the baseline on `<task>_train.npz` (validation on `_val`), write the checkpoint
    to `out`; return losses and timing."""
    res, blob = fit_policy(cfg, demos_dir)
    write_atomic_bytes(Path(out), blob)
    return {**res, "checkpoint": str(out)}


def fit_policy(cfg: PolicyConfig, demos_dir: Path) -> tuple[dict[str, Any], bytes]:
    """Train the baseline (see `train_policy`); return (losses and timing, checkpoint bytes),
    so a worker elsewhere can hand the checkpoint back to the driver."""
    cfg.check()
    train = load_demos(Path(demos_dir) / f"{cfg.task}_train.npz")
    val_path = Path(demos_dir) / f"{cfg.task}_val.npz"
    val = load_demos(val_path) if val_path.is_file() else None
    return fit_on(cfg, train, val)
