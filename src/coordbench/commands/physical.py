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
    images: bool = typer.Option(False, "--images", help="Also render egocentric frames "
                                                        "(10 Hz, replayed from states)."),
    size: int = typer.Option(64, help="Frame size (pixels, square)."),
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


app.command("train")(train_command())
