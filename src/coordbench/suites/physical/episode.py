"""Rollouts of a policy on a physical task, many seeds in lockstep, recorded as trajectories.

A policy maps the current environments to actions: `act(envs) -> [(n, 9) per env]`, after
`reset(envs)`. Learned policies batch their forward pass over the lockstep environments;
experts run one decentralized phase machine per robot.

A model-driven team (`arun_skill_episode`) plays one episode at a time instead: its robots run
skills (`agents/physical/skills.py`) and the model is awaited only at decision points, when a
robot's skill has ended; the physics between them is stepped synchronously.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from coordbench.agents.physical.expert import Shadow, TakeOver
from coordbench.agents.physical.skills import (
    FALLBACK_WAIT_S,
    WAIT,
    Choice,
    RobotView,
    SkillRobot,
)
from coordbench.agents.team.counterfactual import swap_for
from coordbench.agents.team.seats import Seat
from coordbench.core.trajectory import (
    AgentSpec,
    MessageEvent,
    PhysicalCouplingEvent,
    PhysicalPhaseEvent,
    PhysicalPosesEvent,
    Trajectory,
)
from coordbench.envs.physical import poses as pose
from coordbench.envs.physical.embodiment import embodiment_of, make_env
from coordbench.envs.physical.env import PhysicalEnv
from coordbench.envs.physical.scene import CONTROL_DT
from coordbench.envs.physical.tasks import get_task
from coordbench.runner import Limits, Recorder

if TYPE_CHECKING:  # the model layer is imported only where a model-driven team plays
    from coordbench.agents.physical.llm import SkillController


class Policy(Protocol):
    """What a physical-suite policy provides."""

    name: str

    def reset(self, envs: list[PhysicalEnv], resume: bool = False) -> None:
        """Start episodes in `envs` (resume: from a restored mid-task state)."""

    def act(self, envs: list[PhysicalEnv]) -> list[np.ndarray]:
        """Return one (n, 9) action array per environment."""


# what can take a robot over in a counterfactual replay besides `clean` (which the injected
# failures themselves obey): the clean scripted expert (`agents.physical.expert.Shadow`)
REFERENCES = {"expert": Shadow}
# the most environments of an embodiment stepped in lockstep: a G1 scene's model copy holds
# its meshes and their bounding-volume trees, about 160 MB an environment (16 made 2.5 GB)
LOCKSTEP = {"g1": 4}
DROP_STEPS = 5
POSE_EVERY = 5  # control steps between pose samples: 10 Hz of simulated time at 50 Hz
POSE_UNIT = 1e-4  # 0.1 mm and 1e-4 rad: invisible in any frame


@dataclass
class CouplingMonitor:
    """Turns per-step physical state into coupling events."""

    n: int
    first_hold: int | None = None
    lag_done: bool = False
    lost_for: int = 0
    lost_z: float = 0.0
    dropped: bool = False
    armed: bool = False
    contact_run: int = 0
    events: list[PhysicalCouplingEvent] = field(default_factory=list)
    who: np.ndarray | None = None  # the robots that handle the main object (task constant)

    def _holders(self, env: PhysicalEnv) -> tuple[np.ndarray, int]:
        if self.who is None:
            self.who = np.array(env.task.object_holders or range(env.n))
        return self.who, env.task.holders_needed or len(self.who)

    def update(self, env: PhysicalEnv) -> None:
        """Inspect the state after one control step."""
        t, holds = env.steps, env.holds()
        if holds.any() and self.first_hold is None:
            self.first_hold = t
        if holds.all() and not self.lag_done and self.first_hold is not None:
            self.lag_done = True
            self.events.append(PhysicalCouplingEvent(
                t=t, kind="partner_lag", robots=list(range(self.n)),
                value=round((t - self.first_hold) * CONTROL_DT, 3)))
        z = float(env.data.xpos[env.obj][2])
        lifted = z - env.obj_z0 > 0.03
        # a drop: fewer of the robots that handle the main object hold it than the task
        # needs (all of them when carrying together, one in a handover) for 0.1 s while it
        # was up, and it comes down 2 cm (touch sensing flickers for a step or two while the
        # fingers slide, and a frame let go onto its peg stays up: neither is a drop)
        who, needed = self._holders(env)
        held = int(holds[who].sum())
        self.armed |= held >= needed
        if self.armed and (lifted or self.lost_for) and held < needed and env.phase < 3:
            if self.lost_for == 0:
                self.lost_z = z
            self.lost_for += 1
            if self.lost_for >= DROP_STEPS and not self.dropped and z < self.lost_z - 0.02:
                self.dropped = True
                self.events.append(PhysicalCouplingEvent(
                    t=t, kind="drop", robots=[int(i) for i in who[~holds[who]]]))
        else:
            self.lost_for, self.dropped = 0, False
        touching = env.robot_contacts() > 0
        if touching:
            self.contact_run += 1
        elif self.contact_run:
            self.events.append(PhysicalCouplingEvent(t=t, kind="robot_collision",
                                                     robots=list(range(self.n)),
                                                     value=float(self.contact_run)))
            self.contact_run = 0


@dataclass
class PoseTrack:
    """The pose samples of one rollout, turned into its physical_poses event at the end."""

    layout: pose.PoseLayout
    steps: list[int] = field(default_factory=list)
    robots: list[np.ndarray] = field(default_factory=list)
    bodies: list[np.ndarray] = field(default_factory=list)
    joints: list[np.ndarray] = field(default_factory=list)

    def add(self, env: PhysicalEnv) -> None:
        """Sample the current state (once per step: the last sample may repeat a grid one)."""
        if self.steps and self.steps[-1] == env.steps:
            return
        r, b, j = pose.sample(env.data, self.layout)
        self.steps.append(env.steps)
        self.robots.append(r)
        self.bodies.append(b)
        self.joints.append(j)

    def event(self) -> PhysicalPosesEvent:
        """Return the samples as one event: integers of POSE_UNIT, each row after the first
        the change since the previous one (2.5x shorter in JSON than rounded decimals)."""
        def coded(rows: list[np.ndarray]) -> np.ndarray:
            counts = np.rint(np.stack(rows) / POSE_UNIT).astype(np.int64)
            counts[1:] = np.diff(counts, axis=0)
            return counts

        bodies, joints = coded(self.bodies), coded(self.joints)
        return PhysicalPosesEvent(
            t=self.steps[-1], every=POSE_EVERY, unit=POSE_UNIT, steps=list(self.steps),
            robots=coded(self.robots).tolist(),
            bodies={name: bodies[:, k].tolist() for k, name in enumerate(self.layout.bodies)},
            joints={name: joints[:, k].tolist() for k, name in enumerate(self.layout.joints)})


@dataclass
class EpisodeRecord:
    """Per-step arrays of one rollout (for demonstrations)."""

    states: list[np.ndarray] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)  # labels: the clean expert action
    executed: list[np.ndarray] = field(default_factory=list)  # what was applied
    obs: list[np.ndarray] = field(default_factory=list)
    phase: list[int] = field(default_factory=list)


def run(task_name: str, policy: Policy, seeds: list[int], *, record: bool = False,
        starts: list[tuple[np.ndarray, int, int]] | None = None, budget: int | None = None,
        until_phase: int = 3, condition: str = "", keys: list[str] | None = None,
        poses: bool = True, embodiment: str = "cobot"
        ) -> tuple[list[Trajectory], list[EpisodeRecord]]:
    """Roll `policy` out on `task_name` for each seed in lockstep; return (trajectories,
    per-step records if `record`).

    `starts` (phase-level evaluation): per seed, (state, step, completed phases) to restore
    instead of a fresh reset; `until_phase` stops an episode once that many phases are done;
    `budget` caps control steps after the start (default: the task's limit). `keys` name the
    episodes inside `condition` (default: seed<seed>). `poses` records the robots' and
    objects' poses every POSE_EVERY control steps from the start and at the last step, as a
    physical_poses event (replay without re-simulating). `embodiment`: cobot or g1 robots.

    In a counterfactual replay that hands a robot to the `expert` reference
    (`agents.team.counterfactual`), that robot is played by the clean scripted expert from
    the swap's step on (`TakeOver`); steps are control steps, the `t` of the episode's events.
    """
    most = LOCKSTEP.get(embodiment)
    if most is not None and len(seeds) > most:  # a few at a time: see LOCKSTEP
        trajectories: list[Trajectory] = []
        records: list[EpisodeRecord] = []
        for a in range(0, len(seeds), most):
            t, r = run(task_name, policy, seeds[a:a + most], record=record,
                       starts=None if starts is None else starts[a:a + most], budget=budget,
                       until_phase=until_phase, condition=condition,
                       keys=None if keys is None else keys[a:a + most], poses=poses,
                       embodiment=embodiment)
            trajectories += t
            records += r
        return trajectories, records
    task = get_task(task_name, embodiment)
    swap = swap_for(task.n_robots, REFERENCES, "physical")
    if swap is not None:
        policy = TakeOver(policy, swap.seat, swap.step)
    # one task object per environment: tasks keep per-episode state (MoveHouse's door
    # timer), which rollouts sharing one object in lockstep would overwrite for each other
    envs = [make_env(task_name, embodiment) for _ in seeds]
    for k, (env, seed) in enumerate(zip(envs, seeds, strict=True)):
        env.reset(seed)
        if starts is not None:
            state, step, phase = starts[k]
            env.set_state(state, step, phase)
    policy.reset(envs, resume=starts is not None)
    start_steps = [env.steps for env in envs]
    limit = [s + (budget or task.limit) for s in start_steps]
    monitors = [CouplingMonitor(task.n_robots) for _ in envs]
    records = [EpisodeRecord() for _ in envs]
    tracks: list[PoseTrack] = []
    if poses and envs:
        # the layout depends on the task's model only, which every environment here shares
        layout = pose.pose_layout(envs[0])
        tracks = [PoseTrack(layout) for _ in envs]
        for track, env in zip(tracks, envs, strict=True):
            track.add(env)
    phase_events: list[list[PhysicalPhaseEvent]] = [[] for _ in envs]
    active = [True] * len(envs)
    while any(active):
        idx = [k for k, a in enumerate(active) if a]
        acts = policy.act([envs[k] for k in idx])
        for k, a in zip(idx, acts, strict=True):
            env = envs[k]
            if record:
                records[k].states.append(env.get_state())
                records[k].obs.append(env.local_obs())
                label = policy.label(env) if hasattr(policy, "label") else a
                records[k].actions.append(np.asarray(label, dtype=np.float32))
                records[k].executed.append(np.asarray(a, dtype=np.float64))
                records[k].phase.append(env.phase)
            before = env.phase
            env.step(a)
            monitors[k].update(env)
            for p in range(before, env.phase):
                ph = task.phases[p]
                phase_events[k].append(PhysicalPhaseEvent(
                    t=env.steps, phase=p + 1, name=ph.name, collaborative=ph.collaborative))
            stop = env.phase >= until_phase or env.steps >= limit[k] or \
                env.unstable_at is not None
            if tracks and (stop or (env.steps - start_steps[k]) % POSE_EVERY == 0):
                tracks[k].add(env)
            if stop:
                active[k] = False
    trajectories = []
    for k, (env, seed) in enumerate(zip(envs, seeds, strict=True)):
        env.close()
        rec = Recorder(
            suite="physical", episode_id=f"{condition or task_name}/"
                                         f"{keys[k] if keys else f'seed{seed:04d}'}",
            task_id=task_name, seed=int(seed), policy=policy.name,
            team=[AgentSpec(id=f"robot{i}", driver=getattr(policy, "drivers", None) and
                            policy.drivers[i] or policy.name) for i in range(env.n)],
            params=_params(task, env, start_steps[k], starts[k][2] if starts else 0,
                           until_phase))
        rec.emit(*sorted(phase_events[k] + monitors[k].events, key=lambda e: e.t))
        if tracks:
            rec.emit(tracks[k].event())
        trajectories.append(rec.finish(env.steps, success=env.phase >= until_phase,
                                       stop=env.unstable_reason()))
    return trajectories, records


def _params(task, env: PhysicalEnv, start_step: int = 0, start_phase: int = 0,
            until_phase: int = 3) -> dict[str, Any]:
    """Return a rollout's header parameters (a G1 rollout's also name the embodiment, the
    robot model file and its sha256; a header without `embodiment` is a CoBot's, which keeps
    the CoBot's trajectories byte for byte what they were)."""
    out = {"n_robots": env.n, "start_step": start_step, "start_phase": start_phase,
           "until_phase": until_phase, "control_dt": CONTROL_DT, "movement": task.movement,
           "coupling": task.coupling, "collaborative": [p.collaborative for p in task.phases]}
    if env.embodiment != "cobot":
        from coordbench.envs.physical.g1 import model_sha256

        out.update(embodiment=env.embodiment, robot_model=Path(env.model_path).name,
                   robot_model_sha256=model_sha256(env.model_path),
                   action_dim=embodiment_of(env).action_dim)
    return out



async def arun_skill_episode(task_name: str, seed: int, episode_id: str,
                             controller: SkillController, *,
                             alias: str, limits: Limits | None = None, poses: bool = True,
                             seats: tuple[Seat, ...] | None = None,
                             embodiment: str = "cobot") -> Trajectory:
    """Play one episode of `task_name` from a fresh reset with `seed`, every robot running the
    skills a model picks through `controller` (`agents.physical.llm`); return its trajectory.

    A decision point is a step where some robot has no skill (the start, a skill that ended):
    the controller is awaited, each robot starts its choice, or waits FALLBACK_WAIT_S after an
    unusable reply, and the physics goes on. Each choice is recorded as a message event of
    phase "skill" from the robot to no one (recipients []): JSON content with the skill (and
    seconds), the controller's suggestion, how the previous skill ended, and for a fallback
    the reason. Model calls, phases, coupling events and poses are recorded as for any policy;
    a provider failure raises ProviderFailed with the errored trajectory on it.

    In a counterfactual replay that hands a robot to the `expert` reference, a shadowing
    clean expert (`Shadow`) plays it from the swap's step on: its model is not asked again.
    """
    env = make_env(task_name, embodiment)
    task = env.task
    env.reset(seed)
    robots = [SkillRobot(task.expert(env, i, np.random.default_rng([env.seed, i, 7919]), 0.0))
              for i in range(env.n)]
    params = {**_params(task, env), "controller": controller.name,
              "skill_timeout_s": robots[0].timeout_s}
    drivers = ["llm"] * env.n if seats is None else [x.driver for x in seats]
    models = ({f"robot{i}": alias for i in range(env.n)} if seats is None else
              {f"robot{i}": str(x.arg) for i, x in enumerate(seats) if x.kind == "llm"})
    rec = Recorder(suite="physical", episode_id=episode_id, task_id=task_name, seed=int(seed),
                   policy="llm", models=models,
                   team=[AgentSpec(id=f"robot{i}", role="robot", driver=drivers[i])
                         for i in range(env.n)], params=params, limits=limits)
    monitor = CouplingMonitor(env.n)
    track = PoseTrack(pose.pose_layout(env)) if poses else None
    limit_s = task.limit * CONTROL_DT
    reason = None
    swap = swap_for(env.n, REFERENCES, "physical")
    shadow = None if swap is None else Shadow(env, swap.seat, swap.step)
    executed: np.ndarray | None = None  # what the shadowed robot did at the last step
    with rec:
        if track:
            track.add(env)
        while not env.done:
            rec.t = env.steps
            taken = shadow.seat if shadow is not None and shadow.plays(env) else None
            need = [i for i, r in enumerate(robots) if r.running is None and i != taken]
            if need:
                reason = rec.stop_reason()
                if reason:
                    break
                await _decide(rec, env, robots, need, controller, limit_s, taken)
                reason = rec.stop_reason()
                if reason:
                    break
            before = env.phase
            acts = [None if i == taken else r.act(env.sense(i)) for i, r in enumerate(robots)]
            if shadow is not None:
                own = shadow.act(env, executed)  # before the step: dropped
                if taken is not None:
                    acts[shadow.seat] = own
                executed = acts[shadow.seat]
            env.step(np.stack(acts))
            seen = len(monitor.events)
            monitor.update(env)
            rec.emit(*(PhysicalPhaseEvent(t=env.steps, phase=p + 1, name=task.phases[p].name,
                                          collaborative=task.phases[p].collaborative)
                       for p in range(before, env.phase)), *monitor.events[seen:])
            if track and env.steps % POSE_EVERY == 0:
                track.add(env)
    if track:
        track.add(env)  # the last step (skipped if it was a grid sample)
        rec.emit(track.event())
    return rec.finish(env.steps, success=env.phase >= 3, stop=reason or env.unstable_reason(),
                      detail="step limit reached")


async def _decide(rec: Recorder, env: PhysicalEnv, robots: list[SkillRobot], need: list[int],
                  controller: SkillController, limit_s: float, taken: int | None = None
                  ) -> None:
    """Ask `controller` for the robots in `need` and start what it chose (see
    `arun_skill_episode`); record the calls, then one skill event per robot that changed
    (none for robot `taken`, which a counterfactual replay's expert plays now)."""
    views = [RobotView(i, env.sense(i), r) for i, r in enumerate(robots)]
    decided = await controller.decide(views, need, limit_s)
    rec.flush_calls()
    for i in sorted(decided):
        if i == taken:
            continue
        r, d = robots[i], decided[i]
        choice = d.choice or Choice(WAIT, FALLBACK_WAIT_S)
        if i not in need and choice == r.running:
            continue  # the team controller re-issued a busy robot's running skill
        after = r.ended if r.running is None else (f"{r.running.skill}: interrupted after "
                                                   f"{r.elapsed:.2f} s")
        note: dict[str, Any] = {**choice.as_dict(), "suggested": r.suggestion, "after": after}
        if d.choice is None:
            note["fallback"] = d.error or "no usable skill"
        r.start(choice, views[i].sensing)
        rec.emit(MessageEvent(t=env.steps, phase="skill", sender=i, recipients=[],
                              content=json.dumps(note)))
