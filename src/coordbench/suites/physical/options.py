"""What a physical run plays and who sits: the family's `options` and `seats` pieces.

`physical eval`, `crossplay physical` and `play physical` are generated from these fields
(`commands/family_commands.py`); `task_names` reads a `--task` for the other physical
commands too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coordbench.agents.team.seats import (
    Seat,
    has_model,
    model_aliases,
    one_partner,
    parse_team,
    team_label,
)
from coordbench.core.limits import MAX_EPISODES
from coordbench.envs.physical.demo_files import demos_name
from coordbench.errors import ConfigError
from coordbench.runner import ModelResources
from coordbench.runner.options import REQUIRED, Option
from coordbench.runner.played import PlayedBase, RunPlan, Seats

from .suite import LLM, SEATS, SUITE, PhysicalSpec, make_policy

FAMILY_SEATS = Seats(("llm", "scripted", "learned"), "physical", "expert")
TASK_HELP = ("Task name, a comma-separated list, or all. Tasks: Handover, Pouring, FrameHang, "
             "CoPouring, TrashCollection, CartService, CoCarry, TableAlign, MoveHouse, "
             "BigTable.")

# --task: what every physical command plays (eval, crossplay, play, demos, train)
TASK = Option("task", str, REQUIRED, TASK_HELP, defaults={"play": "Handover"},
              helps={"crossplay": "A physical task with 2+ robots, e.g. Handover.",
                     "play": "A physical task with 2+ robots."})
EMBODIMENT = Option("embodiment", str, "cobot", "The robots: cobot (the fast stand-in: a "
                    "holonomic base, a planar arm, a gripper) | g1 (Unitree G1 humanoids with "
                    "Dex3-1 hands; model files from --g1-model, COORDBENCH_G1_MODEL or "
                    "mujoco-menagerie).", choices=("cobot", "g1"))
G1_MODEL = Option("g1_model", Path, None, "The G1's model file (Unitree's "
                  "g1_29dof_with_hand.xml or Menagerie's g1_with_hands.xml) or its folder "
                  "(default: $COORDBENCH_G1_MODEL, else MuJoCo Menagerie's).", flag="--g1-model")
OPTIONS = (
    TASK,
    EMBODIMENT,
    G1_MODEL,
    Option("policy", str, "expert", "expert | expert_noisy | PATH (checkpoint) | llm (robots "
           "run the skills a model picks; with --model)", commands=("run",)),
    Option("rollouts", int, 100, "Rollouts with seeds 1..N.", low=1, high=MAX_EPISODES,
           defaults={"play": 1}, helps={"crossplay": "Rollouts per cell (seeds 1..N).",
                                        "play": "Episodes in the session (seeds 1..N)."}),
    Option("phase_level", bool, False, "Also run phase-level evaluation from "
           "demonstrations.", flag="--phase-level", commands=("run",)),
    Option("demos", Path, Path("runs/demos"), "Demonstrations directory (for --phase-level).",
           commands=("run",)),
    Option("per_phase", int, 50, "Phase-level rollouts per phase.", low=1, high=MAX_EPISODES,
           commands=("run",)),
    Option("model", str, None, "Model alias of every robot (policy llm).", commands=("run",)),
    Option("controller", str, None, "Policy llm: per_robot (one model per robot, the "
           "default) | team (one call for the whole team).", commands=("run",)),
    Option("team", str, None, "Policy llm: each robot's seat, e.g. agent_0=llm:A,"
           "agent_1=scripted:expert (scripted:expert runs the skill controller's own "
           "suggestion, no model); otherwise experts and checkpoints robot by robot, e.g. "
           "agent_0=scripted:expert+fail_at=150,agent_1=expert (robot 0 lets go of what it "
           "holds at control step 150, once); a plain integer must be the task's robot "
           "count.",
           metavar="SEAT=KIND[:ARG],...", commands=("run", "play"),
           helps={"play": "Who drives the other robots: agent_0=human,agent_1=llm:A "
                          "(default: the skill controller's own suggestion, "
                          "scripted:expert)."}),
)


def task_names(task: str, embodiment: str = "cobot") -> list[str]:
    """Return the tasks a `--task` names (a name, a comma-separated list, or all) for
    `embodiment`; ConfigError for an unknown one, one the embodiment does not play, or
    none."""
    from coordbench.envs.physical.tasks import TASKS, get_task

    names = list(TASKS) if task == "all" else [t.strip() for t in task.split(",")
                                                if t.strip()]
    if not names:
        raise ConfigError(f"--task names no task; give a task, a comma-separated list or all "
                          f"(got {task!r})")
    for name in names:
        get_task(name, embodiment)
    return names


def embodiment_from(values: dict[str, Any]) -> str:
    """Return the values' embodiment, making their --g1-model this process's G1 model (a
    bad path fails now, in one line); ConfigError for --g1-model without the G1."""
    from coordbench.envs.physical.embodiment import use_g1_model

    embodiment = values.get("embodiment") or "cobot"
    if values.get("g1_model") is not None:
        if embodiment != "g1":
            raise ConfigError("--g1-model is for --embodiment g1")
        use_g1_model(values["g1_model"])
    if embodiment == "g1":
        from coordbench.envs.physical.g1 import require_model

        require_model()  # no model files: one line naming the ways to get one
    return embodiment


def run_folder(embodiment: str) -> Path:
    """Return the default run folder of a physical evaluation (a G1's names it)."""
    return Path("runs/physical" if embodiment == "cobot" else f"runs/physical-{embodiment}")


def cell_spec(task: str, seats: Sequence[Seat], controller: str = "per_robot",
              embodiment: str = "cobot") -> PhysicalSpec:
    """Return the spec of a physical team of `seats`: experts and checkpoints robot by robot
    (lockstep policies), or, with a model or a person in a seat, skill-controlled robots
    (where `scripted:expert` is the skill controller's own suggestion)."""
    one = one_partner(seats)
    if one is not None and one.kind in ("scripted", "learned"):
        make_policy(str(one.arg), task, embodiment)  # an unknown or foreign policy: now
        return PhysicalSpec(task, str(one.arg), embodiment=embodiment)
    if one is not None and one.kind == "llm":
        return PhysicalSpec(task, LLM, model=one.arg, controller=controller,
                            embodiment=embodiment)
    if any(s.kind in ("llm", "human") for s in seats):
        return PhysicalSpec(task, LLM, controller=controller, seats=tuple(seats),
                            embodiment=embodiment)
    return PhysicalSpec(task, SEATS, seats=tuple(seats), embodiment=embodiment)


def _seats(values: dict[str, Any], names: list[str], policy: str, embodiment: str
           ) -> tuple[tuple[Seat, ...] | None, str]:
    """Return (the --team seats or None, the policy they make)."""
    from coordbench.envs.physical.tasks import get_task

    if values["team"] is None:
        return None, policy
    parsed = parse_team(values["team"], FAMILY_SEATS.kinds, "physical")
    if isinstance(parsed, int):
        for name in names:  # a plain size: the task's own team, as before
            robots = get_task(name, embodiment).n_robots
            if parsed != robots:
                raise ConfigError(f"--team {parsed}: {name} has {robots} robots")
        return None, policy
    if policy == "expert" and not has_model(parsed):
        policy = SEATS  # robots played by experts and checkpoints, robot by robot
    return parsed, policy


class PhysicalPlayed(PlayedBase):
    """The physical suite's options: tasks, a policy or a team of robots."""

    options = OPTIONS
    out_name = "physical-{task}"
    play_label = "{task}"
    run_name = "eval"
    run_help = ("Evaluate a policy: success and cumulative phase rates with 95% CIs (per "
                "task); a model-driven team (--policy llm) also model calls, tokens and "
                "protocol failures.")
    metric = "success"
    more_metrics = ("drops", "robot_collisions", "partner_lag_s")

    def seed(self, values: dict[str, Any]) -> int | None:
        """Return None: the robots' models are not seeded."""
        return None

    def run(self, values: dict[str, Any]) -> RunPlan:
        """Return the evaluation's plan: each task's main rollouts (and phase-level ones)."""
        from coordbench.core.files import check_in_dir
        from coordbench.envs.physical.demo_files import load_demos

        policy, controller, phase_level = (values["policy"], values["controller"],
                                           values["phase_level"])
        if controller is not None and policy != LLM:
            raise ConfigError(f"--controller is for --policy llm, not {policy}")
        if policy == LLM and phase_level:
            raise ConfigError("--policy llm has no phase-level evaluation; drop --phase-level")
        if phase_level:
            check_in_dir(values["demos"], "--demos", "demonstrations folder")
        embodiment = embodiment_from(values)
        names = task_names(values["task"], embodiment)
        seats, policy = _seats(values, names, policy, embodiment)
        plan: list[tuple] = []
        for name in names:
            # a bad checkpoint or team (llm without --model, --model without llm) fails first
            spec = PhysicalSpec(name, policy, model=values["model"],
                                controller=controller or "per_robot", seats=seats,
                                embodiment=embodiment)
            if policy not in (LLM, SEATS):
                make_policy(policy, name, embodiment)
            plan.append((SUITE, spec, values["rollouts"]))
            if phase_level:
                path = values["demos"] / demos_name(name, embodiment)
                load_demos(path)
                plan += [(SUITE, PhysicalSpec(name, policy, f"phase{k}", str(path),
                                              embodiment=embodiment),
                          values["per_phase"]) for k in (1, 2, 3)]
        shown = team_label(seats or ()) if policy == SEATS else Path(policy).name
        aliases = None
        if policy == LLM:
            shown = f"llm {team_label(seats) if seats else values['model']} " \
                    f"({controller or 'per_robot'})"
            aliases = model_aliases(seats) if seats else {values["model"]}
        return RunPlan(plan, [f"{s.task} {shown} {s.protocol}" for _, s, _ in plan],
                       values["out"] or run_folder(embodiment), aliases,
                       lambda settings, replies: ModelResources(settings, replies)
                       if policy == LLM else None,
                       context={"names": names, "policy": policy, "shown": shown,
                                "embodiment": embodiment})

    def team_size(self, values: dict[str, Any], command: str) -> int:
        """Return the task's robots."""
        from coordbench.envs.physical.tasks import get_task

        return get_task(values["task"], embodiment_from(values)).n_robots

    def cell(self, values: dict[str, Any], seats: Sequence[Seat]) -> tuple[Any, Any]:
        """Return (suite, spec) of a team of `seats`."""
        return SUITE, cell_spec(values["task"], seats, embodiment=embodiment_from(values))

    def episodes(self, values: dict[str, Any]) -> int | None:
        """Return the rollouts of a cell or session."""
        return values["rollouts"]

    def check_team(self, values: dict[str, Any], suite: Any, spec: Any, seats: int) -> None:
        """Every seed of a task can be played (the spec checked itself)."""

    def check_partners(self, seats: Sequence[Seat]) -> None:
        """Raise ConfigError for models beside experts or checkpoints."""
        if len({s.kind == "llm" for s in seats}) > 1:
            raise ConfigError("crossplay physical pairs models with models, or experts and "
                              "checkpoints with each other: a model makes the team "
                              "skill-controlled, where an expert is another agent (the skill "
                              "controller's suggestion) and a learned robot cannot sit")



PLAYED = PhysicalPlayed()
