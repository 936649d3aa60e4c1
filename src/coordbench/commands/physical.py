"""`coordbench physical ...`: demonstrations, evaluation and imitation training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file, check_range
from coordbench.errors import ConfigError

from .common import (
    emit_json,
    executor_option,
    need_av,
    need_torch,
    out,
    play,
    positive,
    workers_option,
)
from .limits import MAX_EPISODES, MAX_SEED, MAX_WORKERS

MAX_DEMOS = 10_000  # successful demonstrations per task
MAX_FRAME = 1024  # pixels of a square frame
MAX_GRAD_STEPS = 10_000_000
MAX_BATCH = 65_536
MAX_VIDEO = 2048  # pixels of a video frame side (a CPU renderer: a 4K frame takes seconds)

app = typer.Typer(no_args_is_help=True,
                  help="Physical multi-robot collaboration (MuJoCo): demos, eval, train, "
                       "render.")


def _tasks(task: str) -> list[str]:
    from coordbench.envs.physical.tasks import TASKS, get_task

    if task == "all":
        return list(TASKS)
    names = [t.strip() for t in task.split(",") if t.strip()]
    if not names:
        raise ConfigError(f"--task names no task; give a task, a comma-separated list or all "
                          f"(got {task!r})")
    for name in names:
        get_task(name)
    return names


TASK_HELP = ("Task name, a comma-separated list, or all. Tasks: Handover, Pouring, FrameHang, "
             "CoPouring, TrashCollection, CartService, CoCarry, TableAlign, MoveHouse, "
             "BigTable.")


def _demos_one(job: tuple[str, int, bool, int]) -> tuple[str, dict[str, Any], dict[str, bytes]]:
    from coordbench.suites.physical.demos import record_demos

    name, n, images, size = job
    meta, files = record_demos(name, n, images=images, size=size)
    return name, meta, files


@app.command("demos")
def physical_demos(
    task: str = typer.Option(..., help=TASK_HELP),
    n: int = typer.Option(60, help="Successful demonstrations per task (5/6 train)."),
    images: bool = typer.Option(False, "--images", help="Also render egocentric frames "
                                                        "(10 Hz, replayed from states)."),
    size: int = typer.Option(64, help="Frame size (pixels, square)."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_dir: Path = typer.Option(Path("runs/demos"), "--out", help="Output directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Record noisy-expert demonstrations (full states, actions, observations, phases); one
    task per worker."""
    from coordbench.runner import make_executor
    from coordbench.suites.physical.demos import write_demos

    check_range("--n", n, 1, MAX_DEMOS)
    check_range("--size", size, 16, MAX_FRAME)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_out_dir(out_dir)
    names = _tasks(task)
    metas = {}
    with make_executor(executor, min(workers, len(names))) as ex:
        for name, meta, files in ex.map(_demos_one, [(t, n, images, size) for t in names]):
            write_demos(out_dir, files)
            metas[name] = meta
            if not as_json:
                out.print(f"{name}: {meta['episodes']} episodes, rejection rate "
                          f"{meta['rejection_rate']:.1%} -> {out_dir}")
    if as_json:
        emit_json({name: metas[name] for name in names})


@app.command("eval")
def physical_eval(
    task: str = typer.Option(..., help=TASK_HELP),
    policy: str = typer.Option("expert", help="expert | expert_noisy | PATH (checkpoint)"),
    rollouts: int = typer.Option(100, help="Rollouts with seeds 1..N."),
    phase_level: bool = typer.Option(False, "--phase-level", help="Also run phase-level "
                                     "evaluation from demonstrations."),
    demos: Path = typer.Option(Path("runs/demos"), help="Demonstrations directory "
                                                       "(for --phase-level)."),
    per_phase: int = typer.Option(50, help="Phase-level rollouts per phase."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_dir: Path = typer.Option(Path("runs/physical"), "--out", help="Run directory "
                                                                      "(resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Evaluate a policy: success and cumulative phase rates with 95% CIs (per task)."""
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.report import physical_report as rep
    from coordbench.suites.physical.suite import SUITE, PhysicalSpec, make_policy

    positive(rollouts=rollouts, per_phase=per_phase)
    check_range("--rollouts", rollouts, 1, MAX_EPISODES)
    check_range("--per-phase", per_phase, 1, MAX_EPISODES)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_out_dir(out_dir)
    if phase_level:
        check_in_dir(demos, "--demos", "demonstrations folder")
    names = _tasks(task)
    plan: list[tuple] = []
    for name in names:
        make_policy(policy, name)  # a bad checkpoint fails before any work
        plan.append((SUITE, PhysicalSpec(name, policy), rollouts))
        if phase_level:
            path = demos / f"{name}_train.npz"
            load_demos(path)
            plan += [(SUITE, PhysicalSpec(name, policy, f"phase{k}", str(path)), per_phase)
                     for k in (1, 2, 3)]
    labels = [f"{s.task} {Path(policy).name} {s.protocol}" for _, s, _ in plan]
    run = play(out_dir, plan, quiet=as_json, executor=executor, workers=workers, labels=labels)
    payload = {}
    for name in names:
        trs = [run.load_episode(SUITE.condition(s), c.key) for _, s, n in plan
               if s.task == name and s.protocol == "main" for c in SUITE.cases(s, n)]
        entry = rep.main_json(rep.main_summary(trs))
        if phase_level:
            by_phase = {s.phase: [run.load_episode(SUITE.condition(s), c.key)
                                  for c in SUITE.cases(s, n)]
                        for _, s, n in plan if s.task == name and s.phase}
            entry["phase_level"] = rep.phase_json(rep.phase_summary(name, by_phase))
        payload[name] = entry
    if as_json:
        emit_json(payload)
        return
    out.print(rep.console_table(f"physical: {policy}, seeds 1..{rollouts}",
                                {(name, Path(policy).name): e for name, e in payload.items()}))
    for name, e in payload.items():
        if "phase_level" in e:
            pl = e["phase_level"]
            out.print(f"{name} phase level: " + ", ".join(
                f"{k} {rep.pct(v)}" for k, v in pl["phases"].items()) +
                f"; collaborative {rep.pct(pl['collaborative'])}, non-collaborative "
                f"{rep.pct(pl['non_collaborative'])}")
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


def _train_one(job: tuple) -> tuple[str, dict[str, Any], bytes]:
    from coordbench.learn.imitation import fit_policy

    cfg, demos, out_path = job
    res, blob = fit_policy(cfg, demos)
    return out_path, res, blob


@app.command("train")
def physical_train(
    task: str = typer.Option(..., help=TASK_HELP),
    algo: str = typer.Option("bc", help="bc | act | dp"),
    obs: str = typer.Option("state", help="state | image"),
    scope: str = typer.Option("local", help="local (own observation) | global (all robots')"),
    sharing: str = typer.Option("separate", help="separate (one network per robot) | shared"),
    agent_id: bool = typer.Option(False, "--agent-id", help="Shared networks: add a robot id."),
    steps: int = typer.Option(2000, help="Gradient steps per network."),
    batch: int = typer.Option(64, help="Batch size."),
    seed: int = typer.Option(0, help="Training seed."),
    demos: Path = typer.Option(Path("runs/demos"), help="Demonstrations directory."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_path: Path | None = typer.Option(None, "--out", help="Checkpoint file (.pt; one task) "
                                                             "or directory (several)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train an imitation baseline (BC, ACT-style, DP-style) on a task's demonstrations (one
    task per worker)."""
    need_torch()
    from coordbench.core.atomic import write_atomic_bytes
    from coordbench.envs.physical.tasks import get_task
    from coordbench.learn.imitation import default_config
    from coordbench.runner import make_executor

    check_range("--steps", steps, 1, MAX_GRAD_STEPS)
    check_range("--batch", batch, 1, MAX_BATCH)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_in_dir(demos, "--demos", "demonstrations folder")
    names = _tasks(task)
    if out_path is not None and len(names) == 1:
        check_out_file(out_path)
    else:
        check_out_dir(out_path or Path("runs/policies"))
    tag = f"{algo}_{obs}_{scope}_{sharing}{'_id' if agent_id else ''}_seed{seed}"
    jobs = []
    for name in names:
        cfg = default_config(name, algo, get_task(name).n_robots, obs=obs, scope=scope,
                             sharing=sharing, agent_id=agent_id, steps=steps, batch=batch,
                             seed=seed)
        if out_path is not None and len(names) == 1:
            path = out_path
        else:
            path = (out_path or Path("runs/policies")) / f"{name}_{tag}.pt"
        jobs.append((cfg, demos, str(path)))
    results = {}
    with make_executor(executor, min(workers, len(jobs))) as ex:
        for path, res, blob in ex.map(_train_one, jobs):
            write_atomic_bytes(Path(path), blob)
            results[res["task"]] = {**res, "checkpoint": path}
            if not as_json:
                val = "" if res["val_loss"] is None else f", val loss {res['val_loss']:.4f}"
                out.print(f"{res['task']} {tag}: train loss {res['train_loss']:.4f}{val} "
                          f"({res['parameters']:,} parameters, {res['train_s']:.0f} s) -> "
                          f"{path}")
    if as_json:
        emit_json(results[names[0]] if len(names) == 1 else results)


@app.command("render")
def physical_render(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    episode: str = typer.Option(..., help="Episode id: CONDITION/KEY (as in the episode's "
                                          "header), or a KEY only one condition has."),
    out_path: Path = typer.Option(..., "--out", help="Video file to write (.mp4)."),
    width: int = typer.Option(640, help="Frame width (pixels, even)."),
    height: int = typer.Option(480, help="Frame height (pixels, even)."),
    camera: str = typer.Option("overview", help="overview (frames the whole episode) | "
                                                "global (the scene's camera) | ego0, ego1, "
                                                "ego2 (a robot's head camera)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Render a physical episode's video from its recorded poses (no re-simulation): one
    frame per recorded step, 10 fps, real time."""
    need_av()
    from coordbench.core.rundir import RunDir
    from coordbench.suites.physical.video import render_video

    check_range("--width", width, 16, MAX_VIDEO)
    check_range("--height", height, 16, MAX_VIDEO)
    if out_path.suffix.lower() != ".mp4":
        raise ConfigError(f"--out must name an .mp4 file, got {out_path}")
    check_out_file(out_path)
    run = RunDir.open(run_dir)
    cond, key = run.find_episode(episode)
    info = render_video(run.load_episode(cond, key), out_path, width=width,
                        height=height, camera=camera)
    if as_json:
        emit_json({"episode": f"{cond}/{key}", "out": str(info.path), "frames": info.frames,
                   "width": info.width, "height": info.height, "fps": info.fps})
        return
    out.print(f"{cond}/{key}: {info.frames} frames, {info.width} x {info.height}, "
              f"{info.fps} fps ({info.frames / info.fps:.1f} s) -> {info.path}")
