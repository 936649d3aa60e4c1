"""A toy family, registered by one `Family` record in a test and nowhere else: two agents
share a pile of tokens and take one each per step (agent 1 skips every third step). Each
piece the record names (suite, plan, API condition, report section, figures, replay,
profile, command group, options, seats, run summary) is here, so the test proves a family
needs no edit elsewhere: its run, crossplay and play commands come from the record.

Who sits: `scripted:greedy` takes a token every step, `rule` skips every third step, and
`human` asks the person at the play page (take or skip)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import typer

from coordbench.agents.team.seats import Seat, team_label
from coordbench.core.rundir import RunDir
from coordbench.core.stats import summarize
from coordbench.core.trajectory import AgentSpec, MessageEvent, Trajectory
from coordbench.report.figures import metric_bars
from coordbench.report.format import estimate_json
from coordbench.report.section import Section
from coordbench.runner import Case, PlayContext, Recorder, condition_values
from coordbench.runner.family import Family
from coordbench.runner.options import Option
from coordbench.runner.played import PlayedBase, RunPlan, Seats

KINDS = {"success": "binary", "steps": "mean", "share_0": "unit"}


@dataclass(frozen=True)
class ToySpec:
    """`tokens` tokens in the pile; `cap` team steps before the episode is truncated."""

    tokens: int = 7
    cap: int = 10
    # who sits in each seat (None: agent 0 greedy, agent 1 rule)
    seats: tuple[Seat, ...] | None = None

    def __post_init__(self) -> None:
        if self.seats is not None:
            object.__setattr__(self, "seats", tuple(
                s if isinstance(s, Seat) else Seat(**s) for s in self.seats))


class ToySuite:
    name = "toy"
    headline = ("success", "steps")

    def condition(self, spec: ToySpec) -> str:
        team = "" if spec.seats is None else "_" + team_label(spec.seats).replace(":", "-")
        return f"toy_t{spec.tokens}_c{spec.cap}{team}"

    def manifest(self, spec: ToySpec) -> dict[str, Any]:
        return asdict(spec)

    def cases(self, spec: ToySpec, limit: int | None = None) -> list[Case]:
        return [Case(f"ep{k:03d}", k) for k in range(4 if limit is None else limit)]

    def unit_size(self, spec: ToySpec) -> int:
        return 2

    def play(self, spec: ToySpec, cases: list[Case], ctx: PlayContext):
        return ((c, asyncio.run(episode(spec, c, ctx))) for c in cases)

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        takes = [e for e in trajectory.events if isinstance(e, MessageEvent)]
        end = trajectory.end
        return {"success": float(bool(end and end.success)), "steps": float(end.t),
                "share_0": sum(e.sender == 0 for e in takes) / len(takes) if takes else None}


async def takes(seat: Seat, agent: int, t: int, pile: int, episode_id: str,
                ctx: PlayContext) -> bool:
    """Return whether the seat's agent takes a token at step `t`."""
    if seat.kind == "human":
        from coordbench.agents.team.human import seat_session

        session = seat_session(ctx.resources, agent, "toy")
        answer, _ = await session.ask(episode_id, t, "act", {"text": f"{pile} tokens left"},
                                      [{"id": 0, "label": "take"}, {"id": 1, "label": "skip"}])
        return answer == 0
    return not (seat.kind == "rule" and t % 3 == 2)


async def episode(spec: ToySpec, case: Case, ctx: PlayContext) -> Trajectory:
    """Play one episode: the pile starts at `tokens` + the case number."""
    pile = spec.tokens + int(case.data)
    seats = spec.seats or (Seat("scripted", "greedy"), Seat("rule"))
    episode_id = f"{SUITE.condition(spec)}/{case.key}"
    rec = Recorder(suite="toy", episode_id=episode_id,
                   task_id=f"pile{pile}", seed=int(case.data),
                   team=[AgentSpec(id=f"agent_{i}", driver="scripted" if spec.seats is None
                                   else s.driver) for i, s in enumerate(seats)],
                   params=asdict(spec), limits=ctx.limits)
    t = 0
    with rec:
        while pile > 0 and t < spec.cap:
            rec.t = t
            for agent in (0, 1):
                if pile > 0 and await takes(seats[agent], agent, t, pile, episode_id, ctx):
                    pile -= 1
                    rec.emit(MessageEvent(t=t, phase="broadcast", sender=agent,
                                          content=f"take ({pile} left)"))
            t += 1
    return rec.finish(t, success=pile == 0, detail=None if pile == 0 else "cap reached")


SUITE = ToySuite()


def plan_items(section: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """The default benchmark's toy section: one condition per pile size."""
    items = [(SUITE, ToySpec(n), section["episodes"]) for n in section["tokens"]]
    return items, [f"toy {n}" for n in section["tokens"]]


def api_condition(options: dict[str, Any]) -> tuple[ToySuite, ToySpec, int | None]:
    limit = options.pop("episodes", None)
    return SUITE, ToySpec(**options), limit


def section(run: RunDir, conds: list[str]) -> Section:
    """The toy family's part of a report."""
    out = Section("Toy tokens")
    lines = ["## Toy tokens", "", "| condition | success | steps |", "|---|---|---|"]
    for cond in conds:
        values = condition_values(run, cond, SUITE.metrics)
        if not values["success"]:
            continue
        s = summarize(values, KINDS)
        out.results[cond] = {"suite": "toy", "spec": run.conditions[cond],
                             "metrics": {k: estimate_json(e) for k, e in s.items()}}
        lines.append(f"| {cond} | {s['success'].mean:.3f} | {s['steps'].mean:.2f} |")
    out.markdown = "\n".join(lines) + "\n"
    return out


def figures(run: RunDir, conds: list[str], entries: dict, data: Any) -> list:
    return [metric_bars(entries, ("success",), "Toy tokens: success per condition.")]


def picture(run: RunDir, condition: str, traj: Trajectory) -> dict[str, Any]:
    """Replay the pile: its size after every step."""
    pile = int(traj.header.task_id[4:])
    states = [{"pile": pile}]
    for t in range(traj.end.t):
        pile -= sum(1 for e in traj.events if isinstance(e, MessageEvent) and e.t == t)
        states.append({"pile": pile})
    return {"kind": "toy", "static": None, "states": states,
            "replay": {"available": True, "ok": pile == 0 or not traj.end.success,
                       "checked": len(states)}}


def profile(traj: Trajectory) -> dict[str, float | None]:
    """Division of labour only: the share of tokens the busier agent took."""
    share = SUITE.metrics(traj)["share_0"]
    return {"division_of_labour": None if share is None else max(share, 1 - share)}


app = typer.Typer(no_args_is_help=True, help="Toy tokens.")


@app.command("count")
def count(tokens: int = 7) -> None:
    """Print the number of steps two agents need for `tokens` tokens."""
    print(asyncio.run(episode(ToySpec(tokens), Case("ep000", 0), PlayContext(""))).end.t)


OPTIONS = (
    Option("tokens", int, 7, "Tokens in the pile (+ the case number).", low=1, high=1000),
    Option("cap", int, 10, "Team steps before an episode is truncated.", low=1, high=1000),
    Option("episodes", int, 4, "Episodes (cases 0..N-1).", low=1, high=100,
           defaults={"play": 1}),
    Option("team", str, None, "Who sits in the other seat (play).", commands=("play",)),
)
SEATS = Seats(("scripted", "rule", "human"), "toy", "rule")


class ToyPlayed(PlayedBase):
    """The toy's options: a pile, a cap, a number of episodes."""

    options = OPTIONS
    out_name = "toy"
    play_label = "toy"
    run_help = "Play the toy pile with agent 0 greedy and agent 1 resting."

    def run(self, values: dict[str, Any]) -> RunPlan:
        spec = ToySpec(values["tokens"], values["cap"])
        return RunPlan([(SUITE, spec, values["episodes"])], [f"toy {spec.tokens}"],
                       values["out"] or Path("runs") / "toy")

    def team_size(self, values: dict[str, Any], command: str) -> int:
        return 2

    def cell(self, values: dict[str, Any], seats: Sequence[Seat]) -> tuple[Any, Any]:
        return SUITE, ToySpec(values["tokens"], values["cap"], tuple(seats))

    def episodes(self, values: dict[str, Any]) -> int | None:
        return values["episodes"]



PLAYED = ToyPlayed()


def run_summary(run: RunDir, plan: RunPlan, values: dict[str, Any]) -> tuple[dict, list]:
    """The toy run command's --json object and its one line."""
    spec = plan.items[0][1]
    s = summarize(condition_values(run, SUITE.condition(spec), SUITE.metrics), KINDS)
    return ({k: estimate_json(e) for k, e in s.items()},
            [f"toy: success {s['success'].mean:.2f}, steps {s['steps'].mean:.2f}"])


FAMILY = Family(
    "toy", "Toy tokens", suite="tests.toy_family:SUITE", plan="tests.toy_family:plan_items",
    default_plan={"tokens": [5, 8], "episodes": 3},
    condition="tests.toy_family:api_condition", report="tests.toy_family:section",
    figures="tests.toy_family:figures", replay="tests.toy_family:picture",
    profile="tests.toy_family:profile", commands="tests.toy_family:app", command="toy",
    options="tests.toy_family:PLAYED", seats="tests.toy_family:SEATS",
    summary="tests.toy_family:run_summary")
