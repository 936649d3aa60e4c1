"""What one agent observes: a structured observation and its text rendering."""

from __future__ import annotations

from dataclasses import dataclass, field

from .actions import Outcome
from .engine import VIEW_RANGE, HouseholdEnv


@dataclass(frozen=True)
class SeenObject:
    """A visible node with what an agent can tell about it."""

    id: int
    class_name: str
    category: str
    on: int | None  # the surface or container it rests on / in, if any
    relation: str | None  # "ON" or "INSIDE"
    is_open: bool | None  # None for things that do not open
    grabbable: bool
    container: bool
    surface: bool
    distance: float
    description: str = ""


@dataclass(frozen=True)
class GoalStatus:
    """One subgoal as the agents see it: what goes where, and how many are in place."""

    key: str
    relation: str
    obj_class: str
    targets: tuple[int, ...]
    target_class: str
    target_room: int | None
    done: int
    count: int


@dataclass
class Observation:
    """Everything agent `agent` perceives at the start of team step `t`."""

    agent: int
    t: int
    steps_left: int
    room: int
    room_names: dict[int, str]
    position: tuple[float, float]
    visible: list[SeenObject]
    held: list[tuple[int, str]]
    allowed_rooms: list[int]
    doors: list[tuple[int, int, int]]
    handover_doors: list[int]
    teammates: list[tuple[int, int, tuple[float, float]]]  # (agent, room, position) in view
    goals: list[GoalStatus]
    goal_text: str
    hints: dict[str, list[int]]
    structure: str
    n_agents: int
    last_outcome: Outcome | None = None
    at_door: int | None = None
    mates_at_door: dict[int, int] = field(default_factory=dict)  # teammate -> door, if in view
    # goal class -> appearance text, where the prior's goal text describes it
    described: dict[str, str] = field(default_factory=dict)
    spots: dict[str, list[int]] = field(default_factory=dict)  # class -> hinted furniture
    extra: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Return whether every subgoal shows as done."""
        return all(g.done >= g.count for g in self.goals)


def observe(env: HouseholdEnv, agent: int, *, goal_text: str, hints: dict[str, list[int]],
            steps_left: int, last: Outcome | None = None,
            described: dict[str, str] | None = None,
            spots: dict[str, list[int]] | None = None) -> Observation:
    """Return agent `agent`'s observation of the current state."""
    sc = env.scene
    seen = []
    for nid in env.visible(agent):
        node = sc.nodes[nid]
        rel = next(iter(env.parents.get(nid, ())), (None, None))
        seen.append(SeenObject(
            nid, node.class_name, node.category, rel[1], rel[0],
            env.open_state[nid] if nid in env.open_state else None, node.grabbable,
            node.is_container, node.is_surface,
            round(env.distance(env.pos[agent], env.node_pos[nid]), 2),
            env.task.descriptions.get(node.class_name, "")))
    sat = env.satisfied()
    goals = [GoalStatus(g.key, g.relation, g.obj_class, g.targets,
                        sc.nodes[g.targets[0]].class_name, env.node_room.get(g.targets[0]),
                        sat[g.key], g.count) for g in env.task.subgoals]
    mates = []
    for j in range(env.n):
        if j != agent and env.distance(env.pos[agent], env.pos[j]) <= VIEW_RANGE and (
                env.room[j] == env.room[agent] or env.at_door[j] is not None
                or env.at_door[agent] is not None):
            mates.append((j, env.room[j], env.pos[j]))
    return Observation(
        agent=agent, t=env.t, steps_left=steps_left, room=env.room[agent],
        room_names=dict(sc.rooms), position=env.pos[agent], visible=seen,
        held=[(o, sc.nodes[o].class_name) for o in env.held[agent]],
        allowed_rooms=sorted(env.allowed[agent]),
        doors=sorted((d, a, b) for d, (a, b) in sc.doors.items()),
        handover_doors=list(env.task.handover_doors), teammates=mates, goals=goals,
        goal_text=goal_text, hints=hints, structure=env.task.structure, n_agents=env.n,
        last_outcome=last, at_door=env.at_door[agent], described=dict(described or {}),
        spots=dict(spots or {}),
        mates_at_door={j: env.at_door[j] for j, _, _ in mates if env.at_door[j] is not None})


def render_text(obs: Observation) -> str:
    """Return the observation as the text an agent (or a language model) reads."""
    names = obs.room_names
    lines = [f"You are agent {obs.agent} of {obs.n_agents}. Step {obs.t}; "
             f"{obs.steps_left} team steps left.",
             f"Goal: {obs.goal_text}",
             "Progress: " + "; ".join(
                 f"{g.done}/{g.count} {g.obj_class} {g.relation} {g.target_class} ({g.targets[0]})"
                 for g in obs.goals),
             f"You are in the {names[obs.room]}"
             + (f", at door {obs.at_door}" if obs.at_door is not None else "") + "."]
    if obs.structure == "sequential":
        lines.append("Allowed rooms: " + ", ".join(names[r] for r in obs.allowed_rooms)
                     + f". Handover doors: {', '.join(map(str, obs.handover_doors))}.")
    lines.append("Doors: " + ", ".join(f"{names[a]}--door({d})--{names[b]}"
                                       for d, a, b in obs.doors))
    lines.append("You hold: " + (", ".join(f"{c} ({o})" for o, c in obs.held) or "nothing")
                 + ".")
    things = []
    for s in obs.visible:
        if s.category in ("Doors",):
            continue
        where = f" {s.relation.lower()} {s.on}" if s.relation else ""
        state = "" if s.is_open is None else (" open" if s.is_open else " closed")
        desc = f" - {s.description}" if s.description else ""
        things.append(f"{s.class_name} ({s.id}){state}{where}, {s.distance} m{desc}")
    lines.append("You see: " + ("; ".join(things) if things else "nothing") + ".")
    if obs.teammates:
        lines.append("Teammates in view: " + ", ".join(
            f"agent {j} in the {names[r]}" for j, r, _ in obs.teammates) + ".")
    if obs.last_outcome is not None:
        o = obs.last_outcome
        lines.append(f"Last action: {o.code}" + (f" ({o.detail})" if o.detail else "") + ".")
    return "\n".join(lines)
