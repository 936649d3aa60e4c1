"""`coordbench physical ...`: demonstrations, evaluation and imitation training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file, check_range
from coordbench.errors import ConfigError

from .common import (
    breaker_option,
    cache_option,
    cache_path_option,
    check_model_limits,
    cost_limit_option,
    emit_json,
    err,
    executor_option,
    fail_fast_option,
    max_connections_option,
    max_reply_tokens_option,
    max_tokens_per_episode_option,
    models_option,
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
MAX_DAGGER = 1000
MAX_HISTORY = 50
MAX_CHUNK = 500
MAX_ENSEMBLE = 100.0
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


def _demos_one(job: tuple) -> tuple[str, dict[str, Any], dict[str, bytes]]:
    from coordbench.suites.physical.demos import record_demos

    name, n, images, size, *train = job
    meta, files = record_demos(name, n, images=images, size=size,
                               n_train=train[0] if train else None)
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
    policy: str = typer.Option("expert", help="expert | expert_noisy | PATH (checkpoint) | "
                                              "llm (robots run the skills a model picks; "
                                              "with --model)"),
    rollouts: int = typer.Option(100, help="Rollouts with seeds 1..N."),
    phase_level: bool = typer.Option(False, "--phase-level", help="Also run phase-level "
                                     "evaluation from demonstrations."),
    demos: Path = typer.Option(Path("runs/demos"), help="Demonstrations directory "
                                                       "(for --phase-level)."),
    per_phase: int = typer.Option(50, help="Phase-level rollouts per phase."),
    model: str | None = typer.Option(None, help="Model alias of every robot (policy llm)."),
    controller: str | None = typer.Option(None, help="Policy llm: per_robot (one model per "
                                                     "robot, the default) | team (one call "
                                                     "for the whole team)."),
    models: Path | None = models_option(),
    max_connections: int | None = max_connections_option(),
    cache: bool = cache_option(),
    cache_path: Path | None = cache_path_option(),
    max_tokens_per_episode: int | None = max_tokens_per_episode_option(),
    cost_limit: float | None = cost_limit_option(),
    max_reply_tokens: int | None = max_reply_tokens_option(),
    in_flight: int = typer.Option(8, help="Episodes played concurrently (policy llm)."),
    fail_fast: bool = fail_fast_option(),
    breaker: int = breaker_option(),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_dir: Path = typer.Option(Path("runs/physical"), "--out", help="Run directory "
                                                                      "(resumable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Evaluate a policy: success and cumulative phase rates with 95% CIs (per task); a
    model-driven team (--policy llm) also model calls, tokens and protocol failures."""
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.llm.registry import load_registry
    from coordbench.report import physical_report as rep
    from coordbench.runner import Limits, ModelResources
    from coordbench.suites.physical.suite import (
        LLM,
        SUITE,
        PhysicalSpec,
        make_policy,
    )

    from .common import harness_settings, local_stats
    from .limits import MAX_IN_FLIGHT

    positive(rollouts=rollouts, per_phase=per_phase)
    check_range("--rollouts", rollouts, 1, MAX_EPISODES)
    check_range("--per-phase", per_phase, 1, MAX_EPISODES)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--in-flight", in_flight, 1, MAX_IN_FLIGHT)
    check_model_limits(max_connections, max_tokens_per_episode, cost_limit, max_reply_tokens)
    check_out_dir(out_dir)
    if controller is not None and policy != LLM:
        raise ConfigError(f"--controller is for --policy llm, not {policy}")
    if policy == LLM and phase_level:
        raise ConfigError("--policy llm has no phase-level evaluation; drop --phase-level")
    if phase_level:
        check_in_dir(demos, "--demos", "demonstrations folder")
    if models is not None:
        load_registry(models)
    if cache_path is not None:
        check_out_file(cache_path, "--cache-path")
    names = _tasks(task)
    plan: list[tuple] = []
    for name in names:
        # a bad checkpoint or team (llm without --model, --model without llm) fails first
        spec = PhysicalSpec(name, policy, model=model, controller=controller or "per_robot")
        if policy != LLM:
            make_policy(policy, name)
        plan.append((SUITE, spec, rollouts))
        if phase_level:
            path = demos / f"{name}_train.npz"
            load_demos(path)
            plan += [(SUITE, PhysicalSpec(name, policy, f"phase{k}", str(path)), per_phase)
                     for k in (1, 2, 3)]
    shown = Path(policy).name
    team: dict[str, Any] = {}
    if policy == LLM:
        shown = f"llm {model} ({controller or 'per_robot'})"
        settings = harness_settings(models, cache, cache_path, max_connections, None,
                                    {model or ""}, breaker)
        team = {"in_flight": in_flight, "stats": local_stats(settings, executor),
                "resources": ModelResources(settings, max_reply_tokens),
                "limits": Limits(cost_limit, max_tokens_per_episode, fail_fast=fail_fast,
                                 breaker=breaker)}
    labels = [f"{s.task} {shown} {s.protocol}" for _, s, _ in plan]
    run = play(out_dir, plan, quiet=as_json, executor=executor, workers=workers, labels=labels,
               **team)
    main = {s.task: (s, n) for _, s, n in plan if s.protocol == "main"}
    payload = {}
    for name in names:
        spec, n = main[name]
        cond = SUITE.condition(spec)
        # episodes a provider failure errored (or the cost limit cut) are not results
        saved = set(run.episode_keys(cond))
        trs = [run.load_episode(cond, c.key) for c in SUITE.cases(spec, n) if c.key in saved]
        entry = rep.main_json(rep.main_summary(trs)) if trs else {}
        if policy == LLM:
            entry["errored"] = len(run.errored_keys(cond))
        if phase_level:
            by_phase = {s.phase: [run.load_episode(SUITE.condition(s), c.key)
                                  for c in SUITE.cases(s, n)]
                        for _, s, n in plan if s.task == name and s.phase}
            entry["phase_level"] = rep.phase_json(rep.phase_summary(name, by_phase))
        payload[name] = entry
    if as_json:
        emit_json(payload)
        return
    out.print(rep.console_table(f"physical: {shown}, seeds 1..{rollouts}",
                                {(name, shown): e for name, e in payload.items()
                                 if "success" in e}))
    for name, e in payload.items():
        if "phase_level" in e:
            pl = e["phase_level"]
            out.print(f"{name} phase level: " + ", ".join(
                f"{k} {rep.pct(v)}" for k, v in pl["phases"].items()) +
                f"; collaborative {rep.pct(pl['collaborative'])}, non-collaborative "
                f"{rep.pct(pl['non_collaborative'])}")
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


def _train_one(job: tuple) -> tuple[str, dict[str, Any], bytes]:
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.suites.physical.learning import fit_on

    cfg, demos, out_path = job
    train = load_demos(Path(demos) / f"{cfg.task}_train.npz")
    val_path = Path(demos) / f"{cfg.task}_val.npz"
    res, blob = fit_on(cfg, train, load_demos(val_path) if val_path.is_file() else None)
    return out_path, {**res, "demos": str(demos)}, blob


def _generated_demos(names: list[str], n: int, root: Path, executor: str,
                     workers: int, image_size: int | None = None) -> Path:
    """Return the folder of `n` training demonstrations per task (plus n // 5, at least one,
    for validation), recording those not there yet; the seeds are fixed, so a folder made
    once serves every later run with the same count. With `image_size` the demonstrations
    also hold egocentric frames of that size (a folder of their own)."""
    from coordbench.runner import make_executor
    from coordbench.suites.physical.demos import write_demos

    folder = root / (f"n{n}" if image_size is None else f"n{n}_img{image_size}")
    todo = [t for t in names if not (folder / f"{t}_train.npz").is_file()]
    if todo:
        images, size = image_size is not None, image_size or 64
        with make_executor(executor, min(workers, len(todo))) as ex:
            for name, meta, files in ex.map(_demos_one, [(t, n + max(1, n // 5), images, size,
                                                          n) for t in todo]):
                write_demos(folder, files)
                err.print(f"{name}: {meta['episodes']['train']} training demonstrations "
                          f"(rejection rate {meta['rejection_rate']:.1%}) -> {folder}",
                          highlight=False)
    return folder


SHARING = ("separate", "shared", "shared_id")


@app.command("train")
def physical_train(
    task: str = typer.Option(..., help=TASK_HELP),
    algo: str = typer.Option("bc", help="bc | act | dp | joint (one centralized network "
                                        "for the whole team)"),
    obs: str = typer.Option("state", help="state | image"),
    scope: str | None = typer.Option(None, help="local (own observation, the default) | "
                                                "global (all robots'; joint: always)"),
    sharing: str | None = typer.Option(None, help="separate (one network per robot, the "
                                                  "default) | shared | shared_id (shared, "
                                                  "with a one-hot robot id)"),
    agent_id: bool = typer.Option(False, "--agent-id", help="Same as --sharing shared_id."),
    steps: int = typer.Option(2000, help="Gradient steps per network (first fit)."),
    batch: int = typer.Option(64, help="Batch size."),
    chunk: int | None = typer.Option(None, help="Actions predicted per query (default: the "
                                                "algorithm's: bc 1, act 20, dp 16, joint "
                                                "20)."),
    execute: int | None = typer.Option(None, help="Actions executed per query (default: the "
                                                  "algorithm's)."),
    ensemble: float | None = typer.Option(None, help="Query every step and execute ACT's "
                                                     "temporal ensemble of the live chunks "
                                                     "with weight exp(-m i) (0: execute "
                                                     "open loop; default: joint 0.1, "
                                                     "others 0)."),
    history: int = typer.Option(0, help="Past observations (every 10 control steps) stacked "
                                        "onto the current one (state only)."),
    dagger: int = typer.Option(0, help="DAgger rounds after the first fit: the policy drives, "
                                       "the scripted expert labels."),
    dagger_episodes: int = typer.Option(16, help="Rollouts per DAgger round."),
    seed: int = typer.Option(0, help="Training seed."),
    demos: Path | None = typer.Option(None, help="Demonstrations directory (from `physical "
                                                 "demos`); without it, --n-demos are "
                                                 "recorded first."),
    n_demos: int | None = typer.Option(None, "--n-demos", help="Record N training "
                                       "demonstrations per task first (default 50; kept in "
                                       "runs/demos/nN and reused)."),
    rollouts: int = typer.Option(100, help="Evaluate the trained policy on seeds 1..N (0: "
                                           "skip)."),
    eval_out: Path = typer.Option(Path("runs/physical"), "--eval-out", help="Run directory "
                                  "of the evaluation (resumable; as `physical eval`)."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_path: Path | None = typer.Option(None, "--out", help="Checkpoint file (.pt; one task) "
                                                             "or directory (several)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train an imitation baseline (BC, ACT-style, DP-style, or the centralized joint policy)
    on a task's demonstrations, optionally with DAgger rounds, then evaluate it (one task per
    worker)."""
    need_torch()
    from coordbench.core.atomic import write_atomic_bytes
    from coordbench.envs.physical.tasks import get_task
    from coordbench.learn.imitation import default_config
    from coordbench.report import physical_report as rep
    from coordbench.runner import make_executor
    from coordbench.suites.physical.suite import SUITE, PhysicalSpec

    check_range("--steps", steps, 1, MAX_GRAD_STEPS)
    check_range("--batch", batch, 1, MAX_BATCH)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--rollouts", rollouts, 0, MAX_EPISODES)
    check_range("--dagger", dagger, 0, MAX_DAGGER)
    check_range("--dagger-episodes", dagger_episodes, 1, MAX_EPISODES)
    check_range("--history", history, 0, MAX_HISTORY)
    for name, value in (("--chunk", chunk), ("--execute", execute)):
        if value is not None:
            check_range(name, value, 1, MAX_CHUNK)
    if demos is not None and n_demos is not None:
        raise ConfigError("give --demos DIR or --n-demos N, not both")
    if n_demos is not None:
        check_range("--n-demos", n_demos, 1, MAX_DEMOS)
    if demos is not None:
        check_in_dir(demos, "--demos", "demonstrations folder")
    if sharing is not None and sharing not in SHARING:
        raise ConfigError(f"--sharing must be one of {', '.join(SHARING)}, got {sharing!r}")
    if algo == "joint" and (sharing is not None or agent_id or scope == "local"):
        raise ConfigError("--algo joint is one network over every robot's observation: it "
                          "takes --scope global and no --sharing")
    share = sharing or "separate"
    agent_id = agent_id or share == "shared_id"
    share = "shared" if share == "shared_id" else share
    names = _tasks(task)
    if out_path is not None and len(names) == 1:
        check_out_file(out_path)
    else:
        check_out_dir(out_path or Path("runs/policies"))
    if rollouts:
        check_out_dir(eval_out)
    kw: dict[str, Any] = {"obs": obs, "agent_id": agent_id, "steps": steps, "batch": batch,
                          "seed": seed, "history": history, "dagger": dagger,
                          "dagger_episodes": dagger_episodes}
    if algo != "joint":
        kw.update(scope=scope or "local", sharing=share)
    if ensemble is not None:
        check_range("--ensemble", ensemble, 0, MAX_ENSEMBLE)
    kw.update({k: v for k, v in (("chunk", chunk), ("execute", execute),
                                 ("ensemble", ensemble)) if v is not None})
    cfgs = [default_config(name, algo, get_task(name).n_robots, **kw) for name in names]
    cfg0 = cfgs[0]
    tag = (f"{algo}_{obs}_{cfg0.scope}_{cfg0.sharing}{'_id' if agent_id else ''}"
           f"{f'_dagger{dagger}' if dagger else ''}_seed{seed}")
    if demos is None:
        demos = _generated_demos(names, n_demos or 50, Path("runs/demos"), executor, workers,
                                 cfg0.image_size if obs == "image" else None)
    jobs = []
    for cfg in cfgs:
        if out_path is not None and len(names) == 1:
            path = out_path
        else:
            path = (out_path or Path("runs/policies")) / f"{cfg.task}_{tag}.pt"
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
                          f"{path}", highlight=False)
    if rollouts:
        plan = [(SUITE, PhysicalSpec(name, results[name]["checkpoint"]), rollouts)
                for name in names]
        run = play(eval_out, plan, quiet=as_json, executor=executor, workers=workers,
                   labels=[f"{name} {tag}" for name in names])
        for _, spec, n in plan:
            trs = [run.load_episode(SUITE.condition(spec), c.key) for c in SUITE.cases(spec, n)]
            results[spec.task] = {**rep.main_json(rep.main_summary(trs)), **results[spec.task],
                                  "eval_run": str(run.path)}
        if not as_json:
            out.print(rep.console_table(f"physical: {tag}, seeds 1..{rollouts}",
                                        {(name, tag): results[name] for name in names}))
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
