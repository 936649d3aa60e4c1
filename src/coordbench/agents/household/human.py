"""What a person playing a household seat (MECoBench) sees and may do: the observation as a
model reads it (and the rendered view, where the run renders views), and every action the
observation makes possible now, as buttons: walk to, grab, open or close what is in view;
put what is held in or on what is in view; drop or hand over what is held; walk to an
allowed room or a hand-over door; receive; wait; done. The engine settles what happens
(too far, not reachable...), as it does for a model's action; the outcome shows next step."""

from __future__ import annotations

from typing import Any

from coordbench.envs.household.actions import Action
from coordbench.envs.household.observe import Observation, render_text

from ..team.human import image_urls


class HouseholdPresenter:
    """The household seat's view and legal actions (see `agents.team.human.Presenter`)."""

    def view(self, obs: Observation) -> dict[str, Any]:
        """Return the observation's text and, where rendered, its view."""
        image = obs.extra.get("image")
        return {"text": render_text(obs), **({"images": image_urls([image])} if image else {})}

    def forced(self, obs: Observation) -> None:
        """Return None: a household seat always chooses."""
        return None

    def choices(self, obs: Observation) -> list[tuple[str, Any]]:
        """Return the actions this observation makes possible, as (label, Action)."""
        names = obs.room_names
        seen = [s for s in obs.visible if s.category != "Doors"]
        held = [o for o, _ in obs.held]
        label = {s.id: f"{s.class_name} ({s.id})" for s in seen}
        label.update({o: f"{c} ({o})" for o, c in obs.held})
        out: list[tuple[str, Action]] = []
        for o, _ in obs.held:
            for s in seen:
                if s.container and s.is_open is not False:
                    out.append((f"put {label[o]} in {label[s.id]}", Action("put_in", o, s.id)))
                if s.surface:
                    out.append((f"put {label[o]} on {label[s.id]}", Action("put_on", o, s.id)))
        for s in seen:
            if s.grabbable and s.id not in held:
                out.append((f"grab {label[s.id]}", Action("grab", s.id)))
            if s.is_open is not None:
                verb = "close" if s.is_open else "open"
                out.append((f"{verb} {label[s.id]}", Action(verb, s.id)))
        for s in seen:
            out.append((f"walk to {label[s.id]} ({s.distance} m)", Action("walk", s.id)))
        for o in held:
            out.append((f"drop {label[o]}", Action("drop", o)))
            for j in range(obs.n_agents):
                if j != obs.agent:
                    out.append((f"hand {label[o]} to agent {j}",
                                Action("handover", o, to_agent=j)))
        for r in obs.allowed_rooms:
            if r != obs.room:
                out.append((f"walk to the {names[r]}", Action("walk_to_room", room=r)))
        for d in obs.handover_doors:
            out.append((f"walk to hand-over door {d}", Action("walk_to_door", d)))
        if obs.structure == "sequential":
            out.append(("receive", Action("receive")))
        out.append(("wait", Action("wait")))
        out.append(("done (the task is complete)", Action("done")))
        return out
