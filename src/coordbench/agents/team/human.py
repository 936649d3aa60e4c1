"""A seat a person plays, as a team member under any protocol (`coordbench play`).

`HumanMind` is a protocol mind whose every verb is a question to the person's page
(`play.session.SeatSession`): the act phase offers the seat's legal actions as choices, the
talking phases (broadcast, discuss, report, the leader's assignment, the shared board) a
message box. What the seat sees and which actions are legal is the family's (`present`: its
`agents/<family>/human.py`). Each answer is recorded as a `human_decision` event with the
person's think time; a seat left unplayed raises `SeatLeft` through the episode, which the
recorder closes as errored.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from coordbench.core.trajectory import HumanDecisionEvent
from coordbench.errors import ConfigError
from coordbench.runner.episode import current_recorder

from .protocols import Decision, Message


class Presenter(Protocol):
    """What a family tells the page about one observation of the seat."""

    def view(self, obs: Any) -> dict[str, Any]:
        """Return the seat's view: {"text": ..., optionally "images": [data URLs],
        "map": {...}}."""

    def choices(self, obs: Any) -> list[tuple[str, Any]]:
        """Return the legal actions now as (label, action), in a stable order (empty: the
        seat has no choice and stays silent)."""

    def forced(self, obs: Any) -> Any | None:
        """Return the one action the seat must take now (it is not asked), or None."""


def image_urls(paths: list[str]) -> list[str]:
    """Return rendered views as data URLs (a missing file is left out)."""
    out = []
    for p in paths:
        try:
            out.append("data:image/png;base64," + base64.b64encode(Path(p).read_bytes()).decode())
        except OSError:
            continue
    return out


@dataclass
class HumanMind:
    """Agent `agent`'s seat, played by the person at `session`'s page."""

    agent: int
    session: Any  # play.session.SeatSession
    present: Presenter
    role: str = "agent"
    episode: str = ""

    async def _ask(self, obs: Any, phase: str, inbox: list[Message], *,
                   choices: list[tuple[str, Any]] | None = None,
                   extra: dict[str, Any] | None = None) -> Any:
        view = {**self.present.view(obs), **(extra or {}),
                "messages": [{"from": f"agent_{m.sender}", "phase": m.phase,
                              "text": m.content} for m in inbox],
                "role": self.role}
        listed = [{"id": k, "label": label} for k, (label, _) in enumerate(choices or [])]
        answer, think = await self.session.ask(self.episode, int(obs.t), phase,
                                               view, listed, free_text=choices is None)
        picked = choices[answer] if choices is not None else None
        rec = current_recorder()
        if rec is not None:
            rec.hold(HumanDecisionEvent(t=rec.t, agent=self.agent, phase=phase,
                                        choice=picked[0] if picked else (answer or ""),
                                        think_s=think))
        return picked[1] if picked is not None else answer

    def _has_choice(self, obs: Any) -> bool:
        # a seat with a forced action stays silent, as every family's minds do
        return self.present.forced(obs) is None

    async def speak(self, obs: Any, phase: str, inbox: list[Message], rnd: int) -> str | None:
        """Return the person's message for this phase (None: silence); an agent with no
        choice to make is not asked."""
        if not self._has_choice(obs):
            return None
        return await self._ask(obs, phase, inbox)

    async def assign(self, obs: Any, inbox: list[Message],
                     views: dict[int, Any] | None) -> dict[int, str]:
        """Return the person's instruction, as the leader, to every agent."""
        text = await self._ask(obs, "assign", inbox)
        return {j: text for j in range(int(obs.n_agents))} if text else {}

    async def update_memory(self, obs: Any, board: dict[str, Any]) -> dict[str, Any]:
        """Return the shared board with the person's note under their seat's name."""
        if not self._has_choice(obs):
            return board
        text = await self._ask(obs, "memory", [], extra={
            "board": json.dumps(board, sort_keys=True)})
        if text:
            board = {**board, f"agent_{self.agent}": text}
        return board

    async def act(self, obs: Any, inbox: list[Message]) -> Decision:
        """Return the action the person picked among the legal ones (an agent with one
        legal action takes it unasked)."""
        forced = self.present.forced(obs)
        if forced is not None:
            return Decision(forced)
        choices = self.present.choices(obs)
        if not choices:
            return Decision(None, "", "no legal action")
        action = await self._ask(obs, "act", inbox, choices=choices)
        return Decision(action, "", None)


def seat_session(resources: Any, agent: int, family: str) -> Any:
    """Return the play session serving seat `agent` (`resources.seat`, set by `coordbench
    play`); ConfigError where none does (a human seat outside `play`)."""
    from coordbench.runner.suite import seat_session as session_of

    session = session_of(resources)
    if session is None or session.seat != agent:
        raise ConfigError(f"seat agent_{agent} is human: play it with `coordbench play "
                          f"{family} --seat agent_{agent}`")
    return session


def human_mind(resources: Any, agent: int, present: Presenter, family: str,
               role: str = "agent", episode: str = "") -> HumanMind:
    """Return the person's mind for seat `agent` of a `family` team (see `seat_session`)."""
    return HumanMind(agent, seat_session(resources, agent, family), present, role=role,
                     episode=episode)
