"""`coordbench constructs run`: planners on the coordination-construct instances."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_out_dir, check_range
from coordbench.core.limits import MAX_SEED
from coordbench.errors import ConfigError
from coordbench.suites.constructs.options import CONSTRUCT, OPTIONS

from .common import (
    emit_json,
    err,
    json_option,
    log_option,
    need_torch,
    out,
    out_option,
    seed_option,
    snapshot_option,
    steps_option,
)

app = typer.Typer(no_args_is_help=True, help="Coordination constructs D1-D4.")
TEAM_FLAG = next(o.cli for o in OPTIONS if o.name == "team")  # the family's --team


@app.command("train")
def constructs_train(
    construct: str = typer.Option(..., CONSTRUCT.cli, help="D1 | D2 | D3 | D4"),
    team: int = typer.Option(2, TEAM_FLAG, help="Team size: 2 | 3 | 4."),
    steps: int = steps_option(40_000, "Team steps of training (all environments)."),
    seed: int = seed_option("Training seed."),
    out_dir: Path = out_option(Path("runs") / "constructs-learned",
                               "Folder for the checkpoint and its result."),
    snapshot_every: float = snapshot_option("the training"),
    log: str = log_option(),
    as_json: bool = json_option(),
) -> None:
    """Train a learned construct team (menu PPO, one network shared by the agents) on one
    construct and team size, and test it on the held-out rep240 instances.

    It trains on the construct's instances of the full set outside rep240 and is tested
    greedily on rep240's, where `constructs run --subset rep240 --construct C --team N
    --agents learned --checkpoint PATH` plays it beside the other planners. --json prints
    {"success", "completion" ({"mean", "ci95", "n"}), "train_s", "steps_per_s",
    "checkpoint", "train_instances", "test_instances"}. The training's scalars go to
    OUT/logs/learned_<construct>_team<N>_seed<S>/ as it trains (--log).
    """
    from coordbench.learn.train_log import parse_log

    logs = parse_log(log)
    need_torch()
    from coordbench.learn.sweep import MAX_TRAIN_STEPS
    from coordbench.suites.constructs.learning import train_team

    CONSTRUCT.check(construct)
    if team not in (2, 3, 4):
        raise ConfigError(f"--team must be 2, 3 or 4, got {team}")
    check_range("--steps", steps, 1, MAX_TRAIN_STEPS)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--snapshot-every", snapshot_every, 0, 86_400)
    check_out_dir(out_dir)
    def say(row: dict) -> None:  # on stderr under --json: stdout keeps the one JSON line
        (err if as_json else out).print(
            f"{int(row['step']):,} steps: held-out success {row['success']:.0%}, completion "
            f"{row['completion']:.2f} ({row['wall_s']:.0f} s)", highlight=False)
    res = train_team(construct, team, out_dir, steps, seed, say, snapshot_every, logs)
    if as_json:
        emit_json({"success": res["success"], "completion": res["completion"],
                   "train_s": res["train_s"], "steps_per_s": res["steps_per_s"],
                   "checkpoint": res["checkpoint"], "train_instances": res["train_instances"],
                   "test_instances": res["test_instances"]})
        return
    out.print(f"{construct} team {team}: held-out success {res['success']['mean']:.0%} "
              f"(n={res['success']['n']}), completion {res['completion']['mean']:.2f}; "
              f"{res['train_s']:.0f} s; checkpoint {res['checkpoint']}", highlight=False)
