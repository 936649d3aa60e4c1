"""A toy family, registered by one `Family` record in a test and nowhere else: two agents
share a pile of tokens and take one each per step (agent 1 skips every third step). Each
piece the record names (suite, plan, API condition, report section, figures, replay,
profile, command group) is here, so the test proves a family needs no edit elsewhere."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any

import typer

from coordbench.core.rundir import RunDir
from coordbench.core.stats import summarize
from coordbench.core.trajectory import AgentSpec, MessageEvent, Trajectory
from coordbench.report.figures import metric_bars
from coordbench.report.format import estimate_json
from coordbench.report.section import Section
from coordbench.runner import Case, PlayContext, Recorder, condition_values
from coordbench.runner.family import Family

KINDS = {"success": "binary", "steps": "mean", "share_0": "unit"}


@dataclass(frozen=True)
class ToySpec:
    """`tokens` tokens in the pile; `cap` team steps before the episode is truncated."""

    tokens: int = 7
    cap: int = 10


class ToySuite:
    name = "toy"
    headline = ("success", "steps")

    def condition(self, spec: ToySpec) -> str:
        return f"toy_t{spec.tokens}_c{spec.cap}"

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


async def episode(spec: ToySpec, case: Case, ctx: PlayContext) -> Trajectory:
    """Play one episode: the pile starts at `tokens` + the case number."""
    pile = spec.tokens + int(case.data)
    rec = Recorder(suite="toy", episode_id=f"{SUITE.condition(spec)}/{case.key}",
                   task_id=f"pile{pile}", seed=int(case.data),
                   team=[AgentSpec(id=f"agent_{i}", driver="scripted") for i in range(2)],
                   params=asdict(spec), limits=ctx.limits)
    t = 0
    with rec:
        while pile > 0 and t < spec.cap:
            rec.t = t
            for agent in (0, 1):
                if pile > 0 and not (agent == 1 and t % 3 == 2):
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


FAMILY = Family(
    "toy", "Toy tokens", suite="tests.toy_family:SUITE", plan="tests.toy_family:plan_items",
    default_plan={"tokens": [5, 8], "episodes": 3},
    condition="tests.toy_family:api_condition", report="tests.toy_family:section",
    figures="tests.toy_family:figures", replay="tests.toy_family:picture",
    profile="tests.toy_family:profile", commands="tests.toy_family:app", command="toy")
