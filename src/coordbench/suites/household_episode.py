"""One household episode, for every family on the household engine (MECoBench cases and
construct instances): render -> the team decides -> the engine executes -> record.

A family brings its team as a `HouseholdTeam`: `act(view)` returns the step's `Turn` (one
`Choice` per agent, the landing order, the messages of the communicate phase) or None when
it has nothing left to do; `executed(acting, records)` returns the notes agents post after
the step. Everything else is here, once: rendering each agent's views into the run's image
store, feeding the engine, turning outcomes into `ActionRecord`s, the step event, and the
stops (goal met, step budget, the team's own budget, the recorder's token and cost limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from coordbench.agents.team.protocols import maybe_await
from coordbench.core.trajectory import ActionRecord, Conflict, HouseholdStepEvent, MessageEvent
from coordbench.envs.household.actions import WAIT, Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.render import ImageStore, png_bytes, render_agent, render_team
from coordbench.runner import Recorder, Team


@dataclass(frozen=True)
class Choice:
    """One agent's part of a step: the action it takes, or None (it does not act) with the
    outcome code and reason where its decision failed; a model's reply and its tokens."""

    action: Action | None
    failure: tuple[str, str] | None = None
    raw: str | None = None
    tokens: int = 0


@dataclass
class Turn:
    """A team's decision for one step: a choice per agent, the agents in landing order (None:
    index order), the step's communicate-phase messages, and `ends`: why the team's protocol
    broke this step (the step is recorded, then the episode ends as a protocol failure)."""

    choices: list[Choice]
    landing: list[int] | None = None
    messages: list[MessageEvent] = field(default_factory=list)
    ends: str | None = None


@dataclass(frozen=True)
class StepView:
    """What a household team is shown at step `t`: the paths of the rendered views, by
    agent id (`agent_0`, ...) and `team` (a leader's composite), where views are rendered."""

    t: int
    images: dict[str, str]


class HouseholdTeam(Team[StepView, Turn], Protocol):
    """A team on the household engine: `act(view)` -> Turn (or None: nothing left to do)."""

    def executed(self, acting: list[int], records: list[ActionRecord]) -> list[MessageEvent]:
        """Return the notes agents post after the step (recorded after its messages)."""

    def exhausted(self) -> bool:
        """Return whether the team's own budget is spent (no further step)."""


def render_views(env: HouseholdEnv, images: ImageStore, agents: Sequence[int],
                 team_view: bool) -> dict[str, str]:
    """Return {view: content hash} of each agent's rendered views (and the team composite
    with `team_view`), stored once in `images`."""
    views = {f"agent_{i}": images.put(png_bytes(render_agent(env, i))) for i in agents}
    if team_view:
        views["team"] = images.put(png_bytes(render_team(env)))
    return views


def action_record(env: HouseholdEnv, agent: int, choice: Choice, outcome) -> ActionRecord:
    """Return the record of one agent's step: what it did and what happened, or, where its
    decision failed, the failure (it waited)."""
    if choice.action is None:
        code, why = choice.failure or ("protocol_failure", "no action")
        return ActionRecord(agent=agent, action="none", outcome=code, detail=why,
                            raw=choice.raw, tokens=choice.tokens)
    a = choice.action
    node = env.task.scene.nodes.get(a.obj) if isinstance(a.obj, int) else None
    return ActionRecord(agent=agent, action=a.name, args=a.args(),
                        obj_class=node.class_name if node else None, outcome=outcome.code,
                        detail=outcome.detail, completed=list(outcome.completed),
                        raw=choice.raw, tokens=choice.tokens)


async def play_household(env: HouseholdEnv, rec: Recorder, team: HouseholdTeam, *,
                         steps: int, images: ImageStore | None = None,
                         view_agents: bool = True, team_view: bool = False,
                         buffers: Sequence[int] = ()) -> tuple[int, str | None, str | None]:
    """Play `team` on `env` under `rec` until the goal is met, `steps` team steps are played,
    the team is out of budget or has nothing left to do, its protocol breaks (`Turn.ends`),
    or the recorder's limits stop it; return (steps played, why it stopped early or None,
    why its protocol broke or None). The caller opened `rec` and finishes it.

    With an `images` store and `view_agents`, every agent's views (and the composite with
    `team_view`) are rendered before each step, stored by content hash, shown to the team
    and referenced from the step event. `buffers` are the buffer stations whose load each
    step event records.
    """
    n = env.n
    t = 0
    stop: str | None = None
    broke: str | None = None
    while t < steps and not team.exhausted() and not env.success():
        rec.t = t
        views: dict[str, str] = {}
        if images is not None and view_agents:
            views = render_views(env, images, range(n), team_view)
        paths = {k: str(images.root / f"{v}.png") for k, v in views.items()} if views else {}
        turn = await maybe_await(team.act(StepView(t, paths)))
        if turn is None:
            stop = "every planner has nothing left to do"
            break
        outcomes = env.step([c.action or WAIT for c in turn.choices], turn.landing)
        records = [action_record(env, i, c, o)
                   for i, (c, o) in enumerate(zip(turn.choices, outcomes, strict=True))
                   if c.action is not None or c.failure is not None]
        acting = [i for i, c in enumerate(turn.choices) if c.action is not None]
        notes = team.executed(acting, records)
        rec.flush_calls()
        rec.emit(*turn.messages, *notes)
        rec.emit(HouseholdStepEvent(
            t=t, actions=records,
            conflicts=[Conflict(target=o, agents=m, winner=w) for o, m, w in env.last_conflicts],
            satisfied=env.satisfied(), completion=env.completion_rate(),
            buffers={str(b): env.buffer_load(b) for b in buffers}, images=views))
        t += 1
        # a run limit reached this step (a token budget spent mid-step) is why it stopped,
        # not the protocol: the decisions it cut short are not the planners' failures
        stop = rec.stop_reason()
        if stop:
            break
        if turn.ends is not None:
            broke = turn.ends
            break
    return t, stop, broke
