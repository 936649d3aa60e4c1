"""Evaluation protocols of the physical suite, recorded in resumable run directories.

- Main: rollouts with seeds 1..N from a fresh reset; success and cumulative phase rates.
- Phase level: for each demonstration and each phase k, restore the recorded state at the
  start of phase k (phases before k count as done) and roll out until phase k completes or
  a per-phase budget ends; collaborative vs non-collaborative phase success.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from coordbench.core.provenance import file_digest
from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, mean_ci
from coordbench.core.trajectory import Trajectory
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import ConfigError
from coordbench.metrics.physical import episode_metrics, failure_breakdown, summarize

from .demos import load_demos
from .rollout import ExpertPolicy, Policy, run

PHASE_BUDGET = 600  # control steps (12 s) per phase in phase-level evaluation


def make_policy(spec: str, task: str) -> Policy:
    """Return the policy named `spec` for `task`: expert, expert_noisy, or a trained
    checkpoint path (which must have been trained on `task`)."""
    if spec == "expert":
        return ExpertPolicy(0.0)
    if spec == "expert_noisy":
        return ExpertPolicy(1.0)
    from .baselines import load_policy

    policy = load_policy(Path(spec))
    if policy.cfg.task != task:
        raise ConfigError(f"policy {spec} was trained on {policy.cfg.task}, not {task}")
    return policy


def policy_label(spec: str) -> str:
    """Return a name usable in a condition id (a checkpoint's includes its content digest, so
    retraining into the same path starts a new condition instead of resuming stale ones)."""
    if spec in ("expert", "expert_noisy") or not Path(spec).is_file():
        return spec if spec in ("expert", "expert_noisy") else f"ckpt-{Path(spec).stem}"
    return f"ckpt-{Path(spec).stem}-{file_digest(spec)}"


def _episodes(run_dir: RunDir, condition: str, keys: list[str],
              play: Callable[[list[int]], list[Trajectory]], batch: int,
              on_done: Callable[[int], None] | None = None) -> list[Trajectory]:
    todo = [k for k, key in enumerate(keys) if not run_dir.has_episode(condition, key)]
    for a in range(0, len(todo), batch):
        chunk = todo[a:a + batch]
        for k, tr in zip(chunk, play(chunk), strict=True):
            run_dir.write_episode(condition, keys[k], tr)
        if on_done:
            on_done(len(chunk))
    return [run_dir.load_episode(condition, key) for key in keys]


def evaluate_main(task_name: str, policy_spec: str, rollouts: int, run_dir: RunDir, *,
                  batch: int = 16, on_done=None) -> list[Trajectory]:
    """Run (or resume) `rollouts` episodes with seeds 1..N; return their trajectories."""
    get_task(task_name)
    policy = make_policy(policy_spec, task_name)
    condition = f"physical_{task_name}_{policy_label(policy_spec)}_main"
    run_dir.register(condition, {"task": task_name, "policy": policy_spec, "protocol": "main"})
    seeds = list(range(1, rollouts + 1))

    def play(idx: list[int]) -> list[Trajectory]:
        return run(task_name, policy, [seeds[k] for k in idx], condition=condition)[0]

    return _episodes(run_dir, condition, [f"seed{s:04d}" for s in seeds], play, batch, on_done)


def evaluate_phases(task_name: str, policy_spec: str, demos: Path, run_dir: RunDir, *,
                    per_phase: int = 50, batch: int = 16,
                    on_done=None) -> dict[int, list[Trajectory]]:
    """Run (or resume) phase-level rollouts from the demonstrations' phase starts; return
    {phase: trajectories}."""
    task = get_task(task_name)
    data = load_demos(demos)
    policy = make_policy(policy_spec, task_name)
    n_eps = min(per_phase, len(data["seeds"]))
    out = {}
    for k in (1, 2, 3):
        condition = f"physical_{task_name}_{policy_label(policy_spec)}_phase{k}"
        run_dir.register(condition, {"task": task_name, "policy": policy_spec,
                                     "protocol": f"phase{k}", "demos": str(demos)})
        starts = []
        for e in range(n_eps):
            row0 = int(data["episode_start"][e])
            step = 0 if k == 1 else int(data["phase_steps"][e, k - 2])
            starts.append((data["states"][row0 + step], step, k - 1))
        seeds = [int(s) for s in data["seeds"][:n_eps]]

        def play(idx: list[int], k=k, starts=starts, seeds=seeds,
                 condition=condition) -> list[Trajectory]:
            return run(task_name, policy, [seeds[j] for j in idx],
                       starts=[starts[j] for j in idx], until_phase=k, budget=PHASE_BUDGET,
                       condition=condition)[0]

        out[k] = _episodes(run_dir, condition, [f"demo{e:03d}" for e in range(n_eps)], play,
                           batch, on_done)
    del task
    return out


def main_summary(trs: list[Trajectory]) -> dict[str, Any]:
    """Return {"success": Estimate, "phases": {"p1".."p3": Estimate}, ...diagnostics}."""
    s = summarize(trs)
    return {"success": s["success"], "phases": {f"p{p}": s[f"p{p}"] for p in (1, 2, 3)},
            "failure": failure_breakdown(trs),
            "coupling": {k: s[k] for k in ("drops", "robot_collisions", "partner_lag_s")},
            "steps": s["steps"]}


def phase_summary(task_name: str, by_phase: dict[int, list[Trajectory]]) -> dict[str, Any]:
    """Return per-phase success and the collaborative vs non-collaborative averages."""
    task = get_task(task_name)
    per = {f"p{k}": mean_ci([episode_metrics(t)["success"] for t in trs])
           for k, trs in by_phase.items()}
    groups: dict[str, list[float]] = {"collaborative": [], "non_collaborative": []}
    for k, trs in by_phase.items():
        key = "collaborative" if task.phases[k - 1].collaborative else "non_collaborative"
        groups[key].extend(episode_metrics(t)["success"] for t in trs)
    return {"phases": per, **{k: mean_ci(v) if v else Estimate(float("nan"), None, 0)
                             for k, v in groups.items()}}


def success_rates(trs: list[Trajectory]) -> np.ndarray:
    """Return the per-rollout success array."""
    return np.array([episode_metrics(t)["success"] for t in trs])
