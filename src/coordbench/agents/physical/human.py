"""What a person playing a physical robot's seat sees and may do: the robot's state as the
model controller reads it, its instruction, and its skill library as buttons (the scripted
controller's suggestion marked); the skill then runs as a model's choice would."""

from __future__ import annotations

from typing import Any

from coordbench.core.trajectory import HumanDecisionEvent
from coordbench.runner.episode import current_recorder

from .skills import WAIT, WAIT_DEFAULT_S, Choice, RobotView, describe


async def ask_skill(session: Any, task: Any, view: RobotView, limit_s: float, episode: str,
                    render: Any) -> Choice:
    """Return the skill the person picks for robot `view.robot` (recorded as a
    human_decision event with its think time); SeatLeft when the seat goes unplayed."""
    sk = view.skills
    labels = [f"{s}{' (suggested)' if s == sk.suggestion else ''}: {describe(sk.expert, s)}"
              for s in sk.skills]
    text = (f"Your instruction: {task.instructions[f'robot{view.robot}']}\n"
            f"Team task: {task.instructions['joint']}\n\n{render(task, view, limit_s)}")
    rec = current_recorder()
    answer, think = await session.ask(episode, rec.t if rec is not None else 0, "skill",
                                      {"text": text, "role": "robot"},
                                      [{"id": k, "label": label}
                                       for k, label in enumerate(labels)])
    skill = sk.skills[answer]
    if rec is not None:
        rec.hold(HumanDecisionEvent(t=rec.t, agent=view.robot, phase="skill", choice=skill,
                                    think_s=think))
    return Choice(skill, WAIT_DEFAULT_S if skill == WAIT else None)
