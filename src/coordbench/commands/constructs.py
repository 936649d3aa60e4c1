"""`coordbench constructs run`: planners on the coordination-construct instances."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_out_dir, check_range
from coordbench.errors import ConfigError

from .common import dial_option, emit_json, err, need_torch, out
from .limits import MAX_EPISODES, MAX_SEED
from .run_options import RunOptions, run_options

MAX_BUFFER_CAPACITY = 16  # a buffer never needs to hold more than an instance's items

app = typer.Typer(no_args_is_help=True, help="Coordination constructs D1-D4.")


@app.command("run")
@run_options(without=("max_reply_tokens",))
def constructs_run(
    subset: str = typer.Option("all", help="all (900 instances) | rep240"),
    instances: Path | None = typer.Option(None, help="An instance file (JSON list) instead "
                                                     "of the built-in set."),
    construct: str | None = typer.Option(None, help="D1 | D2 | D3 | D4 (default: all)."),
    team: str | None = typer.Option(None, help="2 | 3 | 4 (default: all), or who sits where "
                                               "(agent_0=llm:A,agent_1=rule: a mixed team of "
                                               "that size, one mind per seat under --protocol, "
                                               "none by default)."),
    planner: str | None = typer.Option(None, help="central | decentralized | "
                                                  "decentralized_comm (default: central; "
                                                  "decentralized with --protocol)"),
    protocol: str | None = typer.Option(
        None, help="A household protocol over one mind per agent: none | broadcast | discuss "
                   "| leader | shared_memory (rule or llm agents; planner decentralized)."),
    agents: str = typer.Option("rule", help="oracle | rule | llm | learned (with "
                                            "--checkpoint)"),
    checkpoint: Path | None = typer.Option(None, help="A learned team's checkpoint "
                                                      "(`constructs train`; agents learned)."),
    model: str | None = typer.Option(None, help="Model alias (agents=llm)."),
    observation: str = typer.Option("blind", help="image | blind"),
    order: str = typer.Option("index", help="Landing order within a step: index | reverse"),
    buffer_capacity: int | None = typer.Option(
        None, "--buffer-capacity", metavar="K",
        help="D4 buffer capacity for every instance played (>= 1; default: each instance's "
             "own, 2 in the built-in set). Part of the condition: another K is another "
             "condition."),
    on_protocol_failure: str = typer.Option(
        "end", "--on-protocol-failure",
        help="A planner reply that cannot be parsed or names no menu action: end the "
             "episode as a protocol failure (the paper's protocol) | skip (the agent idles, "
             "the episode runs on)."),
    limit: int | None = typer.Option(None, help="Play only the first K instances."),
    seed: int = typer.Option(0, help="Episode seed."),
    dial: list[str] | None = dial_option(),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Run planners on the construct instances; SR, construct score and legality.

    --json prints one object: SR, CS and legal_rate (overall and per construct), the
    termination shares {success, normal_stop, budget_exhausted, protocol_failure} and the
    failure shares {dependency, occupancy, affordance, illegal_skill} (of failed episodes;
    null when none failed), and the number of instances.
    """
    from coordbench.agents.dials import parse_dials
    from coordbench.report.constructs_report import (
        console_table,
        episodes,
        outcomes,
        summarize_trajectories,
    )
    from coordbench.report.format import estimate_json
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.suite import HEADLINE, SUITE, ConstructCondition

    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--buffer-capacity", buffer_capacity, 1, MAX_BUFFER_CAPACITY)
    opts.check(out_dir)
    # the built-in set's filters are checked even when an instance file replaces the set
    if subset not in ("all", "rep240"):
        raise ConfigError(f"--subset must be all or rep240, not {subset!r}")
    if construct is not None and construct not in ("D1", "D2", "D3", "D4"):
        raise ConfigError(f"--construct must be one of D1, D2, D3, D4, not {construct!r}")
    seats = None
    if team is not None:
        from coordbench.agents.seats import parse_team

        parsed = parse_team(team, ("llm", "rule"), "construct")
        if not isinstance(parsed, int):
            seats = parsed
            if protocol is None:
                protocol = "none"  # one mind per seat, no messages
            if any(s.kind == "llm" for s in seats):
                agents = "llm"
        team = parsed if isinstance(parsed, int) else len(parsed)  # type: ignore[assignment]
    if team is not None and team not in (2, 3, 4):
        raise ConfigError(f"--team must be 2, 3 or 4, got {team}")
    planner = planner or ("decentralized" if protocol is not None or agents == "learned"
                          else "central")
    if agents == "learned":
        need_torch()
    spec = ConstructSpec(planner, agents, observation, model, seed, order, buffer_capacity,
                         protocol, str(checkpoint) if checkpoint is not None else None,
                         on_protocol_failure, parse_dials(dial), seats)
    if spec.checkpoint is not None and instances is None:
        from coordbench.learn.menu_ppo import load_cached

        meta = load_cached(spec.checkpoint)[1]
        if (construct, team) != (meta.get("construct"), meta.get("team")):
            raise ConfigError(f"checkpoint {checkpoint} was trained on {meta.get('construct')} "
                              f"with teams of {meta.get('team')}: play it with --construct "
                              f"{meta.get('construct')} --team {meta.get('team')}")
    cond = ConstructCondition(spec, subset, construct, team, limit,
                              str(instances) if instances else None)
    cases = SUITE.cases(cond)  # a bad instance file fails here, before any work
    aliases = {model} if seats is None else {s.arg for s in seats if s.kind == "llm"}
    settings = opts.harness(aliases, seed) if agents == "llm" else None
    run = opts.play(out_dir or Path("runs") / "constructs", [(SUITE, cond)],
                    resources=settings, settings=settings,
                    labels=[f"constructs {protocol or planner} {agents}"])
    trajs = episodes(run, SUITE.condition(cond), len(cases))
    overall, per = summarize_trajectories(trajs)
    if opts.as_json:
        payload = {k: estimate_json(overall[k]) for k in HEADLINE if k in overall}
        payload["per_construct"] = {c: {k: estimate_json(d[k]) for k in HEADLINE if k in d}
                                    for c, d in per.items()}
        payload.update(outcomes(trajs))
        payload["instances"] = len(cases)
        emit_json(payload)
        return
    how = planner if protocol is None else f"{planner} under {protocol}"
    out.print(console_table(f"constructs: {how}, {agents}, {observation}", per))
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")


@app.command("train")
def constructs_train(
    construct: str = typer.Option(..., help="D1 | D2 | D3 | D4"),
    team: int = typer.Option(2, help="Team size: 2 | 3 | 4."),
    steps: int = typer.Option(40_000, help="Team steps of training (all environments)."),
    seed: int = typer.Option(0, help="Training seed."),
    out_dir: Path = typer.Option(Path("runs") / "constructs-learned", "--out",
                                 help="Folder for the checkpoint and its result."),
    snapshot_every: float = typer.Option(60.0, "--snapshot-every", help="Seconds between "
                                         "snapshots of the training (a killed run "
                                         "continues from the last one; 0: none)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train a learned construct team (menu PPO, one network shared by the agents) on one
    construct and team size, and test it on the held-out rep240 instances.

    It trains on the construct's instances of the full set outside rep240 and is tested
    greedily on rep240's, where `constructs run --subset rep240 --construct C --team N
    --agents learned --checkpoint PATH` plays it beside the other planners. --json prints
    {"success", "completion" ({"mean", "ci95", "n"}), "train_s", "steps_per_s",
    "checkpoint", "train_instances", "test_instances"}.
    """
    need_torch()
    from coordbench.learn.sweep import MAX_TRAIN_STEPS
    from coordbench.suites.constructs.learning import train_team

    if construct not in ("D1", "D2", "D3", "D4"):
        raise ConfigError(f"--construct must be one of D1, D2, D3, D4, not {construct!r}")
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
    res = train_team(construct, team, out_dir, steps, seed, say, snapshot_every)
    if as_json:
        emit_json({"success": res["success"], "completion": res["completion"],
                   "train_s": res["train_s"], "steps_per_s": res["steps_per_s"],
                   "checkpoint": res["checkpoint"], "train_instances": res["train_instances"],
                   "test_instances": res["test_instances"]})
        return
    out.print(f"{construct} team {team}: held-out success {res['success']['mean']:.0%} "
              f"(n={res['success']['n']}), completion {res['completion']['mean']:.2f}; "
              f"{res['train_s']:.0f} s; checkpoint {res['checkpoint']}", highlight=False)
