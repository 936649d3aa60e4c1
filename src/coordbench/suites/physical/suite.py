"""Evaluation protocols of the physical suite, recorded in resumable run directories.

- Main: rollouts with seeds 1..N from a fresh reset; success and cumulative phase rates.
- Phase level: for each demonstration and each phase k, restore the recorded state at the
  start of phase k (phases before k count as done) and roll out until phase k completes or
  a per-phase budget ends; collaborative vs non-collaborative phase success.

Policy `llm` (with a model alias and a controller, per_robot or team) is a model-driven team:
its robots run the skills the model picks (`agents/physical/skills.py`, `llm.py`), episodes
are played concurrently (as STAT's model-driven teams), main protocol only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordbench.agents.physical.expert import ExpertPolicy
from coordbench.agents.physical.llm import CONTROLLERS, make_controller
from coordbench.agents.physical.seats import SeatPolicies
from coordbench.agents.team.human import seat_session
from coordbench.agents.team.seats import Seat, has_model, team_label
from coordbench.core.provenance import file_digest
from coordbench.core.rundir import RunDir, safe_name
from coordbench.core.trajectory import Trajectory
from coordbench.envs.physical.demo_files import load_demos
from coordbench.envs.physical.tasks import get_task
from coordbench.errors import ConfigError, RunDirError
from coordbench.llm.client import harness_for
from coordbench.metrics.physical import episode_metrics
from coordbench.runner import Case, ModelResources, PlayContext, play_concurrently, run_condition

from .episode import Policy, arun_skill_episode, run

PHASE_BUDGET = 600  # control steps (12 s) per phase in phase-level evaluation
LLM = "llm"  # the policy name of a model-driven team
SEATS = "seats"  # the policy name of a team of policies, robot by robot (--team)


EXPERTS = ("expert", "expert_noisy")
EXPERT_DIALS = ("fail_at",)  # the failures a physical expert can be given (`expert+fail_at=T`)


def expert_variant(spec: str) -> tuple[str, int | None] | None:
    """Return (expert or expert_noisy, its injected failure's control step or None) of an
    expert policy name, e.g. `expert+fail_at=120` (the one-shot let-go of
    `ExpertPolicy.fail_at`); None for another policy (a checkpoint); ConfigError (one line)
    for a part that is not fail_at=STEP."""
    from coordbench.agents.team.dials import check_applicable, parse_dials

    base, plus, rest = spec.partition("+")
    if base not in EXPERTS:
        return None
    if not plus:
        return base, None
    try:
        dials = parse_dials([p.strip() for p in rest.split("+")])
        check_applicable(dials, EXPERT_DIALS, "a physical expert")
    except ConfigError as e:
        raise ConfigError(f"{spec}: {str(e).removeprefix('--dial ')}") from None
    return base, None if dials is None else dials.fail_at


def make_policy(spec: str, task: str, embodiment: str = "cobot") -> Policy:
    """Return the policy named `spec` for `task` played by `embodiment`: expert,
    expert_noisy (either with a one-shot failure, `expert+fail_at=T`, CoBot only), or a
    trained checkpoint path (which must have been trained on `task` and that embodiment). A
    model-driven team (`llm`) is no lockstep policy: `PhysicalSuite.play` plays it."""
    if spec == LLM:
        raise ConfigError("--policy llm is a model-driven team, played by PhysicalSuite.play")
    if spec == SEATS:
        raise ConfigError(f"--policy {SEATS} is a team spec: give --team")
    expert = expert_variant(spec)
    if expert is not None:
        base, fail_at = expert
        if fail_at is not None and embodiment != "cobot":
            # a G1's hands close by finger synergies, not one grip command to drop
            raise ConfigError(f"{spec}: fail_at is a CoBot expert's failure, not a "
                              f"{embodiment}'s")
        return ExpertPolicy(0.0 if base == "expert" else 1.0, fail_at=fail_at)
    from coordbench.learn.imitation import load_policy

    policy = load_policy(Path(spec))
    if policy.cfg.task != task:
        raise ConfigError(f"policy {spec} was trained on {policy.cfg.task}, not {task}")
    trained = getattr(policy.cfg, "embodiment", "cobot")
    if trained != embodiment:
        raise ConfigError(f"policy {spec} was trained on {trained} robots, not {embodiment}")
    robots = get_task(task, embodiment).n_robots
    if policy.cfg.n_robots != robots:
        raise ConfigError(f"policy {spec} was trained for {policy.cfg.n_robots} robots; "
                          f"{task} has {robots}")
    return policy


def policy_label(spec: str) -> str:
    """Return a name usable in a condition id (a checkpoint's includes its content digest, so
    retraining into the same path starts a new condition instead of resuming stale ones)."""
    if expert_variant(spec) is not None:
        return spec
    if not Path(spec).is_file():
        return f"ckpt-{Path(spec).stem}"
    return f"ckpt-{Path(spec).stem}-{file_digest(spec)}"


@dataclass(frozen=True)
class PhysicalSpec:
    """A physical evaluation condition: task, policy (expert, expert_noisy, a checkpoint
    path, or llm: a model-driven team with `model`, an alias, and `controller`, per_robot or
    team), and protocol: `main` (fresh resets, seeds 1..N) or `phaseK` (from the starts of
    phase K in the demonstrations file `demos`)."""

    task: str
    policy: str
    protocol: str = "main"
    demos: str | None = None
    model: str | None = None
    controller: str = "per_robot"
    # a mixed team (policy llm): each robot's seat, llm:ALIAS or scripted:expert (the skill
    # controller's own suggestion), in robot order; None: every robot is `model`'s
    seats: tuple[Seat, ...] | None = None
    embodiment: str = "cobot"  # the robots: cobot | g1 (Unitree G1 humanoids)

    def __post_init__(self) -> None:
        task = get_task(self.task, self.embodiment)
        if self.seats is not None:
            seats = tuple(x if isinstance(x, Seat) else Seat(**x) for x in self.seats)
            object.__setattr__(self, "seats", seats)
            if self.model:
                raise ConfigError("--team names each robot's model: drop --model")
            if len(seats) != task.n_robots:
                raise ConfigError(f"--team names {len(seats)} seats; {self.task} has "
                                  f"{task.n_robots} robots")
            if self.policy == SEATS:
                self._check_policy_seats(seats)
            elif self.policy != LLM:
                raise ConfigError(f"--team seats are for --policy llm, not {self.policy}")
            else:
                self._check_skill_seats(seats)
        elif self.policy == SEATS:
            raise ConfigError(f"--policy {SEATS} plays a team spec: give --team")
        if self.protocol not in ("main", "phase1", "phase2", "phase3"):
            raise ConfigError(f"unknown physical protocol {self.protocol!r}; choose from "
                              "main, phase1, phase2, phase3")
        if self.protocol != "main" and not self.demos:
            raise ConfigError("phase-level evaluation needs a demonstrations file")
        if self.policy == LLM:
            if not self.model and self.seats is None:
                raise ConfigError("--policy llm needs --model ALIAS (or --team seats)")
            if self.controller not in CONTROLLERS:
                raise ConfigError(f"unknown --controller {self.controller!r}; choose from "
                                  f"{', '.join(CONTROLLERS)}")
            if self.protocol != "main":
                raise ConfigError("--policy llm has no phase-level evaluation (main only)")
        elif self.model:
            raise ConfigError(f"--model is for --policy llm, not {self.policy}")
        elif self.controller != "per_robot":
            raise ConfigError(f"--controller is for --policy llm, not {self.policy}")

    def _check_skill_seats(self, seats: tuple[Seat, ...]) -> None:
        """Check the seats of a skill-controlled team (models, a person, the suggestion)."""
        if self.controller != "per_robot":
            raise ConfigError("a mixed team needs --controller per_robot (one model per "
                              "robot)")
        bad = [x for x in seats if x.kind not in ("llm", "scripted", "human")]
        if bad:
            raise ConfigError(f"a seat of a skill-controlled physical team is llm:ALIAS, "
                              f"scripted:expert or human, not {bad[0].kind} (learned robots "
                              f"play without skills: a team of policies, --policy {SEATS})")
        bad = [x for x in seats if x.kind == "scripted" and x.arg != "expert"]
        if bad:
            raise ConfigError(f"a physical scripted seat is scripted:expert (the skill "
                              f"controller's suggestion), not scripted:{bad[0].arg}")
        if not any(x.kind in ("llm", "human") for x in seats):
            raise ConfigError("--team names no llm seat: a team of scripted robots is "
                              "--policy expert")

    def _check_policy_seats(self, seats: tuple[Seat, ...]) -> None:
        """Check the seats of a team of policies (experts and checkpoints, robot by robot)."""
        for i, x in enumerate(seats):
            if x.kind == "scripted" and expert_variant(str(x.arg)) is not None:
                make_policy(str(x.arg), self.task, self.embodiment)  # a bad failure: one line
                continue
            if x.kind != "learned":
                raise ConfigError(f"robot{i}: a team of policies seats scripted:expert, "
                                  f"scripted:expert_noisy (+fail_at=STEP) or "
                                  f"learned:CHECKPOINT, not {x.driver}")
            make_policy(str(x.arg), self.task, self.embodiment)  # missing or foreign: one line

    def seat_policy(self, i: int) -> str:
        """Return the policy (expert, expert_noisy, a checkpoint) robot i plays."""
        assert self.seats is not None
        return str(self.seats[i].arg)

    @property
    def label(self) -> str:
        """Return the policy as a condition name part (an llm team's names its model and
        controller)."""
        if self.seats is not None and self.policy == SEATS:
            return safe_name("team-" + "+".join(policy_label(str(x.arg))
                                                for x in self.seats))
        if self.seats is not None:
            return safe_name(f"team-{team_label(self.seats)}-{self.controller}")
        if self.policy == LLM:
            return safe_name(f"llm-{self.model}-{self.controller}")
        return policy_label(self.policy)

    def aliases(self) -> list[str | None]:
        """Return each robot's model alias (None: a scripted seat)."""
        if self.seats is None:
            return [self.model] * get_task(self.task, self.embodiment).n_robots
        return [x.arg if x.kind == "llm" else None for x in self.seats]

    def human(self) -> int | None:
        """Return the robot a person plays (None: none)."""
        return next((i for i, x in enumerate(self.seats or ()) if x.kind == "human"), None)

    @property
    def phase(self) -> int:
        """Return K of phaseK (0 for main)."""
        return 0 if self.protocol == "main" else int(self.protocol[-1])


MAX_ROLLOUTS = 1_000_000

class PhysicalSuite:
    """The physical suite on the one runner: lockstep rollouts of a team policy."""

    name = "physical"
    headline = ("success", "p1", "p2", "p3")
    batch = 16

    def condition(self, spec: PhysicalSpec) -> str:
        """Return the condition's directory name (a G1 condition's names the embodiment; a
        CoBot's keeps the name it always had)."""
        body = "" if spec.embodiment == "cobot" else f"{spec.embodiment}_"
        return f"physical_{spec.task}_{body}{spec.label}_{spec.protocol}"

    def manifest(self, spec: PhysicalSpec) -> dict[str, Any]:
        """Return the spec's fields (the demonstrations file only where it is used, model and
        controller only for an llm team: other conditions keep their manifests)."""
        out: dict[str, Any] = {"task": spec.task, "policy": spec.policy,
                               "protocol": spec.protocol}
        if spec.policy == LLM:
            out.update(model=spec.model, controller=spec.controller)
        if spec.seats is not None:
            out["seats"] = [{"kind": x.kind, "arg": x.arg} for x in spec.seats]
        if spec.embodiment != "cobot":
            from coordbench.envs.physical.g1 import model_sha256, resolve_model

            # a resume with another robot model file is refused, never mixed
            out.update(embodiment=spec.embodiment,
                       robot_model_sha256=model_sha256(resolve_model()))
        return out if spec.demos is None else {**out, "demos": spec.demos}

    def admits(self, run: RunDir, spec: PhysicalSpec) -> None:
        """Raise RunDirError where `run` holds physical runs of another embodiment: the
        CoBot's and the G1's never mix in a folder."""
        for cond, fields in run.conditions.items():
            if fields.get("suite") == self.name and \
                    fields.get("embodiment", "cobot") != spec.embodiment:
                raise RunDirError(f"{run.path} holds {fields.get('embodiment', 'cobot')} runs "
                                  f"({cond}); run the {spec.embodiment} into another --out")

    def cases(self, spec: PhysicalSpec, limit: int | None = None) -> list[Case]:
        """Return seeds 1..limit (main) or the first `limit` demonstrations' phase starts."""
        if limit is not None and not 1 <= limit <= MAX_ROLLOUTS:
            # checked here too: `coordbench run --physical N` reaches the suite unchecked
            raise ConfigError(f"physical rollouts per task must be >= 1 and <= {MAX_ROLLOUTS}"
                              f", got {limit}")
        if spec.phase == 0:
            return [Case(f"seed{s:04d}", s) for s in range(1, (limit or 100) + 1)]
        data = load_demos(Path(spec.demos))
        k = spec.phase
        out = []
        for e in range(min(limit or 50, len(data["seeds"]))):
            row0 = int(data["episode_start"][e])
            step = 0 if k == 1 else int(data["phase_steps"][e, k - 2])
            out.append(Case(f"demo{e:03d}", (int(data["seeds"][e]),
                                             (data["states"][row0 + step], step, k - 1))))
        return out

    def unit_size(self, spec: PhysicalSpec) -> int:
        """Return the lockstep batch (a model-driven team: enough to keep calls in flight)."""
        return 8 if spec.policy == LLM else self.batch

    def play(self, spec: PhysicalSpec, cases: list[Case], ctx: PlayContext
             ) -> Iterator[tuple[Case, Trajectory]] | AsyncIterator[tuple[Case, Trajectory]]:
        """Yield (case, trajectory) for every case: `batch` rollouts in lockstep, or, for a
        model-driven team, episodes played concurrently as each ends."""
        if spec.policy == LLM:
            return self._play_llm(spec, cases, ctx)
        return self._play_batched(spec, cases)

    def _play_llm(self, spec: PhysicalSpec, cases: list[Case], ctx: PlayContext
                  ) -> AsyncIterator[tuple[Case, Trajectory]]:
        res = ctx.resources or ModelResources()
        cond = self.condition(spec)

        models = spec.seats is None or has_model(spec.seats)
        person = spec.human()
        session = None if person is None else seat_session(res, person, "physical")

        async def one(case: Case) -> Trajectory:
            human = None if person is None else (person, session, f"{cond}/{case.key}")
            controller = make_controller(spec.controller,
                                         get_task(spec.task, spec.embodiment),
                                         harness_for(res.harness) if models else None,
                                         spec.model or "", res.max_reply_tokens,
                                         spec.aliases(), human)
            return await arun_skill_episode(spec.task, case.data, f"{cond}/{case.key}",
                                            controller, alias=spec.model or "",
                                            limits=ctx.limits, seats=spec.seats,
                                            embodiment=spec.embodiment)

        return play_concurrently(cases, one, ctx)

    def _play_batched(self, spec: PhysicalSpec, cases: list[Case]
                      ) -> Iterator[tuple[Case, Trajectory]]:
        if spec.policy == SEATS:
            # one policy object per distinct seat policy: each keeps its own state
            made = {name: make_policy(name, spec.task, spec.embodiment)
                    for name in dict.fromkeys(spec.seat_policy(i)
                                              for i in range(len(spec.seats or ())))}
            policy: Any = SeatPolicies([made[spec.seat_policy(i)]
                                        for i in range(len(spec.seats or ()))],
                                       [x.driver for x in spec.seats or ()])
        else:
            policy = make_policy(spec.policy, spec.task, spec.embodiment)
        cond = self.condition(spec)
        for a in range(0, len(cases), self.batch):
            chunk = cases[a:a + self.batch]
            if spec.phase == 0:
                trs = run(spec.task, policy, [c.data for c in chunk], condition=cond,
                          keys=[c.key for c in chunk], embodiment=spec.embodiment)[0]
            else:
                trs = run(spec.task, policy, [c.data[0] for c in chunk],
                          starts=[c.data[1] for c in chunk], until_phase=spec.phase,
                          budget=PHASE_BUDGET, condition=cond,
                          keys=[c.key for c in chunk], embodiment=spec.embodiment)[0]
            yield from zip(chunk, trs, strict=True)

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return success, phases reached, failing phase and coupling numbers."""
        return episode_metrics(trajectory)


SUITE = PhysicalSuite()


def _play(run_dir: RunDir, spec: PhysicalSpec, n: int, **options: Any) -> list[Trajectory]:
    cond = run_condition(run_dir, SUITE, spec, limit=n, **options)
    return [run_dir.load_episode(cond, c.key) for c in SUITE.cases(spec, n)]


def evaluate_main(task_name: str, policy_spec: str, rollouts: int, run_dir: RunDir,
                  **options: Any) -> list[Trajectory]:
    """Run (or resume) `rollouts` episodes with seeds 1..N; return their trajectories
    (options: those of `runner.run_conditions`, e.g. executor, workers, progress)."""
    make_policy(policy_spec, task_name)  # a bad checkpoint fails before any work
    return _play(run_dir, PhysicalSpec(task_name, policy_spec), rollouts, **options)


def evaluate_phases(task_name: str, policy_spec: str, demos: Path, run_dir: RunDir, *,
                    per_phase: int = 50, **options: Any) -> dict[int, list[Trajectory]]:
    """Run (or resume) phase-level rollouts from the demonstrations' phase starts; return
    {phase: trajectories}."""
    load_demos(demos)
    make_policy(policy_spec, task_name)
    return {k: _play(run_dir, PhysicalSpec(task_name, policy_spec, f"phase{k}", str(demos)),
                     per_phase, **options) for k in (1, 2, 3)}


def plan_items(p: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items, progress labels) of the default benchmark's physical section:
    each task under each policy (none when `rollouts` is 0)."""
    from coordbench.envs.physical.tasks import TASKS

    if p["rollouts"] <= 0:
        return [], []
    tasks = list(TASKS) if p["tasks"] == "all" else p["tasks"]
    items = [(SUITE, PhysicalSpec(task, pol), p["rollouts"])
             for task in tasks for pol in p["policies"]]
    return items, [f"physical {task} {pol}" for task in tasks for pol in p["policies"]]


def api_condition(options: dict[str, Any]) -> tuple[PhysicalSuite, PhysicalSpec, int | None]:
    """Return (suite, spec, rollouts) from `coordbench.evaluate("physical", ...)`'s options."""
    from coordbench.envs.physical.embodiment import use_g1_model

    limit = options.pop("rollouts", 100)
    use_g1_model(options.pop("g1_model", None))
    return SUITE, PhysicalSpec(**options), limit
