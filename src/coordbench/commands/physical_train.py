"""`coordbench physical train`: an imitation baseline on a task's demonstrations, then its
evaluation. Its options are `Option` records (`runner/options.py`): every range is checked
in one place before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordbench.core.files import check_in_dir, check_out_dir, check_out_file
from coordbench.core.limits import MAX_EPISODES, MAX_SEED, MAX_WORKERS
from coordbench.errors import ConfigError
from coordbench.learn.train_log import DEFAULT as DEFAULT_LOG
from coordbench.learn.train_log import HELP as LOG_HELP
from coordbench.runner.options import Option
from coordbench.suites.physical.options import (
    EMBODIMENT,
    G1_MODEL,
    TASK,
    embodiment_from,
    run_folder,
    task_names,
)

from .common import emit_json, err, need_torch, out, play_plan
from .option_params import with_options

MAX_DEMOS = 10_000  # successful demonstrations per task
MAX_GRAD_STEPS = 10_000_000
MAX_BATCH = 65_536
MAX_DAGGER = 1000
MAX_HISTORY = 50
MAX_CHUNK = 500
MAX_ENSEMBLE = 100.0
SHARING = ("separate", "shared", "shared_id")

OPTIONS = (
    TASK,
    EMBODIMENT,
    G1_MODEL,
    Option("algo", str, "bc", "bc | act | dp | joint (one centralized network for the whole "
           "team)"),
    Option("obs", str, "state", "state | image"),
    Option("scope", str, None, "local (own observation, the default) | global (all robots'; "
           "joint: always)"),
    Option("sharing", str, None, "separate (one network per robot, the default) | shared | "
           "shared_id (shared, with a one-hot robot id)", choices=SHARING),
    Option("agent_id", bool, False, "Same as --sharing shared_id.", flag="--agent-id"),
    Option("steps", int, None, "Gradient steps per network (first fit; default: the "
           "algorithm's: bc 2000, act 3000, dp 5000, joint 2000).", low=1,
           high=MAX_GRAD_STEPS),
    Option("batch", int, 64, "Batch size.", low=1, high=MAX_BATCH),
    Option("chunk", int, None, "Actions predicted per query (default: the algorithm's: bc 1, "
           "act 20, dp 16, joint 20).", low=1, high=MAX_CHUNK),
    Option("execute", int, None, "Actions executed per query (default: the algorithm's: 1).",
           low=1, high=MAX_CHUNK),
    Option("ensemble", float, None, "Query every step and execute ACT's temporal ensemble of "
           "the live chunks with weight exp(-m i) (0: execute open loop; default: act, dp "
           "and joint 0.1, bc 0).", low=0, high=MAX_ENSEMBLE),
    Option("history", int, 0, "Past observations (every 10 control steps) stacked onto the "
           "current one (state only).", low=0, high=MAX_HISTORY),
    Option("dagger", int, 0, "DAgger rounds after the first fit: the policy drives, the "
           "scripted expert labels.", low=0, high=MAX_DAGGER),
    Option("dagger_episodes", int, 16, "Rollouts per DAgger round.", low=1,
           high=MAX_EPISODES),
    Option("seed", int, 0, "Training seed.", low=0, high=MAX_SEED),
    Option("demos", Path, None, "Demonstrations directory (from `physical demos`), or "
           "lerobot:DIR, a LeRobotDataset v3.0 of the task (`physical export`'s, or one with "
           "the same features); without it, --n-demos are recorded first."),
    Option("n_demos", int, None, "Record N training demonstrations per task first (default "
           "50; kept in runs/demos/nN and reused).", flag="--n-demos", low=1, high=MAX_DEMOS),
    Option("rollouts", int, 100, "Evaluate the trained policy on seeds 1..N (0: skip).",
           low=0, high=MAX_EPISODES),
    Option("eval_out", Path, None, "Run directory of the evaluation (resumable; as "
           "`physical eval`; default runs/physical, a G1's runs/physical-g1).",
           flag="--eval-out"),
    Option("executor", str, "local", "local (this process) | process (a local process pool) "
           "| ray (RAY_ADDRESS, or a local instance on 127.0.0.1)"),
    Option("workers", int, 1, "Parallel workers (processes or Ray CPUs).", low=1,
           high=MAX_WORKERS),
    Option("out", Path, None, "Checkpoint file (.pt; one task) or directory (several).",
           flag="--out"),
    Option("snapshot_every", float, 60.0, "Seconds between snapshots of a policy in training "
           "(a killed run continues from the last one; 0: none).", low=0, high=86_400),
    Option("log", str, DEFAULT_LOG, LOG_HELP + " OUT is the checkpoints' folder (--out's "
           "folder for one task's file; default runs/policies), <run> a checkpoint's name.",
           flag="--log"),
    Option("json", bool, False, "Print one JSON object.", flag="--json"),
)


def _configs(v: dict[str, Any], names: list[str]) -> tuple[list[Any], str]:
    """Return each task's training configuration and the policies' file tag."""
    from coordbench.envs.physical.tasks import get_task
    from coordbench.learn.imitation import default_config

    if v["algo"] == "joint" and (v["sharing"] is not None or v["agent_id"]
                                 or v["scope"] == "local"):
        raise ConfigError("--algo joint is one network over every robot's observation: it "
                          "takes --scope global and no --sharing")
    share = v["sharing"] or "separate"
    agent_id = v["agent_id"] or share == "shared_id"
    kw: dict[str, Any] = {k: v[k] for k in ("obs", "batch", "seed", "history", "dagger",
                                             "dagger_episodes")}
    kw["agent_id"] = agent_id
    kw["embodiment"] = v["embodiment"]
    if v["algo"] != "joint":
        kw.update(scope=v["scope"] or "local",
                  sharing="shared" if share == "shared_id" else share)
    kw.update({k: v[k] for k in ("chunk", "execute", "ensemble", "steps") if v[k] is not None})
    cfgs = [default_config(name, v["algo"], get_task(name, v["embodiment"]).n_robots, **kw)
            for name in names]
    c = cfgs[0]
    dagger = f"_dagger{v['dagger']}" if v["dagger"] else ""
    tag = (f"{v['algo']}_{v['obs']}_{c.scope}_{c.sharing}{'_id' if agent_id else ''}"
           f"{dagger}_seed{v['seed']}")
    return cfgs, tag


def _checked(v: dict[str, Any]) -> list[str]:
    """Check what the ranges do not say; return the tasks."""
    from coordbench.learn.train_log import parse_log
    from coordbench.runner import check_executor

    v["log"] = parse_log(v["log"])  # the kinds; TensorBoard checked before any work
    check_executor(v["executor"], v["workers"])
    if v["demos"] is not None and v["n_demos"] is not None:
        raise ConfigError("give --demos DIR or --n-demos N, not both")
    v["embodiment"] = embodiment_from(v)
    names = task_names(v["task"], v["embodiment"])
    if v["demos"] is not None:
        from coordbench.suites.physical.lerobot import parse_source, to_demos

        dataset = parse_source(v["demos"])
        if dataset is None:
            check_in_dir(v["demos"], "--demos", "demonstrations folder")
        else:  # read, checked against the task, and kept as demonstration arrays
            v["demos"] = to_demos(dataset, names, v["embodiment"], Path("runs/demos"))
    if v["out"] is not None and len(names) == 1:
        check_out_file(v["out"])
    else:
        check_out_dir(v["out"] or Path("runs/policies"))
    if v["eval_out"] is None:
        v["eval_out"] = run_folder(v["embodiment"])
    if v["rollouts"]:
        check_out_dir(v["eval_out"], "--eval-out")
    return names


def _demos(v: dict[str, Any], names: list[str], image_size: int | None) -> Path:
    """Return the demonstrations folder: --demos, or --n-demos recorded under runs/demos."""
    from coordbench.suites.physical.demos import training_demos

    if v["demos"] is not None:
        return v["demos"]

    def say(name: str, meta: dict[str, Any]) -> None:
        err.print(f"{name}: {meta['episodes']['train']} training demonstrations "
                  f"(rejection rate {meta['rejection_rate']:.1%})", highlight=False)

    return training_demos(Path("runs/demos"), names, v["n_demos"] or 50,
                          image_size=image_size, executor=v["executor"],
                          workers=v["workers"], say=say, embodiment=v["embodiment"])


def _train(v: dict[str, Any], cfgs: list[Any], tag: str, demos: Path) -> dict[str, Any]:
    """Train every task's policy (one a worker; one trained before is kept); return
    {task: training result with its checkpoint}."""
    from coordbench.runner.jobs import run_jobs
    from coordbench.suites.physical.learning import read_result, train_jobs

    if v["out"] is not None and len(cfgs) == 1:
        root, files = v["out"].parent, [v["out"].name]
    else:
        root = v["out"] or Path("runs/policies")
        body = "" if v["embodiment"] == "cobot" else f"_{v['embodiment']}"
        files = [f"{cfg.task}{body}_{tag}.pt" for cfg in cfgs]
    shown = err if v["json"] else out

    def done(job: Any, output: Any) -> None:
        res = output.value
        val = "" if res["val_loss"] is None else f", val loss {res['val_loss']:.4f}"
        shown.print(f"{res['task']} {tag}: train loss {res['train_loss']:.4f}{val} "
                    f"({res['parameters']:,} parameters, {res['train_s']:.0f} s) -> "
                    f"{root / job.key}", highlight=False)

    jobs = train_jobs(root, list(zip(cfgs, files, strict=True)), demos, logs=v["log"])
    ran = {j.key for j in run_jobs(root, jobs, executor=v["executor"], workers=v["workers"],
                                   on_done=done, snapshot_every_s=v["snapshot_every"])}
    for name in files:
        if name not in ran and not v["json"]:
            out.print(f"{root / name}: kept (trained here before with these settings and "
                      "demonstrations)", highlight=False)
    results = {}
    for cfg, name in zip(cfgs, files, strict=True):
        res = read_result(root, name)
        res.pop("config", None)
        results[cfg.task] = {**res, "checkpoint": str(root / name)}
    return results


def _evaluate(v: dict[str, Any], names: list[str], tag: str, results: dict[str, Any]) -> None:
    """Evaluate each trained policy on seeds 1..rollouts into --eval-out (results gain
    success and phase rates)."""
    from coordbench.report import physical_report as rep
    from coordbench.suites.physical.suite import SUITE, PhysicalSpec

    plan = [(SUITE, PhysicalSpec(name, results[name]["checkpoint"],
                                 embodiment=v["embodiment"]), v["rollouts"])
            for name in names]
    run = play_plan(v["eval_out"], plan, executor=v["executor"], workers=v["workers"],
               labels=[f"{name} {tag}" for name in names])
    for _, spec, n in plan:
        trs = [run.load_episode(SUITE.condition(spec), c.key) for c in SUITE.cases(spec, n)]
        results[spec.task] = {**rep.main_json(rep.main_summary(trs)), **results[spec.task],
                              "eval_run": str(run.path)}
    if not v["json"]:
        out.print(rep.console_table(f"physical: {tag}, seeds 1..{v['rollouts']}",
                                    {(name, tag): results[name] for name in names}))


def physical_train(v: dict[str, Any]) -> None:
    """Train an imitation baseline, then evaluate it (see `train_command`)."""
    need_torch()
    names = _checked(v)
    cfgs, tag = _configs(v, names)
    demos = _demos(v, names, cfgs[0].image_size if v["obs"] == "image" else None)
    results = _train(v, cfgs, tag, demos)
    if v["rollouts"]:
        _evaluate(v, names, tag, results)
    if v["json"]:
        emit_json(results[names[0]] if len(names) == 1 else results)


def train_command() -> Any:
    """Return `coordbench physical train`."""
    return with_options(OPTIONS, "run", [], physical_train, "physical_train",
                        "Train an imitation baseline (BC, ACT-style, DP-style, or the "
                        "centralized joint policy) on a task's demonstrations, optionally with "
                        "DAgger rounds, then evaluate it (one task per worker). A policy "
                        "already trained there with these settings is kept; a killed "
                        "training continues from its last snapshot.")
