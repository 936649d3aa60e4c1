"""Training sweeps over seeds: one result file (and one policy checkpoint) per
(method, config, seed), resumable, run on the runner's executors (here, worker processes, or
Ray), summarized with 95% CIs over seeds.

Each seed is a job on the runner's job engine (`runner/jobs.py`): workers return their
result and checkpoint to the driver, which writes them atomically as each run finishes, so
a Ray cluster's workers need no shared file system; a seed in training also saves snapshots
(`learn/snapshot.py`) under the run's `.jobs/`, so an interrupted sweep continues each
half-trained seed from its last snapshot (where the workers see the run's path).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordbench.core.rundir import RunDir
from coordbench.core.stats import Estimate, estimate, mean_ci, wilson_ci
from coordbench.errors import ConfigError, RunDirError
from coordbench.runner.executors import check_executor
from coordbench.runner.jobs import Job, JobContext, JobOutput, is_done, run_jobs

from .core import TrainConfig, method_label
from .methods import checkpoint_bytes, make, train
from .result_file import parse_result, result_text
from .train_log import LogSpec, opened

MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1
MAX_NUM_ENVS = 4096  # environments stepped together by one learner
MAX_TRAIN_STEPS = 10**9


def parse_seeds(text: str) -> list[int]:
    """Return the seeds a range ("0-4") or a list ("0,2,5") names; ConfigError unless they
    are 1 to MAX_SEEDS distinct seeds in 0..MAX_SEED, a range ascending."""
    form = f"--seeds must look like 0-4 or 0,2,5 (seeds 0..{MAX_SEED}); got {text!r}"
    try:
        bounds = [int(x) for x in text.split("-")] if "-" in text else None
        listed = None if bounds else [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(form) from None
    if bounds is not None:
        if len(bounds) != 2:
            raise ConfigError(form)
        a, b = bounds
        if b < a:
            raise ConfigError(f"--seeds range {text!r} is empty: write it low-high")
        if b - a + 1 > MAX_SEEDS:
            raise ConfigError(f"--seeds names {b - a + 1} seeds; at most {MAX_SEEDS}")
        seeds = list(range(a, b + 1))
    else:
        seeds = listed or []
    if not seeds or any(not 0 <= s <= MAX_SEED for s in seeds):
        raise ConfigError(form)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds lists a seed twice: {text!r}")
    if len(seeds) > MAX_SEEDS:
        raise ConfigError(f"--seeds names {len(seeds)} seeds; at most {MAX_SEEDS}")
    return seeds


def result_path(out: Path, tc: TrainConfig) -> Path:
    """Return the result file of one (algo, config, seed) run."""
    return Path(out) / f"{method_label(tc.algo, tc.extra)}_{tc.config}_seed{tc.seed}.json"


def checkpoint_path(out: Path, tc: TrainConfig) -> Path:
    """Return the final-policy checkpoint file of one run."""
    return result_path(out, tc).with_suffix(".pt")


def log_path(out: Path, tc: TrainConfig) -> Path:
    """Return the learning log (CSV: one row per evaluation) of one run."""
    return result_path(out, tc).with_suffix(".csv")


def live_log_path(out: Path, tc: TrainConfig) -> Path:
    """Return the learning log a local worker appends to while it trains."""
    return result_path(out, tc).with_suffix(".csv.part")


LOG_FIELDS = ("step", "wall_s", "steps_per_s")


def log_text(result: dict[str, Any]) -> str:
    """Return a run's learning log as CSV text: step, wall_s, steps_per_s (empty for
    results written before coordbench recorded them), then every evaluation metric."""
    curve, walls = result["curve"], result.get("curve_wall_s") or []
    if not curve:
        return ""
    keys = [*LOG_FIELDS, *(k for k in curve[0] if k not in LOG_FIELDS)]
    lines = [",".join(keys)]
    for i, row in enumerate(curve):
        wall = walls[i] if i < len(walls) else None
        extra = {"wall_s": "" if wall is None else round(wall, 3),
                 "steps_per_s": "" if not wall else round(row["step"] / wall, 1)}
        lines.append(",".join(str(extra.get(k, row.get(k, ""))) for k in keys))
    return "\n".join(lines) + "\n"


class _LiveLog:
    """Appends each evaluation to a run's .csv.part as it happens, so the driver can show
    progress while the seed trains (the finished log is written from the result)."""

    def __init__(self, path: str | None) -> None:
        self.path, self.header = path, False
        if path:
            Path(path).unlink(missing_ok=True)  # an interrupted earlier attempt

    def __call__(self, row: dict[str, float]) -> None:
        if not self.path:
            return
        # the evaluation's own columns only: training scalars (tags with a '/') come and go
        # (no loss before learning starts), and the progress reader needs one header
        row = {k: v for k, v in row.items() if "/" not in k}
        with open(self.path, "a", encoding="utf-8") as f:
            if not self.header:
                f.write(",".join(row) + "\n")
                self.header = True
            f.write(",".join(str(v) for v in row.values()) + "\n")


def scalars(row: dict[str, float]) -> dict[str, float]:
    """Return an evaluation row of the STAT loops (learn/core.py `EvalSchedule`) as the
    training log's tags: step, wall_s, speed/steps_per_s, eval/<metric>, and the training
    scalars as the loop named them (loss/..., explore/...)."""
    out = {"step": row["step"], "wall_s": row["wall_s"]}
    for k, v in row.items():
        if k in ("step", "wall_s"):
            continue
        out[k if "/" in k else "speed/steps_per_s" if k == "steps_per_s" else f"eval/{k}"] = v
    return out


def train_job(arg: tuple[dict[str, Any], str | None, LogSpec | None],
              ctx: JobContext) -> JobOutput:
    """Train one seed (a job, in a worker), continuing from its last snapshot if a killed
    run left one; return its checkpoint, learning log and result file (the result last: it
    marks the run finished). `arg` is the config's fields, the live log path (None: no
    live log, e.g. on a Ray cluster) and where the run's training log goes (None: none)."""
    fields, live, spec = arg
    tc = TrainConfig(**fields)
    method = make(tc)
    progress = _LiveLog(live)
    with opened(spec) as tlog:

        def log(row: dict[str, float]) -> None:
            progress(row)
            if tlog is not None:
                tlog(scalars(row))

        res = train(tc, method, log=log, snapshots=ctx)
    out = Path(ctx.root)
    return JobOutput({checkpoint_path(out, tc).name: checkpoint_bytes(tc, method),
                      log_path(out, tc).name: log_text(res).encode(),
                      result_path(out, tc).name: result_text(res).encode()}, res)


class _Progress:
    """Prints a line per run whenever its live log gains an evaluation (polled every
    `every_s` seconds in a thread) and when it finishes."""

    def __init__(self, say: Callable[[str], None], runs: list[tuple[TrainConfig, Path]],
                 every_s: float = 5.0) -> None:
        self.say, self.runs, self.every_s = say, runs, every_s
        self.seen: dict[Path, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def name(tc: TrainConfig) -> str:
        return f"{method_label(tc.algo, tc.extra)} {tc.config} seed {tc.seed}"

    def _poll(self) -> None:
        while not self.stop.wait(self.every_s):
            self.check()

    def check(self) -> None:
        """Print the newest evaluation of every run whose live log grew."""
        for tc, path in self.runs:
            try:
                lines = [ln for ln in path.read_text(encoding="utf-8").split("\n") if ln]
            except OSError:
                continue
            if len(lines) < 2 or len(lines) == self.seen.get(path):
                continue
            self.seen[path] = len(lines)
            head, last = lines[0].split(","), lines[-1].split(",")
            if len(last) != len(head):
                continue  # a row still being written
            row = dict(zip(head, last, strict=True))
            self.say(f"{self.name(tc)}: {int(float(row['step'])):,}/{tc.total_steps:,} steps, "
                     f"eval return {float(row['return']):.2f}, "
                     f"{float(row['steps_per_s']):,.0f} steps/s")

    def __enter__(self) -> _Progress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=self.every_s + 1)


def train_condition(algo_label: str, config: str) -> str:
    """Return the manifest name of a training sweep's (method, configuration) pair."""
    return f"train_{algo_label}_{config}"


def register_training(run: RunDir, algo_label: str, config: str) -> None:
    """Record a training sweep's (method, configuration) in the run's manifest."""
    run.register(train_condition(algo_label, config),
                 {"suite": "stat_train", "algo": algo_label, "config": config})


def sweep(configs: list[TrainConfig], out: Path, workers: int = 2,
          executor: str = "process", command: str = "",
          say: Callable[[str], None] | None = None,
          snapshot_every_s: float = 60.0, logs: tuple[str, ...] = ()
          ) -> list[dict[str, Any]]:
    """Train every config not yet on disk (one seed per worker, a job each on the job
    engine); return all results (in `configs` order). `out` is a run directory: its manifest
    records each (method, configuration) as a condition of suite stat_train, beside the
    result files and each run's learning log (<run>.csv). A seed in training saves a
    snapshot at most every `snapshot_every_s` seconds (under `out/.jobs/`), so a killed
    sweep continues each half-trained seed where it stopped. With `say`, progress lines go
    to it: each evaluation of a running seed (local and process workers, which share this
    disk) and each finished one. `logs` (learn/train_log.py: "tensorboard", "csv") writes
    each seed's scalars under `out/logs/<run>/` as it trains (<run>: its result's name).
    """
    check_executor(executor, workers)
    out = Path(out)
    run = RunDir.create_or_open(out, command=command, adopt=True)
    for tc in configs:
        register_training(run, method_label(tc.algo, tc.extra), tc.config)
    for tc in configs:
        check_same_settings(result_path(out, tc), tc)
    # Ray workers may run elsewhere: they keep no live log on this machine's paths
    live = executor in ("local", "process")
    jobs = [Job(result_path(out, tc).stem, result_path(out, tc).name, train_job,
                (asdict(tc), str(live_log_path(out, tc)) if live else None,
                 LogSpec.of(out, result_path(out, tc).stem, logs))) for tc in configs]
    todo = [tc for tc, job in zip(configs, jobs, strict=True) if not is_done(out, job)]
    watch = _Progress(say or (lambda _: None), [(tc, live_log_path(out, tc)) for tc in todo])

    def done(job: Job, output: JobOutput) -> None:
        res = output.value
        tc = TrainConfig(**res["config"])
        live_log_path(out, tc).unlink(missing_ok=True)
        if say:
            say(f"{_Progress.name(tc)}: done, final return {res['final_return']:.2f}, "
                f"{res['steps_per_s']:,.0f} steps/s over {res['wall_s']:.0f} s")

    with (watch if say and live and todo else contextlib.nullcontext()):
        run_jobs(out, jobs, executor=executor, workers=workers, on_done=done,
                 snapshot_every_s=snapshot_every_s)
    return [read_result(result_path(out, tc)) for tc in configs]


# settings a finished seed must share with a rerun into its directory: a different learning
# rate or exploration schedule is another experiment, not a resume
RESUME_FIELDS = ("lr", "eps_frac")


def check_same_settings(path: Path, tc: TrainConfig) -> None:
    """Raise ConfigError (one line) if the finished run at `path` was trained with other
    `RESUME_FIELDS` than `tc`; nothing when it is not finished yet."""
    if not path.is_file():
        return
    done = read_result(path).get("config", {})
    for name in RESUME_FIELDS:
        if name in done and done[name] != getattr(tc, name):
            raise ConfigError(f"{path} was trained with {name}={done[name]}, not "
                              f"{getattr(tc, name)}; use another --out for these settings")


def read_result(path: Path) -> dict[str, Any]:
    """Return one run's result, or raise RunDirError if the file is damaged."""
    try:
        res = parse_result(Path(path).read_text())
        if not isinstance(res, dict) or "final_return" not in res:
            raise ValueError
        return res
    except (OSError, ValueError):
        raise RunDirError(f"training result {path} is corrupt; delete it to retrain that "
                          f"seed") from None


def summarize(results: list[dict[str, Any]]) -> dict[str, Estimate]:
    """Return {final_return, max_return, and every final diagnostic: mean with 95% CI over
    seeds (shares clipped to [0, 1]); success is the rate over all evaluation episodes of
    all seeds with its Wilson interval}."""
    out = {"final_return": mean_ci([r["final_return"] for r in results]),
           "max_return": mean_ci([r["max_return"] for r in results]),
           "max_return_step": mean_ci([r["max_return_step"] for r in results]),
           "steps_per_s": mean_ci([r["steps_per_s"] for r in results])}
    from coordbench.metrics.stat import SEED_KINDS

    for key in results[0]["final"]:
        if key not in ("step", "return"):
            out[key] = estimate([r["final"][key] for r in results],
                                SEED_KINDS.get(key, "mean"))
    if "success" in results[0]["final"]:
        # the success rate over every evaluation episode of every seed, with its Wilson
        # interval: over a few seeds that all succeed, a t-interval would say "1.0 ± 0.0"
        n = [int(r["config"]["eval_episodes"]) for r in results]
        wins = sum(round(r["final"]["success"] * k) for r, k in zip(results, n, strict=True))
        out["success"] = wilson_ci(wins, sum(n))
    return out
