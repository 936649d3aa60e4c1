"""`coordbench physical ...`: demonstrations, evaluation and imitation training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file, check_range
from coordbench.errors import ConfigError

from .common import (
    emit_json,
    err,
    executor_option,
    need_av,
    need_torch,
    out,
    play,
    positive,
    workers_option,
)
from .limits import MAX_EPISODES, MAX_SEED, MAX_WORKERS
from .run_options import RunOptions, run_options

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
    task per worker. A task already recorded in the folder with these settings is kept (a
    rerun finishes what a killed one left)."""
    from coordbench.suites.physical.demos import record_all

    check_range("--n", n, 1, MAX_DEMOS)
    check_range("--size", size, 16, MAX_FRAME)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_out_dir(out_dir)
    names = _tasks(task)

    recorded: set[str] = set()

    def say(name: str, meta: dict[str, Any]) -> None:
        recorded.add(name)
        (err if as_json else out).print(f"{name}: {meta['episodes']} episodes, rejection "
                                        f"rate {meta['rejection_rate']:.1%} -> {out_dir}")

    metas = record_all(out_dir, names, n, images=images, size=size, executor=executor,
                       workers=workers, say=say)
    for name in names:
        if name not in recorded and not as_json:
            out.print(f"{name}: kept {metas[name]['episodes']} episodes recorded there before "
                      f"with these settings -> {out_dir}")
    if as_json:
        emit_json(metas)


@app.command("eval")
@run_options()
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
    team: str | None = typer.Option(
        None, "--team", metavar="SEAT=KIND[:ARG],...",
        help="Policy llm: each robot's seat, e.g. agent_0=llm:A,agent_1=scripted:expert "
             "(scripted:expert runs the skill controller's own suggestion, no model); a "
             "plain integer must be the task's robot count."),
    out_dir: Path = typer.Option(Path("runs/physical"), "--out", help="Run directory "
                                                                      "(resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Evaluate a policy: success and cumulative phase rates with 95% CIs (per task); a
    model-driven team (--policy llm) also model calls, tokens and protocol failures."""
    from coordbench.envs.physical.demo_files import load_demos
    from coordbench.report import physical_report as rep
    from coordbench.runner import ModelResources
    from coordbench.suites.physical.suite import LLM, SEATS, SUITE, PhysicalSpec, make_policy

    positive(rollouts=rollouts, per_phase=per_phase)
    check_range("--rollouts", rollouts, 1, MAX_EPISODES)
    check_range("--per-phase", per_phase, 1, MAX_EPISODES)
    opts.check(out_dir)
    if controller is not None and policy != LLM:
        raise ConfigError(f"--controller is for --policy llm, not {policy}")
    if policy == LLM and phase_level:
        raise ConfigError("--policy llm has no phase-level evaluation; drop --phase-level")
    if phase_level:
        check_in_dir(demos, "--demos", "demonstrations folder")
    names = _tasks(task)
    seats = None
    if team is not None:
        from coordbench.agents.seats import parse_team
        from coordbench.envs.physical.tasks import get_task

        parsed = parse_team(team, ("llm", "scripted", "learned"), "physical")
        if isinstance(parsed, int):
            for name in names:  # a plain size: the task's own team, as before
                if parsed != get_task(name).n_robots:
                    raise ConfigError(f"--team {parsed}: {name} has "
                                      f"{get_task(name).n_robots} robots")
        else:
            seats = parsed
            if policy == "expert" and not any(x.kind == "llm" for x in seats):
                policy = SEATS  # robots played by experts and checkpoints, robot by robot
    plan: list[tuple] = []
    for name in names:
        # a bad checkpoint or team (llm without --model, --model without llm) fails first
        spec = PhysicalSpec(name, policy, model=model, controller=controller or "per_robot",
                            seats=seats)
        if policy not in (LLM, SEATS):
            make_policy(policy, name)
        plan.append((SUITE, spec, rollouts))
        if phase_level:
            path = demos / f"{name}_train.npz"
            load_demos(path)
            plan += [(SUITE, PhysicalSpec(name, policy, f"phase{k}", str(path)), per_phase)
                     for k in (1, 2, 3)]
    shown = Path(policy).name
    if policy == SEATS:
        from coordbench.agents.seats import team_label

        shown = team_label(seats or ())
    settings = None
    if policy == LLM:
        from coordbench.agents.seats import team_label

        who = team_label(seats) if seats else model
        shown = f"llm {who} ({controller or 'per_robot'})"
        settings = opts.harness({x.arg for x in seats if x.kind == "llm"} if seats
                                else {model})
    run = opts.play(out_dir, plan, labels=[f"{s.task} {shown} {s.protocol}" for _, s, _ in plan],
                    settings=settings, resources=ModelResources(settings, opts.max_reply_tokens)
                    if policy == LLM else None)
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
    if opts.as_json:
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


def _generated_demos(names: list[str], n: int, root: Path, executor: str,
                     workers: int, image_size: int | None = None) -> Path:
    """Return the folder of `n` training demonstrations per task under `root`, recording
    those not there yet (suites/physical/demos.py `training_demos`)."""
    from coordbench.suites.physical.demos import training_demos

    def say(name: str, meta: dict[str, Any]) -> None:
        err.print(f"{name}: {meta['episodes']['train']} training demonstrations "
                  f"(rejection rate {meta['rejection_rate']:.1%})", highlight=False)

    return training_demos(root, names, n, image_size=image_size, executor=executor,
                          workers=workers, say=say)


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
    snapshot_every: float = typer.Option(60.0, "--snapshot-every", help="Seconds between "
                                         "snapshots of a policy in training (a killed run "
                                         "continues from the last one; 0: none)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train an imitation baseline (BC, ACT-style, DP-style, or the centralized joint policy)
    on a task's demonstrations, optionally with DAgger rounds, then evaluate it (one task per
    worker). A policy already trained there with these settings is kept; a killed training
    continues from its last snapshot."""
    need_torch()
    from coordbench.envs.physical.tasks import get_task
    from coordbench.learn.imitation import default_config
    from coordbench.report import physical_report as rep
    from coordbench.runner.jobs import run_jobs
    from coordbench.suites.physical.learning import read_result, train_jobs
    from coordbench.suites.physical.suite import SUITE, PhysicalSpec

    check_range("--steps", steps, 1, MAX_GRAD_STEPS)
    check_range("--batch", batch, 1, MAX_BATCH)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_range("--rollouts", rollouts, 0, MAX_EPISODES)
    check_range("--dagger", dagger, 0, MAX_DAGGER)
    check_range("--dagger-episodes", dagger_episodes, 1, MAX_EPISODES)
    check_range("--history", history, 0, MAX_HISTORY)
    check_range("--snapshot-every", snapshot_every, 0, 86_400)
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
        check_out_dir(eval_out, "--eval-out")
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
    if out_path is not None and len(names) == 1:
        root, files = out_path.parent, [out_path.name]
    else:
        root = out_path or Path("runs/policies")
        files = [f"{cfg.task}_{tag}.pt" for cfg in cfgs]
    jobs = train_jobs(root, list(zip(cfgs, files, strict=True)), demos)
    results = {}

    def done(job: Any, output: Any) -> None:
        res = output.value
        val = "" if res["val_loss"] is None else f", val loss {res['val_loss']:.4f}"
        (err if as_json else out).print(
            f"{res['task']} {tag}: train loss {res['train_loss']:.4f}{val} "
            f"({res['parameters']:,} parameters, {res['train_s']:.0f} s) -> "
            f"{root / job.key}", highlight=False)

    ran = {j.key for j in run_jobs(root, jobs, executor=executor, workers=workers,
                                   on_done=done, snapshot_every_s=snapshot_every)}
    if not as_json:
        for name in files:
            if name not in ran:
                out.print(f"{root / name}: kept (trained here before with these settings and "
                          "demonstrations)", highlight=False)
    for cfg, name in zip(cfgs, files, strict=True):
        res = read_result(root, name)
        res.pop("config", None)
        results[cfg.task] = {**res, "checkpoint": str(root / name)}
    if rollouts:
        plan = [(SUITE, PhysicalSpec(name, results[name]["checkpoint"]), rollouts)
                for name in names]
        run = play(eval_out, plan, executor=executor, workers=workers,
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
