"""What a person playing a construct seat sees and may do: the instance as a model planner
reads it (and the rendered view, under --observation image), and the menu entries that make
sense for the seat now (`envs.household.menu.plausible`), as buttons, plus "nothing left to
do" (the seat stops, as a planner that chooses nothing does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordbench.envs.household.menu import menu

from ..team.human import image_urls

NOTHING = "nothing left to do"


class ConstructPresenter:
    """The construct seat's view and legal menu entries (see `agents.team.human.Presenter`)."""

    def __init__(self, catalog: list[tuple[int, Any]], render: Callable[[Any], str]) -> None:
        self.catalog, self.render = catalog, render

    def view(self, obs: Any) -> dict[str, Any]:
        """Return the instance text (a `minds.ConstructView`'s) and, where rendered, the
        seat's view."""
        image = obs.extra.get("image")
        return {"text": self.render(obs), **({"images": image_urls([image])} if image else {})}

    def forced(self, obs: Any) -> None:
        """Return None: a construct seat always chooses."""
        return None

    def choices(self, obs: Any) -> list[tuple[str, Any]]:
        """Return the seat's plausible menu entries now (and stopping), as (label, action)."""
        entries = [(f"[{k}] {act.text()}", act)
                   for k, _, act in menu(obs.env, self.catalog, obs.agent)]
        return [*entries, (NOTHING, None)]
