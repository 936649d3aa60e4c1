"""`coordbench play FAMILY --seat SEAT [--team ...]`: a person plays one seat of a team.

The command serves the play page on 127.0.0.1 (`play/server.py`), prints its URL (with the
session's token) on one line, and plays the episodes into an ordinary run directory with the
seat's driver `human`; the team waits for the person (`--decision-timeout S` to stop
waiting). A closed page, a timeout or a stopped server leaves the episode errored (never a
result) and ends the session; rerunning the command resumes it.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from coordbench.errors import ConfigError

from .common import out
from .limits import MAX_EPISODES, MAX_SEED, MAX_STEPS
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="A person in a seat: play one seat of an "
                                             "episode in the browser.")

SEAT_HELP = "The seat the person plays: agent_0, agent_1, ..."
TEAM_HELP = ("Who sits in the other seats, as --team elsewhere (the person's seat is human; "
             "default: rule minds), e.g. agent_0=human,agent_1=llm:A.")
PORT_HELP = "Port on 127.0.0.1 (0: any free port)."
TIMEOUT_HELP = "Seconds the team waits for a decision (default: no limit)."
GONE_HELP = "Seconds without a word from the page before it counts as closed."


def seats_for(seat: str, team: str | None, n: int, allowed: tuple[str, ...], family: str,
              default: Any) -> tuple[Any, ...]:
    """Return the team's seats: `team`'s (its person's seat `human` or left to us), or
    `default` everywhere but the person's seat; ConfigError names a seat that is not in the
    team or a team spec that gives the person's seat to another agent."""
    from coordbench.agents.seats import Seat, parse_team

    m = re.fullmatch(r"agent_([0-9]{1,4})", seat.strip())
    if not m:
        raise ConfigError(f"--seat {seat!r}: write agent_K")
    k = int(m.group(1))
    if team is None:
        seats = [default] * n
    else:
        parsed = parse_team(team, (*allowed, "human"), family)
        if isinstance(parsed, int):
            if parsed != n:
                raise ConfigError(f"--team {parsed}: this team has {n} seats")
            seats = [default] * n
        else:
            seats = list(parsed)
            if len(seats) != n:
                raise ConfigError(f"--team names {len(seats)} seats; this team has {n}")
    if k >= n:
        raise ConfigError(f"--seat agent_{k} is not in the team (agent_0 .. agent_{n - 1})")
    if team is not None and not isinstance(parsed, int) and seats[k].kind != "human":
        raise ConfigError(f"--seat agent_{k} is the person's, but --team gives it to "
                          f"{seats[k].driver}")
    others = [i for i, s in enumerate(seats) if s.kind == "human" and i != k]
    if others:
        raise ConfigError(f"--team seats a person at agent_{others[0]} too: one person, "
                          "one seat (--seat)")
    seats[k] = Seat("human")
    return tuple(seats)


def serve_and_play(k: int, port: int, decision_timeout: float | None, gone_after: float,
                   play: Callable[[Any], Any]) -> Any:
    """Serve the page for seat `k`, print its URL, run `play(session)`, stop the server;
    return what `play` returned."""
    from coordbench.play.server import make_server, url_of
    from coordbench.play.session import SeatSession

    if decision_timeout is not None and not decision_timeout > 0:
        raise ConfigError(f"--decision-timeout must be > 0 seconds, got {decision_timeout}")
    if not gone_after > 0:
        raise ConfigError(f"--page-timeout must be > 0 seconds, got {gone_after}")
    session = SeatSession(k, decision_timeout, gone_after)
    server = make_server(session, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(url_of(server, session), flush=True)  # noqa: T201 - the one line a person opens
    try:
        return play(session)
    finally:
        session.stop("the session is over")
        server.shutdown()
        server.server_close()


def _seat_index(seat: str) -> int:
    return int(seat.strip().removeprefix("agent_"))


def _one_at_a_time(opts: RunOptions) -> RunOptions:
    """Return the options with one episode in flight (a person plays one at a time), in
    this process (the page talks to it); ConfigError for another executor."""
    if opts.executor != "local" or opts.workers != 1:
        raise ConfigError("play runs its episodes in this process, where the page reaches "
                          "them: drop --executor and --workers")
    return dataclasses.replace(opts, in_flight=1)


def _team_size(team: str, low: int, high: int) -> tuple[int, str | None]:
    """Return (the team's size, the team spec or None for a plain size); ConfigError for a
    size out of [low, high]."""
    from coordbench.core.files import check_range

    plain = re.fullmatch(r"\s*[0-9]{1,3}\s*", team) is not None
    n = int(team) if plain else len(team.split(","))
    check_range("--team", n, low, high)
    return n, None if plain else team


@app.command("stat")
@run_options(without=("as_json",))
def play_stat(
    seat: str = typer.Option(..., help=SEAT_HELP),
    config: str = typer.Option("3A-6T-5x3", help="STAT config name."),
    team: str | None = typer.Option(None, help=TEAM_HELP + " STAT seats also take "
                                    "scripted:NAME and learned:CHECKPOINT."),
    episodes: int = typer.Option(1, help="Episodes in the session (layouts 0..N-1)."),
    layouts: str = typer.Option("paper", help="paper | uniform"),
    seed: int = typer.Option(0, help="Policy seed."),
    episode_limit: int = typer.Option(700, help="Truncate episodes at this many steps."),
    protocol: str = typer.Option("broadcast", help="none | broadcast | leader | "
                                                   "shared_memory"),
    port: int = typer.Option(0, help=PORT_HELP),
    decision_timeout: float | None = typer.Option(None, "--decision-timeout",
                                                  help=TIMEOUT_HELP),
    page_timeout: float = typer.Option(10.0, "--page-timeout", help=GONE_HELP),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Play one seat of STAT episodes: the map, and the tasks your seat may pick."""
    from coordbench.agents.seats import Seat
    from coordbench.core.files import check_range
    from coordbench.envs.stat.config import get_config
    from coordbench.runner import ModelResources
    from coordbench.suites.stat.suite import LLM, RULE, SEAT_KINDS, SUITE, StatEvalSpec

    check_range("--episodes", episodes, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--episode-limit", episode_limit, 1, MAX_STEPS)
    check_range("--port", port, 0, 65535)
    opts.check(out_dir)
    seats = seats_for(seat, team, get_config(config).agents, SEAT_KINDS, "STAT", Seat(RULE))
    aliases = {s.arg for s in seats if s.kind == "llm"}
    spec = StatEvalSpec(config, LLM if aliases else RULE, layouts, seed, episode_limit,
                        protocol=protocol, seats=seats)
    settings = opts.harness(aliases, seed) if aliases else None
    path = out_dir or Path("runs") / "play" / f"stat-{config}"

    _session(opts, (seat, port, decision_timeout, page_timeout), path, (SUITE, spec, episodes),
             settings, lambda s: ModelResources(settings, opts.max_reply_tokens, seat=s),
             f"play {config}", spec.condition)


@app.command("mecobench")
@run_options(without=("as_json",))
def play_mecobench(
    seat: str = typer.Option(..., help=SEAT_HELP),
    team: str = typer.Option("2", help="Team size, or " + TEAM_HELP),
    tasks: Path | None = typer.Option(None, help="A MECoBench task file (JSON)."),
    suite: str | None = typer.Option(None, help="A built-in instance set, e.g. v1."),
    structure: str = typer.Option("parallel", help="parallel | sequential"),
    protocol: str = typer.Option("broadcast", help="none|broadcast|discuss|leader|"
                                                   "shared_memory"),
    prior: str = typer.Option("full", help="full|no_appearance|no_location|none|noisy"),
    limit: int | None = typer.Option(1, help="Cases in the session (the first K)."),
    seed: int = typer.Option(0, help="Base seed; case k uses seed + k."),
    max_steps: int | None = typer.Option(None, help="Cap team steps."),
    images: bool = typer.Option(False, "--images", help="Render your seat's views."),
    port: int = typer.Option(0, help=PORT_HELP),
    decision_timeout: float | None = typer.Option(None, "--decision-timeout",
                                                  help=TIMEOUT_HELP),
    page_timeout: float = typer.Option(10.0, "--page-timeout", help=GONE_HELP),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Play one seat of household episodes: the observation, the teammates' messages, a
    message box, and your legal actions as buttons."""
    from coordbench.agents.seats import Seat
    from coordbench.core.files import check_range
    from coordbench.suites.mecobench.episode import SEAT_KINDS, HouseholdSpec
    from coordbench.suites.mecobench.instances import check_playable
    from coordbench.suites.mecobench.suite import SUITE, MecobenchResources, mecobench_condition

    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--max-steps", max_steps, 1, MAX_STEPS)
    check_range("--port", port, 0, 65535)
    opts.check(out_dir)
    n, spec_text = _team_size(team, 1, 5)
    seats = seats_for(seat, spec_text, n, SEAT_KINDS, "MECoBench", Seat("rule"))
    aliases = {s.arg for s in seats if s.kind == "llm"}
    spec = HouseholdSpec(structure, n, protocol, "llm" if aliases else "rule", prior, seed,
                         seats=seats)
    cond = mecobench_condition(str(tasks) if tasks else None, suite, spec)
    cases = SUITE.cases(cond, limit)
    check_playable([c.data[1] for c in cases], n, prior)
    settings = opts.harness(aliases, seed) if aliases else None
    path = out_dir or Path("runs") / "play" / f"mecobench-{structure}"

    _session(opts, (seat, port, decision_timeout, page_timeout), path, (SUITE, cond, limit),
             settings, lambda s: MecobenchResources(settings, opts.max_reply_tokens, seat=s,
                                                    images=images, max_steps=max_steps),
             f"play {structure}", SUITE.condition(cond))


@app.command("constructs")
@run_options(without=("as_json", "max_reply_tokens"))
def play_constructs(
    seat: str = typer.Option(..., help=SEAT_HELP),
    team: str = typer.Option("2", help="Team size (2 | 3 | 4), or " + TEAM_HELP),
    subset: str = typer.Option("rep240", help="all | rep240"),
    construct: str | None = typer.Option(None, help="D1 | D2 | D3 | D4 (default: all)."),
    protocol: str = typer.Option("broadcast", help="none | broadcast | discuss | leader | "
                                                   "shared_memory"),
    limit: int | None = typer.Option(1, help="Instances in the session (the first K)."),
    seed: int = typer.Option(0, help="Episode seed."),
    port: int = typer.Option(0, help=PORT_HELP),
    decision_timeout: float | None = typer.Option(None, "--decision-timeout",
                                                  help=TIMEOUT_HELP),
    page_timeout: float = typer.Option(10.0, "--page-timeout", help=GONE_HELP),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Play one seat of construct instances: the instance, the teammates' messages, a
    message box, and the menu entries your seat may take."""
    from coordbench.agents.seats import Seat
    from coordbench.core.files import check_range
    from coordbench.runner import ModelResources
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.suite import SUITE, ConstructCondition

    check_range("--limit", limit, 1, MAX_EPISODES)
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--port", port, 0, 65535)
    opts.check(out_dir)
    n, spec_text = _team_size(team, 2, 4)
    seats = seats_for(seat, spec_text, n, ("llm", "rule"), "construct", Seat("rule"))
    aliases = {s.arg for s in seats if s.kind == "llm"}
    spec = ConstructSpec("decentralized", "llm" if aliases else "rule", seed=seed,
                         protocol=protocol, seats=seats)
    cond = ConstructCondition(spec, subset, construct, n, limit)
    SUITE.cases(cond)
    settings = opts.harness(aliases, seed) if aliases else None
    path = out_dir or Path("runs") / "play" / f"constructs-{subset}"

    _session(opts, (seat, port, decision_timeout, page_timeout), path, (SUITE, cond),
             settings, lambda s: ModelResources(settings, None, seat=s), "play constructs",
             SUITE.condition(cond))


@app.command("physical")
@run_options(without=("as_json",))
def play_physical(
    seat: str = typer.Option(..., help=SEAT_HELP + " (agent_K is robotK)"),
    task: str = typer.Option("Handover", help="A physical task with 2+ robots."),
    team: str | None = typer.Option(None, help="Who drives the other robots: "
                                    "agent_0=human,agent_1=llm:A (default: the skill "
                                    "controller's own suggestion, scripted:expert)."),
    rollouts: int = typer.Option(1, help="Episodes in the session (seeds 1..N)."),
    port: int = typer.Option(0, help=PORT_HELP),
    decision_timeout: float | None = typer.Option(None, "--decision-timeout",
                                                  help=TIMEOUT_HELP),
    page_timeout: float = typer.Option(10.0, "--page-timeout", help=GONE_HELP),
    out_dir: Path | None = typer.Option(None, "--out", help="Run directory (resumable)."),
    opts: RunOptions = RunOptions(),
) -> None:
    """Play one robot of a physical task through its skill library (move to, grasp, hand
    over, wait for the partner...): each skill then runs as a model's choice would."""
    from coordbench.agents.seats import Seat
    from coordbench.core.files import check_range
    from coordbench.envs.physical.tasks import get_task
    from coordbench.runner import ModelResources
    from coordbench.suites.physical.suite import LLM, SUITE, PhysicalSpec

    check_range("--rollouts", rollouts, 1, MAX_EPISODES)
    check_range("--port", port, 0, 65535)
    opts.check(out_dir)
    n = get_task(task).n_robots
    seats = seats_for(seat, team, n, ("llm", "scripted"), "physical",
                      Seat("scripted", "expert"))
    spec = PhysicalSpec(task, LLM, seats=seats)
    aliases = {s.arg for s in seats if s.kind == "llm"}
    settings = opts.harness(aliases) if aliases else None
    path = out_dir or Path("runs") / "play" / f"physical-{task}"

    _session(opts, (seat, port, decision_timeout, page_timeout), path, (SUITE, spec, rollouts),
             settings, lambda s: ModelResources(settings, opts.max_reply_tokens, seat=s),
             f"play {task}", SUITE.condition(spec))


def _session(opts: RunOptions, page: tuple[str, int, float | None, float], path: Path,
             item: tuple, settings: Any, resources: Callable[[Any], Any], label: str,
             condition: str) -> None:
    """Serve the page for `page`'s (seat, port, decision timeout, page timeout), play `item`
    ((suite, spec[, episodes])) with the person's session in `resources(session)`, one
    episode at a time in this process, and say where the episodes are."""
    local = _one_at_a_time(opts)
    seat, port, decision_timeout, page_timeout = page

    def play(session: Any) -> Any:
        return local.play(path, [item], settings=settings, quiet=True,
                          resources=resources(session), labels=[label])

    _said(serve_and_play(_seat_index(seat), port, decision_timeout, page_timeout, play),
          condition)


def _said(run: Any, condition: str) -> None:
    """Print where the session's episodes are."""
    done = len(run.episode_keys(condition))
    out.print(f"{done} episode{'s' * (done != 1)} played; run directory: {run.path}  "
              f"(report: {run.path / 'report.html'})", highlight=False, soft_wrap=True)
