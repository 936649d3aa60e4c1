"""Skills of a model-driven physical robot: the stages of its scripted expert, executed by
that expert's own controller, plus a timed `wait`.

A model decides what a robot does next; it never sends motor commands. Each robot's skills
are the stage names of its task's scripted expert (`task.expert(env, i, rng, 0.0)`, see
`envs/physical/operators.py` and the task modules; the table is `STAGES`, the list per task is
in docs/physical.md), plus `wait`:

- a **stage skill** sets the expert's phase machine to that stage and runs the expert's
  `act` from there. The skill is finished when the machine wants to leave the stage (its
  `stage` changes inside `act`); the stage it moved to is what "the controller suggests" next.
  A skill also ends after SKILL_TIMEOUT_S, and the robot is asked again (choosing the same
  skill keeps the stage going, its controller state untouched).
- **wait** holds still for 0.2-5 s: base velocity zero, the last torso, arm, wrist and grip
  targets kept.

The experts' own `wait` stage (wait for the partner: the taker's until the giver's hand has
left, the pourer's until the beaker is held out, the sweeper's until the bin is in place) is
offered as `wait_partner`, so that `wait` is always the timed hold.

Setting a stage uses the expert's own fields exactly as its `_go` does (`stage`, `t_stage`,
`k`), so a model that always picks the suggested stage reproduces the scripted expert step
for step. A model that departs from the machine (a stage other than the one it is in) first
restarts the expert from its own sensing, as phase-level evaluation does (`resume`: the torso
and arm targets, and a stage's hand target, taken from where the robot is), so the chosen
stage starts from the robot's actual pose instead of targets left from another stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coordbench.envs.physical.env import Sensing
from coordbench.envs.physical.scene import CONTROL_DT

WAIT = "wait"
WAIT_RANGE = (0.2, 5.0)  # seconds a wait may last (a reply outside is clamped)
WAIT_DEFAULT_S = 1.0  # a wait whose reply gives no usable seconds
FALLBACK_WAIT_S = 0.5  # after an unusable reply the robot waits this long, then is asked again
SKILL_TIMEOUT_S = 8.0  # a stage skill runs at most this long before the model is asked again
PARTNER_WAIT = "wait_partner"  # the skill name of the experts' own "wait" stage

# the stages of each expert's phase machine (the class or its nearest base with an entry),
# in the order a nominal episode visits them; `regrasp` is CarryExpert's missed-grasp detour
STAGES: dict[str, tuple[str, ...]] = {
    "CarryExpert": ("reach", "grasp", "regrasp", "lift", "carry", "lower", "release",
                    "retreat"),
    "G1CarryExpert": ("reach", "place", "grasp", "regrasp", "lift", "carry", "lower",
                      "release", "retreat"),
    "G1Giver": ("reach", "over", "place", "grasp", "regrasp", "lift", "offer", "release",
                "retreat"),
    "G1Taker": ("await", "reach", "over", "place", "grasp", "regrasp", "wait", "carry",
                "lower", "release", "retreat"),
    "Giver": ("reach", "grasp", "lift", "offer", "release", "retreat"),
    "Taker": ("reach", "approach", "grasp", "wait", "carry", "lower", "release", "retreat"),
    "Server": ("reach", "approach", "grasp", "lift", "carry", "lower", "release", "retreat"),
    "Pourer": ("reach", "grasp", "lift", "wait", "bring", "tip"),
    "BeakerHolder": ("reach", "grasp", "lift", "offer"),
    "FrameHanger": ("reach", "grasp", "lift", "thread", "lower", "release", "retreat"),
    "CoPourer": ("reach", "grasp", "lift", "shift", "tip"),
    "BinCarrier": ("reach", "grasp", "lift", "carry"),
    "Sweeper": ("reach", "wait", "sweep", "retreat"),
    "Pusher": ("reach", "grasp", "push", "release", "retreat"),
    "DoorOpener": ("reach", "grasp", "open"),
    "G1DoorOpener": ("reach", "over", "place", "grasp", "regrasp", "open"),
    "G1Pusher": ("reach", "over", "place", "grasp", "regrasp", "push", "release", "retreat"),
    "G1Server": ("await", "reach", "over", "place", "grasp", "regrasp", "lift", "carry",
                 "lower", "release", "retreat"),
}

# what a skill does, for the prompt (by skill name; `_OWN` where an expert's stage differs)
_ABOUT = {
    "reach": "line the base up and bring the open hand to your grasp point",
    "approach": "bring the open hand to the object's grasp point",
    "grasp": "close the gripper on the grasp point (a miss goes back to reach)",
    "regrasp": "open, back the hand off, then reach again",
    "place": "bring the open hands (palms down) onto the handle",
    "over": "bring the open hand (palm down) level over the handle's bar",
    "await": "wait, hand at rest, until the object is held out over the middle",
    "lift": "raise the torso to lift what you hold",
    "carry": "carry the object to the goal with your partners",
    "lower": "set the object down at the goal",
    "release": "open the gripper",
    "retreat": "move the hand (and base) back and fold the arm",
    "offer": "hold the object out over the middle between the robots",
    PARTNER_WAIT: "hold on and wait for your partner",
    "bring": "bring the cup over the beaker",
    "tip": "tip what you hold to pour",
    "thread": "reach toward the wall and step sideways until the eyelet is over the peg",
    "shift": "step sideways with the tub until it is over the crate",
    "push": "push the trolley to the parking mark",
    "sweep": "sweep the bottle along the bench over its end into the bin",
    "open": "walk the door's bar along its arc until the door is open, and hold it there",
    WAIT: f"hold still for `seconds` ({WAIT_RANGE[0]:g}-{WAIT_RANGE[1]:g}): base still, "
          "torso, arm and grip kept",
}
_PINCH = ("pinch the bar in the right hand: fingers over and in front, thumb behind (a miss "
          "goes back to reach)")
_UNPINCH = "open the fingers and raise the hand off the bar"
_OWN = {
    ("G1CarryExpert", "grasp"): "hook both hands' fingers under the handle (a miss goes back "
                                "to reach)",
    ("G1CarryExpert", "lift"): "raise both hands to lift what you hold",
    ("G1CarryExpert", "release"): "open the fingers and raise the hands off the handle",
    ("G1DoorOpener", "grasp"): _PINCH,
    ("G1DoorOpener", "open"): "walk the door's bar along its arc, turning with the door, "
                              "until it is open, and hold it there",
    ("G1Pusher", "grasp"): _PINCH,
    ("G1Pusher", "release"): _UNPINCH,
    ("G1Server", "await"): "wait, hand at rest, until the trolley is parked",
    ("G1Server", "grasp"): _PINCH,
    ("G1Server", "lift"): "raise the hand to lift the basket off the trolley",
    ("G1Server", "carry"): "step until the basket hangs over the table's goal",
    ("G1Server", "lower"): "lower the hand until the basket stands on the table",
    ("G1Server", "release"): _UNPINCH,
    ("G1Giver", "grasp"): _PINCH,
    ("G1Giver", "lift"): "raise the hand to lift the basket off its stand",
    ("G1Giver", "offer"): "step forward until the basket hangs over the middle; let go once "
                          "your partner's hand has been on the bar for 1.5 s",
    ("G1Giver", "release"): _UNPINCH,
    ("G1Taker", "place"): "lower the open hand onto the bar beside the giver's",
    ("G1Taker", "grasp"): _PINCH,
    ("G1Taker", PARTNER_WAIT): "hold the bar until the giver's hand has left it",
    ("G1Taker", "carry"): "step back until the basket hangs over your pad",
    ("G1Taker", "lower"): "lower the hand until the basket stands on the pad",
    ("G1Taker", "release"): _UNPINCH,
    ("Giver", "offer"): "hold the bottle out over the middle; let go once your partner's "
                        "hand has been on it for 1.2 s",
    ("Taker", "reach"): "raise the torso and wait, arm folded, until the bottle is held out",
    ("Taker", "approach"): "bring the open hand to the bottle's upper part",
    ("Taker", PARTNER_WAIT): "hold the bottle until the giver's hand has left it",
    ("Taker", "carry"): "move the bottle over your pad",
    ("Taker", "lower"): "lower the bottle onto the pad",
    ("Server", "reach"): "raise the torso and wait until the trolley stands at the mark",
    ("Server", "approach"): "bring the open hand to the bottle on the trolley",
    ("Server", "carry"): "move the bottle over the table goal",
    ("Server", "lower"): "lower the bottle onto the table",
    ("Pourer", PARTNER_WAIT): "hold the cup up until the beaker is held out",
    ("Pourer", "tip"): "tip the cup over the beaker until the marble drops (keeps tipping)",
    ("BeakerHolder", "offer"): "hold the beaker out over the middle (keeps holding)",
    ("CoPourer", "tip"): "roll the wrist to tip the tub toward the crate with your partner "
                         "(keeps tipping)",
    ("FrameHanger", "lower"): "lower the torso to hang the eyelet on the peg",
    ("BinCarrier", "lift"): "raise the torso until the bin's rim is just below the bench top",
    ("BinCarrier", "carry"): "carry the bin to the bench's end, rim just below the bench top "
                             "(keeps holding it there)",
    ("Sweeper", "reach"): "put the closed hand low on the bench behind the bottle",
    ("Sweeper", PARTNER_WAIT): "keep the hand there until the bin is at the bench's end",
    ("Sweeper", "retreat"): "lift the hand away",
    ("Pusher", "retreat"): "back the base off the trolley",
}


def _expert_key(expert: object) -> str:
    for cls in type(expert).__mro__:
        if cls.__name__ in STAGES:
            return cls.__name__
    raise TypeError(f"no skill table for the expert {type(expert).__name__}")


def skill_name(stage: str) -> str:
    """Return the skill name of an expert stage (the experts' "wait" is `wait_partner`)."""
    return PARTNER_WAIT if stage == "wait" else stage


def stage_name(skill: str) -> str:
    """Return the expert stage a (stage) skill sets."""
    return "wait" if skill == PARTNER_WAIT else skill


def skills_of(expert: object) -> tuple[str, ...]:
    """Return the skill names of a robot driven by `expert`: its stages, then `wait`."""
    return tuple(skill_name(s) for s in STAGES[_expert_key(expert)]) + (WAIT,)


def describe(expert: object, skill: str) -> str:
    """Return one line saying what `skill` does for the robot `expert` drives."""
    return _OWN.get((_expert_key(expert), skill), _ABOUT[skill])


@dataclass(frozen=True)
class Choice:
    """A skill to run; `seconds` only for `wait` (within WAIT_RANGE)."""

    skill: str
    seconds: float | None = None

    def as_dict(self) -> dict[str, object]:
        """Return the choice as JSON fields (seconds only where set)."""
        return {"skill": self.skill} if self.seconds is None else {
            "skill": self.skill, "seconds": round(self.seconds, 3)}


class SkillRobot:
    """One robot's skill executor around its scripted expert (see the module docstring).

    The runner asks the robot's model whenever `running` is None (at the start, and after a
    skill ended), `start`s the choice, and calls `act` once per control step."""

    def __init__(self, expert, timeout_s: float = SKILL_TIMEOUT_S) -> None:
        self.expert = expert
        self.skills = skills_of(expert)
        self.timeout_s = timeout_s
        self.running: Choice | None = None
        self.steps = 0  # control steps the running skill has run
        self.ended = "none yet (the episode starts)"  # how the last skill ended, for prompts
        # the targets a wait keeps: before any action, the expert's rest targets, gripper open
        self.last = expert.rest_action()

    @property
    def suggestion(self) -> str:
        """Return the skill the expert's phase machine would run next (the stage it is in)."""
        return skill_name(self.expert.stage)

    @property
    def elapsed(self) -> float:
        """Return the seconds the running skill has run."""
        return self.steps * CONTROL_DT

    def start(self, choice: Choice, s: Sensing) -> None:
        """Run `choice` from now (`s`: this robot's sensing now). A stage skill the robot is
        already running keeps going; another stage is set on the expert as its `_go` does,
        after restarting the expert from `s` when it is not the machine's own next stage."""
        if choice.skill not in self.skills:
            raise ValueError(f"{choice.skill!r} is not a skill of this robot")
        if choice.skill != WAIT:
            if self.running == choice:
                return  # re-issued while running (the team controller): keep its clock
            ex = self.expert
            stage = stage_name(choice.skill)
            if stage != ex.stage:
                ex.resume(s)  # targets from where the robot is, as a mid-task restart takes
                ex.stage, ex.t_stage = stage, 0.0
                ex.k += 1  # one more stage change, as `_go` counts them (latency index)
        self.running, self.steps = choice, 0

    def act(self, s: Sensing) -> np.ndarray:
        """Return this control step's 9-D action for the running skill; when the skill ends
        (stage left, timeout, wait over) `running` becomes None and `ended` says how."""
        run = self.running
        if run is None:
            raise RuntimeError("the robot has no skill: ask its model first")
        self.steps += 1
        if run.skill == WAIT:
            action = self.last.copy()
            action[:3] = 0.0
            if self.elapsed >= (run.seconds or 0.0) - 1e-9:
                self._end(f"wait: {run.seconds:g} s over")
        else:
            ex = self.expert
            before = (ex.stage, ex.k)
            # the step's action is the expert's own, also on the step its machine moves on
            action = ex.act(s, CONTROL_DT)
            if (ex.stage, ex.k) != before:
                self._end(f"{run.skill}: done (the controller moved on)")
            elif self.elapsed >= self.timeout_s - 1e-9:
                self._end(f"{run.skill}: stopped after {self.timeout_s:g} s (the controller "
                          "had not finished it)")
        self.last = action
        return action

    def _end(self, how: str) -> None:
        self.running, self.ended = None, how


@dataclass
class RobotView:
    """What a controller is shown of one robot at a decision point: its index, its own
    sensing and its skill executor (skills, running skill, how the last ended, suggestion)."""

    robot: int
    sensing: Sensing
    skills: SkillRobot
