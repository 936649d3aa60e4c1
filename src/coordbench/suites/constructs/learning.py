"""Learned construct teams: which instances a family trains on and is tested on, and one
training run (`coordbench constructs train`).

A family is one construct (D1-D4) at one team size. The team trains on the family's instances
of the full set that are not in the stratified 240 subset and is tested on the subset's (held
out), where the rule, oracle and model-driven planners are compared too
(`constructs run --subset rep240 --construct C --team N --agents learned --checkpoint P
--planner decentralized`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import estimate
from coordbench.envs.household.menu import construct_nodes
from coordbench.envs.household.pettingzoo_env import Episode
from coordbench.errors import ConfigError
from coordbench.learn.train_log import LogSpec, opened
from coordbench.runner.jobs import Job, JobContext, JobOutput, run_jobs

from .episode import ConstructSpec, load_instance, run_construct
from .instances import select


def family(construct: str, team: int) -> tuple[list[Episode], list[Episode]]:
    """Return (training episodes, held-out test episodes) of one construct and team size."""
    held = {raw["task_id"] for raw in select("rep240", construct, team)}

    def episodes(raws: list[dict[str, Any]]) -> list[Episode]:
        out = []
        for raw in raws:
            task, info = load_instance(raw, str(raw.get("task_id")))
            out.append((task, construct_nodes(info)))
        return out

    return (episodes([r for r in select("all", construct, team) if r["task_id"] not in held]),
            episodes(select("rep240", construct, team)))


def checkpoint_path(out: Path, construct: str, team: int, seed: int) -> Path:
    """Return where a run's checkpoint goes (its result sits beside it as .json)."""
    return Path(out) / f"learned_{construct}_team{team}_seed{seed}.pt"


def train_job(arg: tuple[str, int, int, int, Any, LogSpec | None],
              ctx: JobContext) -> JobOutput:
    """Train one team (menu PPO) on the family (a job on the job engine); return its
    checkpoint and training numbers. `arg`: construct, team size, steps, seed, a progress
    callback (local runs only) and where the training log goes (None: none)."""
    import io

    from coordbench.learn import menu_ppo

    construct, team, steps, seed, say, spec = arg
    train_eps, test_eps = family(construct, team)
    cfg = menu_ppo.MenuPPOConfig(steps=steps, seed=seed, eval_every=max(1, steps // 4))
    with opened(spec) as tlog:

        def log(row: dict[str, float]) -> None:
            if say is not None:
                say(row)
            if tlog is not None:  # the held-out evaluation's numbers as eval/<metric>
                tlog({k if k in ("step", "wall_s") or "/" in k else f"eval/{k}": v
                      for k, v in row.items()})

        net, res = menu_ppo.train(cfg, train_eps, test_eps, team, "with_close", False, log,
                                  snapshots=ctx)
    meta = {"config": res["config"], "construct": construct, "team": team,
            "train_instances": len(train_eps), "test_instances": len(test_eps)}
    buf = io.BytesIO()
    menu_ppo.save(buf, net, meta)
    training = {**meta, "train_s": res["wall_s"], "steps_per_s": res["steps_per_s"],
                "curve": res["curve"]}
    name = f"learned_{construct}_team{team}_seed{seed}"
    return JobOutput({f"{name}.pt": buf.getvalue(),
                      f"{name}.training.json": (json.dumps(training) + "\n").encode()},
                     training)


def held_out_results(checkpoint: Path, construct: str, team: int, seed: int = 0
              ) -> tuple[list[float], list[float]]:
    """Return (success, final completion) of the learned team on each held-out instance,
    each played as `constructs run --agents learned --seed SEED` plays it (the household
    episode; the training's evaluations use the same seed)."""
    from coordbench.core.trajectory import HouseholdStepEvent

    spec = ConstructSpec("decentralized", "learned", seed=seed, checkpoint=str(checkpoint))
    ok, comp = [], []
    for raw in select("rep240", construct, team):
        tr = run_construct(raw, spec, f"test/{raw['task_id']}")
        steps = tr.steps(HouseholdStepEvent)
        ok.append(float(tr.end.success))
        comp.append(steps[-1].completion if steps else 0.0)
    return ok, comp


def train_team(construct: str, team: int, out: Path, steps: int, seed: int = 0,
               log: Any = None, snapshot_every_s: float = 60.0,
               logs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Train one team (menu PPO) on the family (a job: a finished one is kept), test it
    greedily on the held-out instances through the household episode, write its checkpoint
    and result; return the result (success and completion estimates over the held-out
    instances, the curve, training time). A killed training continues from its last snapshot
    (taken at most every `snapshot_every_s` seconds); `log(row)` sees each evaluation, and
    `logs` (learn/train_log.py) writes the training's scalars under
    `out/logs/learned_<construct>_team<N>_seed<S>/` as it trains. ConfigError where the
    folder holds this team trained for another number of steps."""
    path = checkpoint_path(out, construct, team, seed)
    done = path.with_suffix(".training.json")
    if done.is_file():
        try:
            trained = json.loads(done.read_text(encoding="utf-8"))
            if not isinstance(trained, dict) or not isinstance(trained.get("config"), dict):
                raise ValueError
        except ValueError:
            raise ConfigError(f"{done} is not a training result; delete it to retrain that "
                              "team") from None
        if trained["config"].get("steps") != steps:
            raise ConfigError(f"{path} was trained for {trained.get('config', {}).get('steps')} "
                              f"steps, not {steps}; use another --out or delete it")
    job = Job(path.stem, done.name, train_job,
              (construct, team, steps, seed, log, LogSpec.of(out, path.stem, logs)))
    run_jobs(Path(out), [job], snapshot_every_s=snapshot_every_s)
    training = json.loads(done.read_text(encoding="utf-8"))
    ok, comp = held_out_results(path, construct, team, seed)
    result = {**{k: v for k, v in training.items() if k not in ("train_s", "steps_per_s",
                                                                "curve")},
              "checkpoint": str(path),
              "success": estimate(ok, "binary").as_dict(),
              "completion": estimate(comp, "unit").as_dict(),
              "train_s": training["train_s"], "steps_per_s": training["steps_per_s"],
              "curve": training["curve"]}
    write_atomic(path.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
    return result
