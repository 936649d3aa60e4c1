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

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.core.atomic import write_atomic_bytes
from coordbench.envs.physical.demo_files import demos_name, load_demos
from coordbench.errors import ConfigError
from coordbench.learn import imitation
from coordbench.learn.imitation import PolicyConfig, data_digest
from coordbench.learn.snapshot import Snapshots
from coordbench.learn.train_log import LogSpec, opened
from coordbench.runner.jobs import Job, JobContext, JobOutput

from .demos import DEMO_SEED0, episode_arrays
from .episode import run

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


def dagger_rounds(cfg: Any, trainer: Any, snaps: Snapshots | None = None
                  ) -> list[dict[str, Any]]:
    """Run cfg.dagger rounds on `trainer` (an imitation.Trainer already fit on the
    demonstrations); return per round the learner's success and phase rates on its own
    rollouts, the rows added and the dataset size. A trainer restored from a snapshot
    (`snaps`) keeps the rounds it finished and the rollouts of the round it was fitting."""
    steps = cfg.dagger_steps or max(1, cfg.steps // 2)
    if not hasattr(trainer, "rounds"):
        trainer.rounds = []
    for r in range(len(trainer.rounds), cfg.dagger):
        if getattr(trainer, "round_rollouts", None) is None:  # else: resumed mid-fit
            seeds = [DAGGER_SEED0 + 10_000 * cfg.seed + r * cfg.dagger_episodes + k
                     for k in range(cfg.dagger_episodes)]
            shadow = ShadowPolicy(trainer.policy(), ExpertPolicy(0.0, resync=True))
            trs, recs = run(cfg.task, shadow, seeds, record=True, poses=False,
                            embodiment=cfg.embodiment)
            more = episode_arrays(cfg.task, list(zip(seeds, trs, recs, strict=True)),
                                  images=cfg.obs == "image", size=cfg.image_size,
                                  embodiment=cfg.embodiment)
            trainer.add(more)
            phases = [sum(1 for e in tr.events if e.type == "physical_phase") for tr in trs]
            trainer.round_rollouts = {
                "round": r + 1, "success": float(np.mean([tr.end.success for tr in trs])),
                "phases": {f"p{k}": float(np.mean([p >= k for p in phases])) for k in (1, 2, 3)},
                "rows_added": int(len(more["actions"]))}
        trainer.fit(steps, snaps, stage=r + 1)
        trainer.rounds.append({**trainer.round_rollouts,
                               "rows": int(len(trainer.data["actions"]))})
        trainer.round_rollouts = None
    return list(trainer.rounds)


def fit_on(cfg: PolicyConfig, train: dict[str, np.ndarray],
           val: dict[str, np.ndarray] | None, snapshots: Any = None, log: Any = None
           ) -> tuple[dict[str, Any], bytes]:
    """Train the baseline on demonstration arrays and DAgger rounds where cfg.dagger > 0,
    continuing from the last snapshot in `snapshots` if there is one, the losses sent to
    `log(row)` as it fits (None: no log); return (losses, rounds and timing, checkpoint
    bytes)."""
    return imitation.fit_on(cfg, train, val, dagger_rounds, snapshots, log)


def train_policy(cfg: PolicyConfig, demos_dir: Path, out: Path) -> dict[str, Any]:
    """Train the baseline on `<task>_train.npz` (validation on `_val`; a G1's
    `<task>_g1_train.npz`), write the checkpoint
    to `out`; return losses and timing."""
    res, blob = fit_policy(cfg, demos_dir)
    write_atomic_bytes(Path(out), blob)
    return {**res, "checkpoint": str(out)}


def fit_policy(cfg: PolicyConfig, demos_dir: Path) -> tuple[dict[str, Any], bytes]:
    """Train the baseline (see `train_policy`); return (losses and timing, checkpoint bytes),
    so a worker elsewhere can hand the checkpoint back to the driver."""
    cfg.check()
    train = load_demos(Path(demos_dir) / demos_name(cfg.task, cfg.embodiment))
    val_path = Path(demos_dir) / demos_name(cfg.task, cfg.embodiment, "val")
    val = load_demos(val_path) if val_path.is_file() else None
    return fit_on(cfg, train, val)


def train_job(arg: tuple[PolicyConfig, str, str, bool, LogSpec | None],
              ctx: JobContext) -> JobOutput:
    """Train one policy (a job on the job engine), continuing from its last snapshot if a
    killed run left one; return its checkpoint and its result file `<checkpoint>.json` (the
    training numbers, config and demonstrations: written last, it marks the policy done).
    `arg`: the config, the demonstrations folder, the checkpoint's file name in the job's
    root, whether to report the validation loss (on `<task>_val.npz`, where present), and
    where the training log goes (None: none)."""
    cfg, demos, name, use_val, spec = arg
    train = load_demos(Path(demos) / demos_name(cfg.task, cfg.embodiment))
    val_path = Path(demos) / demos_name(cfg.task, cfg.embodiment, "val")
    val = load_demos(val_path) if use_val and val_path.is_file() else None
    with opened(spec) as tlog:
        res, blob = fit_on(cfg, train, val, snapshots=ctx, log=tlog)
    res = {**res, "demos": str(demos), "config": asdict(cfg)}
    return JobOutput({name: blob, result_name(name): (json.dumps(res, indent=1) + "\n").encode()},
                     res)


def result_name(checkpoint: str) -> str:
    """Return the file name of a policy's result, beside its checkpoint."""
    return str(Path(checkpoint).with_suffix(".json"))


def train_jobs(root: Path, items: list[tuple[PolicyConfig, str]], demos: Path,
               use_val: bool = True, logs: tuple[str, ...] = ()) -> list[Job]:
    """Return one training job per (config, checkpoint name in `root`); ConfigError (one
    line) where a finished policy there was trained with other settings or on other
    demonstrations (a rerun with the same ones keeps it). `logs` (learn/train_log.py)
    writes each policy's losses under `root/logs/<checkpoint stem>/` as it fits."""
    jobs = []
    for cfg, name in items:
        done = Path(root) / result_name(name)
        if done.is_file():
            try:
                old = json.loads(done.read_text(encoding="utf-8"))
                if not isinstance(old, dict):
                    raise ValueError
            except ValueError:
                raise ConfigError(f"{done} is not a training result; delete it to retrain "
                                  "that policy") from None
            now = json.loads(json.dumps(asdict(cfg)))
            # a result written before the G1 names no embodiment: a CoBot's
            was = {"embodiment": "cobot", **old.get("config", {})}
            if "config" in old and was != now:
                diff = sorted(k for k in now if was.get(k) != now[k])
                raise ConfigError(f"{Path(root) / name} was trained with other settings "
                                  f"({', '.join(diff)}); use another --out or delete it")
            digest = data_digest(load_demos(Path(demos) / demos_name(cfg.task,
                                                                      cfg.embodiment)))
            if old.get("demos_digest", digest) != digest:
                raise ConfigError(f"{Path(root) / name} was trained on other demonstrations "
                                  f"than {demos}; use another --out or delete it")
        spec = LogSpec.of(root, Path(name).stem, logs)
        jobs.append(Job(name, result_name(name), train_job,
                        (cfg, str(demos), name, use_val, spec)))
    return jobs


def read_result(root: Path, checkpoint: str) -> dict[str, Any]:
    """Return a finished policy's result (its `<checkpoint>.json`)."""
    return json.loads((Path(root) / result_name(checkpoint)).read_text(encoding="utf-8"))
