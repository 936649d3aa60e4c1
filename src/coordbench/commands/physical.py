"""`coordbench physical ...`: demonstrations, evaluation and imitation training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coordbench.core.files import check_out_dir, check_out_file, check_range
from coordbench.core.limits import MAX_WORKERS
from coordbench.errors import ConfigError
from coordbench.suites.physical.options import (
    EMBODIMENT,
    G1_MODEL,
    TASK,
    embodiment_from,
    task_names,
)

from .common import (
    emit_json,
    episode_option,
    err,
    executor_option,
    format_option,
    json_option,
    need_av,
    out,
    out_option,
    workers_option,
)
from .physical_train import MAX_DEMOS, train_command

MAX_FRAME = 1024  # pixels of a square frame
MAX_VIDEO = 2048  # pixels of a video frame side (a CPU renderer: a 4K frame takes seconds)

def task_option() -> Any:
    """Return the --task option (its one description: `suites/physical/options.py`)."""
    return typer.Option(..., TASK.cli, help=TASK.help)


def images_option(help: str) -> Any:
    """Return the --images option (camera frames: recorded, or exported as videos)."""
    return typer.Option(False, "--images", help=help)


def size_option(help: str) -> Any:
    """Return the --size option (a square camera frame's side, pixels)."""
    return typer.Option(64, "--size", help=help)


def embodiment_option() -> Any:
    """Return the --embodiment option (described once, in the family's record)."""
    return typer.Option(EMBODIMENT.default, EMBODIMENT.cli, help=EMBODIMENT.help)


def g1_model_option() -> Any:
    """Return the --g1-model option (described once, in the family's record)."""
    return typer.Option(None, G1_MODEL.cli, help=G1_MODEL.help)


app = typer.Typer(no_args_is_help=True,
                  help="Physical multi-robot collaboration (MuJoCo): demos, eval, train, "
                       "render.")


@app.command("demos")
def physical_demos(
    task: str = task_option(),
    n: int = typer.Option(60, help="Successful demonstrations per task (5/6 train)."),
    images: bool = images_option("Also render egocentric frames (10 Hz, replayed from "
                                 "states)."),
    size: int = size_option("Frame size (pixels, square)."),
    executor: str = executor_option(),
    workers: int = workers_option(),
    out_dir: Path = out_option(Path("runs/demos"), "Output directory."),
    embodiment: str = embodiment_option(),
    g1_model: Path | None = g1_model_option(),
    as_json: bool = json_option(),
) -> None:
    """Record noisy-expert demonstrations (full states, actions, observations, phases); one
    task per worker. A task already recorded in the folder with these settings is kept (a
    rerun finishes what a killed one left). A G1's files name the embodiment
    (<task>_g1_train.npz): both embodiments' demonstrations can share a folder."""
    from coordbench.suites.physical.demos import record_all

    check_range("--n", n, 1, MAX_DEMOS)
    check_range("--size", size, 16, MAX_FRAME)
    check_range("--workers", workers, 1, MAX_WORKERS)
    check_out_dir(out_dir)
    embodiment = embodiment_from({"embodiment": embodiment, "g1_model": g1_model})
    names = task_names(task, embodiment)

    recorded: set[str] = set()

    def say(name: str, meta: dict[str, Any]) -> None:
        recorded.add(name)
        (err if as_json else out).print(f"{name}: {meta['episodes']} episodes, rejection "
                                        f"rate {meta['rejection_rate']:.1%} -> {out_dir}")

    metas = record_all(out_dir, names, n, images=images, size=size, executor=executor,
                       workers=workers, say=say, embodiment=embodiment)
    for name in names:
        if name not in recorded and not as_json:
            out.print(f"{name}: kept {metas[name]['episodes']} episodes recorded there before "
                      f"with these settings -> {out_dir}")
    if as_json:
        emit_json(metas)


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


@app.command("render")
def physical_render(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    episode: str = episode_option(default=..., help="Episode id: CONDITION/KEY (as in the "
                                  "episode's header), or a KEY only one condition has."),
    out_path: Path = out_option(..., "Video file to write (.mp4)."),
    width: int = typer.Option(640, help="Frame width (pixels, even)."),
    height: int = typer.Option(480, help="Frame height (pixels, even)."),
    camera: str = typer.Option("overview", help="overview (frames the whole episode) | "
                                                "global (the scene's camera) | ego0, ego1, "
                                                "ego2 (a robot's head camera)"),
    g1_model: Path | None = g1_model_option(),
    as_json: bool = json_option(),
) -> None:
    """Render a physical episode's video from its recorded poses (no re-simulation): one
    frame per recorded step, 10 fps, real time. A G1 episode's humanoids are drawn from
    their meshes (the model file: --g1-model, else where the machine has it)."""
    need_av()
    from coordbench.core.rundir import RunDir
    from coordbench.suites.physical.video import render_video

    check_range("--width", width, 16, MAX_VIDEO)
    check_range("--height", height, 16, MAX_VIDEO)
    if out_path.suffix.lower() != ".mp4":
        raise ConfigError(f"--out must name an .mp4 file, got {out_path}")
    check_out_file(out_path)
    if g1_model is not None:
        embodiment_from({"embodiment": "g1", "g1_model": g1_model})
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


FORMATS = ("lerobot",)


@app.command("export")
def physical_export(
    source: Path = typer.Argument(..., help="Demonstrations folder (`physical demos`) or a "
                                  "physical run directory (`physical eval`)."),
    fmt: str = format_option(..., "lerobot (LeRobotDataset v3.0)."),
    out_dir: Path = out_option(..., "Dataset folder to create (a source with several tasks "
                               "or conditions: one dataset each, in folders inside it)."),
    fps: int = typer.Option(50, help="Frames a second: the control rate (50) or a divisor of "
                                     "it (every 50/N-th control step)."),
    images: bool = images_option("Also write each robot's head camera as a video (rendered "
                                 "from the saved simulator states)."),
    size: int = size_option("Camera frame size with --images (pixels, square, even)."),
    only: str | None = typer.Option(None, "--only", help="Only these tasks of the source "
                                                         "(a name or a comma-separated list)."),
    g1_model: Path | None = g1_model_option(),
    as_json: bool = json_option(),
) -> None:
    """Export demonstrations, or a physical run's rollouts, as LeRobot datasets (v3.0): one
    dataset per task and embodiment (a run: per condition), loadable with LeRobot's
    `LeRobotDataset(repo_id, root=DIR)`. Written in a temporary folder, then renamed: a
    failed export leaves nothing."""
    from coordbench.suites.physical import lerobot as lr

    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    lr.check_fps(fps)
    if images:
        need_av()
        check_range("--size", size, 16, MAX_FRAME)
        if size % 2:
            raise ConfigError(f"--size must be even (H.264 with 4:2:0 chroma), got {size}")
    if g1_model is not None:
        embodiment_from({"embodiment": "g1", "g1_model": g1_model})
    if out_dir.exists():
        raise ConfigError(f"--out {out_dir} already exists; export into a new folder")
    sets = _export_sets(source, only)
    import shutil
    import tempfile

    from coordbench.envs.physical.tasks import get_task

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # every dataset is staged beside --out and the whole export renamed into place at the end
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    done = []
    try:
        for name, (t_name, emb, episodes, src) in sets.items():
            target = lr.Target(t_name, emb, get_task(t_name, emb).n_robots, fps,
                               size if images else None)
            info = lr.write_dataset(stage / name, target, episodes,
                                    lr.instruction(t_name, emb), src)
            info["out"] = str(out_dir if len(sets) == 1 else out_dir / name)
            done.append(info)
        if out_dir.exists():
            raise ConfigError(f"--out {out_dir} appeared while exporting; nothing replaced")
        if len(sets) == 1:
            (stage / next(iter(sets))).rename(out_dir)
            stage.rmdir()
        else:
            stage.rename(out_dir)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if as_json:
        emit_json(done[0] if len(done) == 1 else done)
        return
    for name, info in zip(sets, done, strict=True):
        out.print(f"{name}: {info['episodes']} episodes, {info['frames']} frames at {fps} "
                  f"fps -> {info['out']}", highlight=False)


def _export_sets(source: Path, task: str | None) -> dict[str, tuple[str, str, Any, str]]:
    """Return the datasets an export writes: name -> (task, embodiment, episodes, source
    text); ConfigError / RunDirError for a missing, empty or foreign source."""
    from coordbench.core.rundir import RunDir
    from coordbench.suites.physical import lerobot as lr

    if not source.is_dir():
        raise ConfigError(f"{source} does not exist (give a demonstrations folder or a "
                          "physical run directory)")
    wanted = None if task is None else {t.strip() for t in task.split(",")}
    if (source / "manifest.json").is_file():
        run = RunDir.open(source)
        out = {}
        for cond, fields in run.conditions.items():
            if fields.get("suite") != "physical" or (wanted and fields.get("task")
                                                      not in wanted):
                continue
            if fields.get("policy") in ("llm", "seats") or "seats" in fields:
                raise ConfigError(f"{cond} was played by a model-driven team, whose actions "
                                  "a run does not keep; export a scripted or learned "
                                  "policy's run, or demonstrations")
            if fields.get("protocol", "main") != "main":
                continue  # phase-level rollouts start mid-task: not whole episodes
            if not run.episode_keys(cond):
                continue
            out[cond] = (fields["task"], fields.get("embodiment", "cobot"),
                         lr.run_episodes(run, cond, fields), f"run {source} {cond}")
        if not out:
            raise ConfigError(f"{source} has no finished physical episodes to export")
        return out
    found = [(t, e) for t, e in lr.demo_tasks(source) if wanted is None or t in wanted]
    if not found:
        raise ConfigError(f"{source} holds no demonstrations"
                          + (f" of {task}" if task else "") + " (make them with "
                          "`coordbench physical demos`) and is no run directory")
    return {t if e == "cobot" else f"{t}_{e}": (t, e, lr.demo_episodes(source, t, e),
                                                f"demos {source}")
            for t, e in found}


app.command("train")(train_command())
