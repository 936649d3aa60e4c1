"""A model as a physical robot's controller: it picks skills (`skills.py`), never motor
commands (CoHuB's agentic experiment, its Section C.4).

The model sees a text state built from one robot's own `Sensing` (its base pose and joints,
whether it holds, the object's position and lift, its grasp point, the goal and the object's
distance to it, its partners' hands, the task's other bodies, the time), the task's
instruction for that robot, its skills, the skill that just ended and how, and the stage its
scripted controller would run next ("the controller suggests: ..."), which the model may
follow or not. Text only: no rendered image reaches the model yet.

Two controllers:
- `per_robot` (PerRobotController): one model per robot; a robot whose skill ended is asked
  alone (robots whose skills end on the same step are asked concurrently).
- `team` (TeamController): one call for the whole team whenever any robot needs a skill; it
  returns a skill for every robot. A busy robot given its running skill keeps it; given
  another, it switches.

A reply is JSON `{"skill": NAME, "seconds": S}` (seconds only for `wait`; 0.2-5, clamped,
default 1) or, for the team, `{"robot0": {...}, "robot1": {...}}`; free text naming a skill
is read too. A reply naming no skill of the robot is a protocol failure (recorded on the
call: `parse_status` "failed" with the reason).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from coordbench.envs.physical.robot import FINGER_CLOSED
from coordbench.llm.client import Completion, ModelHarness
from coordbench.llm.parse import MAX_REPLY, extract_json
from coordbench.runner.episode import gather_all

from .skills import (
    WAIT,
    WAIT_DEFAULT_S,
    WAIT_RANGE,
    Choice,
    RobotView,
    SkillRobot,
    describe,
)

CONTROLLERS = ("per_robot", "team")

# what the robots are, by embodiment (the prompts name them)
BODIES = {"cobot": "mobile manipulators (holonomic base, torso lift, two-link arm, parallel "
                   "gripper)",
          "g1": "Unitree G1 humanoids (a planar base under the pelvis, a waist, two 7-joint "
                "arms, two three-fingered Dex3-1 hands)"}

SYSTEM = """You are the controller of robot {robot}, one of {n} {body} working together in a \
physics simulation. Team task: {joint}
Your instruction: {own}
You decide which skill your robot runs next; the skill's own controller moves the robot. A \
skill runs until its controller has finished it (or {timeout:g} s have passed), then you are \
asked again. The controller also says which skill it would run next; you may follow it or \
not. Your partners are driven separately: you see their hands, not their plans."""

TEAM_SYSTEM = """You coordinate a team of {n} {body} working together in a physics \
simulation. Team task: \
{joint}
You decide which skill each robot runs next; each skill's own controller moves its robot. A \
skill runs until its controller has finished it (or {timeout:g} s have passed). You are asked \
whenever some robot needs a new skill, and you give every robot one: a robot given the skill \
it is running keeps running it. Each robot's controller also says which skill it would run \
next; you may follow it or not."""

ASK = """{state}

Your skills:
{skills}

Reply with one JSON object: {{"skill": "<skill name>", "seconds": <only for wait: \
{low:g}-{high:g}>}}"""

TEAM_ASK = """{state}

Reply with one JSON object giving every robot a skill from its own list: {{{example}}} \
("seconds" only for wait: {low:g}-{high:g})."""

SKILL_SCHEMA = {"type": "object", "required": ["skill"], "properties": {
    "skill": {"type": "string"}, "seconds": {"type": "number"}}}


def team_schema(n: int) -> dict[str, Any]:
    """Return the JSON schema of a team reply for `n` robots (its shape, not its values)."""
    return {"type": "object", "required": [f"robot{i}" for i in range(n)],
            "properties": {f"robot{i}": SKILL_SCHEMA for i in range(n)}}


@dataclass
class Decision:
    """A controller's answer for one robot: the choice, or why there is none."""

    choice: Choice | None
    error: str | None = None


class SkillController(Protocol):
    """Who picks the robots' skills (`PerRobotController`, `TeamController`)."""

    name: str

    async def decide(self, views: list[RobotView], need: list[int], limit_s: float
                     ) -> dict[int, Decision]:
        """Return a decision for the robots in `need` (and, a team controller, others)."""


def _xyz(p: np.ndarray) -> str:
    return "(" + ", ".join(f"{float(v):.2f}" for v in p) + ") m"


def _body(s) -> str:
    """Return a robot's joints in words: a CoBot's lift, arm, wrist and gripper; a G1's
    palms (and how closed its fingers are)."""
    j = s.joints
    if s.palms is None:
        return (f"torso lift {j[0]:.3f} m, shoulder {j[1]:.2f} rad, elbow {j[2]:.2f} rad, "
                f"wrist pitch {j[3]:.2f}, roll {j[4]:.2f} rad; gripper opening "
                f"{100 * j[5]:.1f} of {100 * FINGER_CLOSED:.1f} cm")
    from coordbench.envs.physical.g1 import UPPER_JOINTS

    closed = [abs(float(j[UPPER_JOINTS.index(f"{side}_hand_index_0_joint")])) for side in
              ("left", "right")]
    return (f"left palm at {_xyz(s.palms[0])}, right palm at {_xyz(s.palms[1])}; index "
            f"fingers bent {closed[0]:.2f} and {closed[1]:.2f} rad")


def render_state(task, view: RobotView, limit_s: float, clock: bool = True) -> str:
    """Return the text state of one robot from its own sensing: time (unless `clock` is
    False), own body, object, grasp point, goal, partners' hands, other bodies, the last
    skill and the suggestion."""
    s, i, sk = view.sensing, view.robot, view.skills
    rel = s.to_robot(s.handle)
    tilt = math.degrees(math.acos(float(np.clip(s.obj_up[2], -1, 1))))
    to_goal = float(np.linalg.norm(s.goal[:2] - s.obj_pos[:2]))
    partners = [k for k in range(task.n_robots) if k != i]
    lines = [f"Time: {s.t:.2f} s of {limit_s:.2f} s."] if clock else []
    lines += [
        f"Robot {i}: base at ({s.base_xy[0]:.2f}, {s.base_xy[1]:.2f}) m, facing "
        f"{math.degrees(s.yaw):.0f} deg; {_body(s)}; holding: "
        f"{'yes' if s.holding else 'no'}.",
        f"Hand at {_xyz(s.hand)}, {100 * np.linalg.norm(s.hand - s.handle):.1f} cm from the "
        f"grasp point.",
        f"Object at {_xyz(s.obj_pos)}, {100 * s.obj_lift:.1f} cm above its rest, tilted "
        f"{tilt:.0f} deg.",
        f"Grasp point at {_xyz(s.handle)}: {rel[0]:.2f} m ahead, {rel[1]:.2f} m to the left.",
        f"Goal at {_xyz(s.goal)}; the object is {to_goal:.2f} m from it (horizontally).",
    ]
    if s.goal_yaw is not None:
        heading = math.degrees(math.atan2(float(s.obj_x[1]), float(s.obj_x[0])))
        lines.append(f"Object heading {heading:.0f} deg; goal heading "
                     f"{math.degrees(s.goal_yaw):.0f} deg.")
    lines += [f"Robot {k}'s hand at {_xyz(h)}, {np.linalg.norm(h - s.obj_pos):.2f} m from the "
              "object." for k, h in zip(partners, s.partner_hands, strict=True)]
    lines += [f"{name.capitalize()} at {_xyz(p)}." for name, p in
              zip(task.extra_bodies, s.extras, strict=True)]
    if sk.running is not None:
        lines.append(f"Running: {sk.running.skill} (for {sk.elapsed:.1f} s).")
    else:
        lines.append(f"Last skill: {sk.ended}.")
    lines.append(f"The controller suggests: {sk.suggestion}.")
    return "\n".join(lines)


def skill_lines(sk: SkillRobot) -> str:
    """Return the robot's skills, one "- name: what it does" line each."""
    return "\n".join(f"- {name}: {describe(sk.expert, name)}" for name in sk.skills)


def _seconds(value: Any) -> float:
    """Return a wait's length: `value` as seconds clamped to WAIT_RANGE (default if none)."""
    if isinstance(value, str):
        m = re.search(r"-?\d+(?:\.\d+)?", value)
        value = float(m.group(0)) if m else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value):
        return WAIT_DEFAULT_S
    return float(min(max(value, WAIT_RANGE[0]), WAIT_RANGE[1]))


def _choice(raw: Any, seconds: Any, skills: tuple[str, ...]) -> Decision:
    name = re.sub(r"[\s-]+", "_", str(raw).strip().lower()) if isinstance(raw, str) else None
    if not name:
        return Decision(None, "the reply names no skill")
    if name not in skills:
        # a phrase such as "lift the bottle": the skill it names
        named = _skill_in_text(raw, skills).choice
        if named is None:
            return Decision(None, f"unknown skill {name[:40]!r} (skills: {', '.join(skills)})")
        name = named.skill
    return Decision(Choice(name, _seconds(seconds) if name == WAIT else None))


def _skill_in_text(text: str, skills: tuple[str, ...]) -> Decision:
    """Return the first skill name `text` mentions as a word (and a wait's seconds)."""
    words = sorted(skills, key=len, reverse=True)  # wait_partner before wait
    found = re.search(r"\b(" + "|".join(map(re.escape, words)) + r")\b", text, re.I)
    if found is None:
        return Decision(None, "the reply names no skill")
    secs = re.search(r"(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\b", text[found.end():], re.I)
    return _choice(found.group(1), secs.group(1) if secs else None, skills)


def parse_skill(text: str, skills: tuple[str, ...]) -> Decision:
    """Return the skill a reply chooses: JSON {"skill": name, "seconds": s} (the first JSON
    object; "action" or "stage" also read), else the first skill named in the text."""
    text = text[:MAX_REPLY] if isinstance(text, str) else ""
    data, _ = extract_json(text)
    if isinstance(data, list):
        data = next((d for d in data if isinstance(d, dict)), None)
    if isinstance(data, dict):
        low = {str(k).lower(): v for k, v in data.items()}
        raw = next((low[k] for k in ("skill", "action", "stage") if k in low), None)
        return _choice(raw, low.get("seconds"), skills)
    return _skill_in_text(text, skills)


def _robot_index(key: Any) -> int | None:
    m = re.fullmatch(r"\s*(?:robot|r)?[\s_]*(\d{1,3})\s*", str(key), re.I)
    return int(m.group(1)) if m else None


def parse_team(text: str, skills: dict[int, tuple[str, ...]]) -> dict[int, Decision]:
    """Return a team reply read per robot: JSON {"robot0": {"skill": ...} or "name", ...}
    or a list of {"robot": i, "skill": ...}, else lines "robot i: name"; a robot the reply
    does not name gets a Decision with the reason."""
    text = text[:MAX_REPLY] if isinstance(text, str) else ""
    data, _ = extract_json(text)
    entries: dict[int, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            i = _robot_index(k)
            if i is not None:
                entries.setdefault(i, v)
    elif isinstance(data, list):
        for v in data:
            if isinstance(v, dict):
                i = _robot_index({str(k).lower(): x for k, x in v.items()}.get("robot", ""))
                if i is not None:
                    entries.setdefault(i, v)
    else:
        for m in re.finditer(r"robot\s*_?(\d{1,3})\W+(.+)", text, re.I):
            entries.setdefault(int(m.group(1)), m.group(2))
    out = {}
    for i, names in skills.items():
        v = entries.get(i)
        if v is None:
            out[i] = Decision(None, f"no skill for robot {i}")
        elif isinstance(v, dict):
            low = {str(k).lower(): x for k, x in v.items()}
            out[i] = _choice(low.get("skill", low.get("action")), low.get("seconds"), names)
        elif isinstance(v, str):
            out[i] = _skill_in_text(v, names) if data is None else _choice(v, None, names)
        else:
            out[i] = Decision(None, f"robot {i}'s entry is not a skill")
    return out


def _mark(out: Completion, error: str | None) -> None:
    """Complete the call's model_call record with its parse status."""
    if out.event is not None:
        out.event["parse_status"] = "failed" if error else "ok"
        out.event["parse_error"] = error


class PerRobotController:
    """One model per robot (`--controller per_robot`); see the module docstring."""

    name = "per_robot"

    def __init__(self, task, harness: ModelHarness | None, alias: str,
                 max_tokens: int | None = None,
                 aliases: list[str | None] | None = None,
                 human: tuple[int, Any, str] | None = None) -> None:
        self.task, self.harness, self.alias, self.max_tokens = task, harness, alias, max_tokens
        # the seat a person plays through `coordbench play`: (robot, session, episode id)
        self.human = human
        # a mixed team: each robot's model alias, None for a robot that runs the scripted
        # controller's own suggestion (no call)
        self.aliases = aliases or [alias] * task.n_robots

    async def decide(self, views: list[RobotView], need: list[int], limit_s: float
                     ) -> dict[int, Decision]:
        """Return a decision for each robot in `need` (one call each, concurrently; a
        scripted seat takes its controller's suggestion)."""
        # a provider failure ends the episode: the other robots' calls stop before its
        # errored trajectory is written
        got = await gather_all(*(self._ask(views[i], limit_s) for i in need))
        return dict(zip(need, got, strict=True))

    async def _ask(self, view: RobotView, limit_s: float) -> Decision:
        i, task = view.robot, self.task
        if self.human is not None and self.human[0] == i:
            from .human import ask_skill

            return Decision(await ask_skill(self.human[1], task, view, limit_s,
                                            self.human[2], render_state))
        alias = self.aliases[i]
        if alias is None:
            skill = view.skills.suggestion
            return Decision(Choice(skill, WAIT_DEFAULT_S if skill == WAIT else None))
        system = SYSTEM.format(robot=i, n=task.n_robots, body=BODIES[task.embodiment],
                               joint=task.instructions["joint"],
                               own=task.instructions[f"robot{i}"],
                               timeout=view.skills.timeout_s)
        user = ASK.format(state=render_state(task, view, limit_s),
                          skills=skill_lines(view.skills), low=WAIT_RANGE[0],
                          high=WAIT_RANGE[1])
        assert self.harness is not None  # a model seat has a harness
        out = await self.harness.complete(
            alias, [{"role": "system", "content": system},
                    {"role": "user", "content": user}],
            self.max_tokens, who=(i, "robot", "skill"), schema=SKILL_SCHEMA)
        if out.error:
            _mark(out, out.error)
            return Decision(None, f"model call failed: {out.error}")
        decision = parse_skill(out.text, view.skills.skills)
        _mark(out, decision.error)
        return decision


class TeamController:
    """One call for the whole team (`--controller team`); see the module docstring."""

    name = "team"

    def __init__(self, task, harness: ModelHarness, alias: str,
                 max_tokens: int | None = None) -> None:
        self.task, self.harness, self.alias, self.max_tokens = task, harness, alias, max_tokens

    async def decide(self, views: list[RobotView], need: list[int], limit_s: float
                     ) -> dict[int, Decision]:
        """Return a decision for every robot (one call). The call is a protocol failure
        when a robot in `need` gets no usable skill; a busy robot's unusable entry is
        dropped (it keeps its skill)."""
        task = self.task
        blocks = [f"Time: {views[0].sensing.t:.2f} s of {limit_s:.2f} s."]
        for v in views:
            state = render_state(task, v, limit_s, clock=False)
            status = "needs a skill" if v.robot in need else "busy"
            blocks.append(f"## Robot {v.robot} ({status})\nInstruction: "
                          f"{task.instructions[f'robot{v.robot}']}\n{state}\nSkills:\n"
                          f"{skill_lines(v.skills)}")
        example = ", ".join(f'"robot{v.robot}": {{"skill": "..."}}' for v in views)
        system = TEAM_SYSTEM.format(n=task.n_robots, body=BODIES[task.embodiment],
                                    joint=task.instructions["joint"],
                                    timeout=views[0].skills.timeout_s)
        user = TEAM_ASK.format(state="\n\n".join(blocks), example=example,
                               low=WAIT_RANGE[0], high=WAIT_RANGE[1])
        out = await self.harness.complete(
            self.alias, [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            self.max_tokens, who=(0, "team", "skill"), schema=team_schema(task.n_robots))
        if out.error:
            _mark(out, out.error)
            return {i: Decision(None, f"model call failed: {out.error}") for i in need}
        got = parse_team(out.text, {v.robot: v.skills.skills for v in views})
        errors = [got[i].error for i in need if got[i].error]
        _mark(out, "; ".join(errors) if errors else None)
        return {i: d for i, d in got.items() if i in need or d.choice is not None}


def make_controller(kind: str, task, harness: ModelHarness | None, alias: str,
                    max_tokens: int | None = None, aliases: list[str | None] | None = None,
                    human: tuple[int, Any, str] | None = None
                    ) -> PerRobotController | TeamController:
    """Return the controller `kind` (per_robot | team) of `task`'s robots (`aliases`: each
    robot's model, None for a scripted seat; `human`: the seat a person plays; per_robot
    only)."""
    if kind == "per_robot":
        return PerRobotController(task, harness, alias, max_tokens, aliases, human)
    return TeamController(task, harness, alias, max_tokens)
