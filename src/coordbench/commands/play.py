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

from coordbench.agents.team.seats import model_aliases
from coordbench.errors import ConfigError
from coordbench.runner.options import for_command

from .common import out, port_option
from .run_options import RunOptions, run_options

app = typer.Typer(no_args_is_help=True, help="A person in a seat: play one seat of an "
                                             "episode in the browser.")

SEAT_HELP = "The seat the person plays: agent_0, agent_1, ..."
PORT_HELP = "Port on 127.0.0.1 (0: any free port)."
TIMEOUT_HELP = "Seconds the team waits for a decision (default: no limit)."
GONE_HELP = "Seconds without a word from the page before it counts as closed."


def seats_for(seat: str, team: str | None, n: int, allowed: tuple[str, ...], family: str,
              default: Any) -> tuple[Any, ...]:
    """Return the team's seats: `team`'s (its person's seat `human` or left to us), or
    `default` everywhere but the person's seat; ConfigError names a seat that is not in the
    team or a team spec that gives the person's seat to another agent."""
    from coordbench.agents.team.seats import Seat, parse_team

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


def with_person(team: str | None, seat: str) -> str | None:
    """Return `team` with the person's seat added as `human` where a team spec leaves it
    out (`--seat agent_0 --team agent_1=...,agent_2=...`)."""
    seat = seat.strip()
    if (team is None or "=" not in team or not re.fullmatch(r"agent_[0-9]{1,4}", seat)
            or re.search(rf"(^|,)\s*{seat}\s*=", team)):
        return team
    return f"{team},{seat}=human"


def serve_and_play(k: int, port: int, decision_timeout: float | None, gone_after: float,
                   play_session: Callable[[Any], Any]) -> Any:
    """Serve the page for seat `k`, print its URL, run `play_session(session)`, stop the server;
    return what `play_session` returned."""
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
        return play_session(session)
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


def play_command(family: Any) -> Callable[..., Any]:
    """Return `coordbench play <family>`: the family's options for what is played, the
    person's seat and the page's options."""
    from .option_params import opts_param, out_param, param, with_options, without

    played = family.get("options")
    seats_of = family.get("seats")

    def body(values: dict[str, Any], seat: str, port: int, decision_timeout: float | None,
             page_timeout: float, out_dir: Path | None, opts: RunOptions) -> None:
        from coordbench.agents.team.seats import parse_seat
        from coordbench.core.files import check_range

        check_range("--port", port, 0, 65535)
        opts.check(out_dir)
        if "team" in values:
            values = dict(values, team=with_person(values["team"], seat))
        n = played.team_size(values, "play")
        default = parse_seat(seats_of.others, seats_of.kinds, seats_of.label, "play")
        seats = seats_for(seat, values.get("team"), n, seats_of.partner_kinds, seats_of.label,
                          default)
        suite, spec = played.cell(values, seats)
        played.check_team(values, suite, spec, n)
        aliases = model_aliases(seats)
        settings = opts.harness(aliases, played.seed(values)) if aliases else None
        limit = played.episodes(values)
        item = (suite, spec) if limit is None else (suite, spec, limit)
        _session(opts, (seat, port, decision_timeout, page_timeout),
                 out_dir or played.out(values, "play"), item, settings,
                 lambda s: played.resources(values, settings, opts.max_reply_tokens, s),
                 played.label(values, "play"), suite.condition(spec))

    own = [param("seat", str, typer.Option(..., "--seat", help=SEAT_HELP)),
           param("port", int, port_option(0, PORT_HELP)),
           param("decision_timeout", float | None,
                  typer.Option(None, "--decision-timeout", help=TIMEOUT_HELP)),
           param("page_timeout", float,
                  typer.Option(10.0, "--page-timeout", help=GONE_HELP)),
           out_param(), opts_param()]
    command = with_options(for_command(played.options, "play"), "play", own, body,
                           f"play_{family.name}",
                           f"Play one seat of {family.title or family.name} episodes in the "
                           "browser: what your seat sees, the teammates' messages and your "
                           "legal actions.")
    return run_options(without=without(played, "as_json"))(command)


def _session(opts: RunOptions, page: tuple[str, int, float | None, float], path: Path,
             item: tuple, settings: Any, resources: Callable[[Any], Any], label: str,
             condition: str) -> None:
    """Serve the page for `page`'s (seat, port, decision timeout, page timeout), play `item`
    ((suite, spec[, episodes])) with the person's session in `resources(session)`, one
    episode at a time in this process, and say where the episodes are."""
    local = _one_at_a_time(opts)
    seat, port, decision_timeout, page_timeout = page

    def play_session(session: Any) -> Any:
        def saved(run: Any, cond: str, key: str) -> None:
            session.episode_over(outcome(item[0], run, cond, key))

        return local.play_plan(path, [item], settings=settings, quiet=True,
                               resources=resources(session), labels=[label], on_saved=saved)

    _said(serve_and_play(_seat_index(seat), port, decision_timeout, page_timeout, play_session),
          condition)


VIEWER_PORT = 8765  # `coordbench view`'s default port: the page links the episode there


def outcome(suite: Any, run: Any, cond: str, key: str) -> dict[str, Any]:
    """Return how a saved episode ended, as the play page shows it: success, termination,
    steps, the family's headline metrics and where to open it in the viewer."""
    traj = run.load_episode(cond, key)
    end = traj.end
    metrics = suite.metrics(traj)
    shown = {k: metrics.get(k) for k in suite.headline if k in metrics}
    return {"episode": traj.header.episode_id, "success": bool(end and end.success),
            "termination": end.termination if end else None, "steps": end.t if end else None,
            "metrics": shown,
            "viewer": {"command": f"coordbench view {run.path}",
                       "url": f"http://127.0.0.1:{VIEWER_PORT}/#run={run.path.name}"
                              f"&cond={cond}&key={key}"}}


def _said(run: Any, condition: str) -> None:
    """Print where the session's episodes are."""
    done = len(run.episode_keys(condition))
    out.print(f"{done} episode{'s' * (done != 1)} played; run directory: {run.path}  "
              f"(report: {run.path / 'report.html'})", highlight=False, soft_wrap=True)
