"""`coordbench mecobench run`: household teams on MECoBench cases."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.core.files import check_range

from .common import dial_option, emit_json, err, out, positive
from .limits import MAX_EPISODES, MAX_SEED, MAX_STEPS
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="MECoBench: household teams.")


@app.command("run")
@run_options()
def mecobench_run(
    tasks: Path | None = typer.Option(None, help="A MECoBench task file (JSON)."),
    suite: str | None = typer.Option(None, help="A built-in instance set, e.g. v1."),
    structure: str = typer.Option("parallel", help="parallel | sequential"),
    team: str = typer.Option("2", help="Team size (sequential: 2), or who sits where: "
                                       "agent_0=llm:A,agent_1=rule (a mixed team; seats are "
                                       "llm:ALIAS or rule)."),
    protocol: str = typer.Option("none", help="none|broadcast|discuss|leader|leader_vision|"
                                              "shared_memory"),
    agents: str = typer.Option("rule", help="oracle | rule | llm"),
    model: str | None = typer.Option(None, help="Model alias of every agent (agents=llm)."),
    leader_model: str | None = typer.Option(None, help="Model alias of the leader (agent 0)."),
    max_steps: int | None = typer.Option(None, help="Cap team steps (short smoke runs)."),
    prior: str = typer.Option("full", help="full|no_appearance|no_location|none|noisy"),
    conflict_set: str = typer.Option("paper", help="Same-step contention: paper (grab, open) "
                                                   "| with_close (grab, open, close)."),
    limit: int | None = typer.Option(None, help="Play only the first K cases."),
    seed: int = typer.Option(0, help="Base seed; case k uses seed + k."),
    images: bool = typer.Option(False, "--images", help="Render and store agents' views."),
    dial: list[str] | None = dial_option(),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Run a household team on MECoBench cases; SR, CR, AUC, DOL, CAR, HFR, spatial errors."""
    from rich.table import Table

    from coordbench.core.stats import summarize
    from coordbench.metrics.household import KINDS
    from coordbench.report.format import estimate_json, fmt
    from coordbench.suites.mecobench.episode import HouseholdSpec
    from coordbench.suites.mecobench.instances import check_playable
    from coordbench.suites.mecobench.suite import (
        HEADLINE,
        SUITE,
        MecobenchResources,
        condition_values_of,
        mecobench_condition,
    )

    positive(limit=limit)
    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--max-steps", max_steps, 1, MAX_STEPS)
    opts.check(out_dir)
    from coordbench.agents.dials import parse_dials
    from coordbench.agents.seats import parse_team

    parsed = parse_team(team, ("llm", "rule"), "MECoBench")
    seats = None if isinstance(parsed, int) else parsed
    size = parsed if isinstance(parsed, int) else len(parsed)
    if seats is not None and agents == "rule" and any(s.kind == "llm" for s in seats):
        agents = "llm"  # a team with a model seat is model-driven
    spec = HouseholdSpec(structure, size, protocol, agents, prior, seed, model, leader_model,
                         conflict_set, parse_dials(dial), seats)
    cond = mecobench_condition(str(tasks) if tasks else None, suite, spec)
    cases = SUITE.cases(cond, limit)
    check_playable([c.data[1] for c in cases], size, prior)
    if tasks is None and suite is None and not opts.as_json:
        # the examples are a smoke test, not the benchmark: say so before anything runs
        err.print(f"note: no --tasks or --suite given, so this plays the {len(cases)} bundled "
                  f"example {structure} task{'s' * (len(cases) != 1)}; --suite v1 plays "
                  "the MECoBench instance set", highlight=False, soft_wrap=True)
    settings = opts.harness({a for a in (spec.alias(i) for i in range(size)) if a}, seed) \
        if agents == "llm" else None
    run = opts.play(out_dir or Path("runs") / "mecobench", [(SUITE, cond)], limit=limit,
                    resources=MecobenchResources(settings, opts.max_reply_tokens,
                                                 images=images, max_steps=max_steps),
                    labels=[f"{structure} n={size} {protocol} "
                            f"{model or (team if seats else agents)}"],
                    settings=settings)
    n_cases = len(SUITE.cases(cond, limit))
    summary = summarize(condition_values_of(run, SUITE.condition(cond), n_cases), KINDS)
    if opts.as_json:
        emit_json({"cases": n_cases, **{k: estimate_json(e) for k, e in summary.items()}})
        return
    if not summary:  # every episode errored (provider failures, said as the command ends)
        out.print(f"no finished episode to summarize; run directory: {run.path}")
        return
    table = Table(title=f"MECoBench {structure}, team {team}, {protocol}, "
                        f"{agents if seats is None else 'mixed'}, {prior}")
    table.add_column("metric")
    table.add_column("mean ± 95% CI", justify="right")
    table.add_column("n", justify="right")
    for k in (*HEADLINE, "tokens_per_step", "protocol_failures", "duplicate_grabs",
              "wrong_class_grabs", "hallucinated_completion", "steps"):
        table.add_row(k, fmt(summary[k]), str(summary[k].n))
    out.print(table)
    out.print(f"run directory: {run.path}  (report: {run.path / 'report.html'})")
