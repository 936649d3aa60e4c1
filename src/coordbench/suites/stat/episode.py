"""A STAT step as a trajectory event (`step_event`, every STAT episode's), and one episode
played by a team of minds (model-driven or rule-based): the step glue between the
environment, the team's protocol, and the recorder.

Each step, agents whose mask leaves one action take it; if any agent has a choice, the team
runs its protocol's communicate phase and every mind decides (`agents/stat/llm.py`,
`agents/stat/rule.py`), and the
step's messages and model calls are recorded before the joint step is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coordbench.agents.stat.seats import SeatPolicies
from coordbench.agents.team.counterfactual import current
from coordbench.agents.team.dials import with_message_cost
from coordbench.agents.team.protocols import ProtocolTeam, message_events
from coordbench.core.trajectory import AgentSpec, Conflict, StatStepEvent, Trajectory
from coordbench.envs.stat.config import IDLE, SELECT0
from coordbench.envs.stat.layouts import layout_seed, make_layouts
from coordbench.envs.stat.observe import observe
from coordbench.envs.stat.vec import PerEnvRng, StatVecEnv
from coordbench.runner import Limits, Recorder


def header_params(spec, k: int, task_positions: np.ndarray) -> dict[str, Any]:
    """Return the header params of episode `k` of `spec` (a StatEvalSpec): the configuration,
    the layout source, the episode index, the policy seed and the episode's task positions
    (what the viewer's replay needs), the same for every STAT episode."""
    cfg = spec.cfg()
    return {"agents": cfg.agents, "tasks": cfg.tasks, "width": cfg.width,
            "height": cfg.height, "episode_limit": cfg.episode_limit,
            "layouts": spec.layouts, "episode": k, "policy_seed": spec.seed,
            "task_positions": task_positions.tolist(),
            **({"dials": spec.dials.as_dict()} if getattr(spec, "dials", None) is not None
               else {})}


def step_event(t: int, actions: np.ndarray, executed: np.ndarray, rewards: np.ndarray,
                info_b: dict[str, int], completed_task: np.ndarray) -> StatStepEvent:
    conflicts = []
    picks = actions[actions >= SELECT0]
    for a in np.unique(picks):
        who = np.flatnonzero(actions == a)
        if len(who) > 1:
            kept = np.flatnonzero(executed == a)
            conflicts.append(Conflict(target=int(a - SELECT0), agents=who.tolist(),
                                      winner=int(kept[0]) if len(kept) else None))
    return StatStepEvent(
        t=t,
        actions=actions.tolist(),
        executed=executed.tolist(),
        rewards=rewards.tolist(),
        conflicts=conflicts,
        decision_pre=info_b["pre"],
        decision_post=info_b["post"],
        completed=[(int(i), int(j)) for i, j in enumerate(completed_task) if j >= 0],
    )


async def arun_team_episode(spec, k: int, episode_id: str, minds: list[Any],
                            limits: Limits | None = None) -> Trajectory:
    """Play episode `k` of the condition `spec` (a StatEvalSpec with policy "llm" or "rule")
    with `minds` (one per agent: `StatLlmMind` or `StatRuleMind`) under `spec.protocol`;
    return its trajectory."""
    cfg = spec.cfg()
    seated = spec.seat_policies() if getattr(spec, "seats", None) is not None else {}
    swap = current()
    if swap is not None and swap.reference == "hungarian":  # the seat's pick, from its step
        seated = {**seated, swap.seat: "hungarian"}
    policies = SeatPolicies(seated) if seated else None
    env = StatVecEnv(cfg, 1, auto_reset=False,
                     compute_obs=policies is not None and policies.reads_obs)
    layout = make_layouts(cfg, spec.layouts, spec.seed, [k])
    env.reset(layout)
    rng = PerEnvRng([np.random.SeedSequence([spec.seed, k])]) if policies else None
    team = ProtocolTeam(minds, spec.protocol)
    rec = Recorder(
        suite="stat", episode_id=episode_id, task_id=cfg.name,
        seed=layout_seed(spec.layouts, spec.seed, k),
        team=[AgentSpec(id=f"agent_{i}", role=m.role, driver=spec.policy
                        if getattr(spec, "seats", None) is None else spec.seats[i].driver)
              for i, m in enumerate(minds)],
        protocol=spec.protocol, policy=spec.policy,
        models={f"agent_{i}": m.alias for i, m in enumerate(minds) if hasattr(m, "alias")},
        params=header_params(spec, k, layout[0]),
        limits=limits)
    reason = None
    with rec:
        while env.active[0]:
            t = int(env.state.t[0])
            rec.t = t
            obs = [observe(env, 0, i) for i in range(cfg.agents)]
            if all(o.forced_action is not None for o in obs):
                actions = [o.forced_action for o in obs]
            else:
                if policies is not None:  # the allocators' and learned seats' picks
                    picks = policies(env, rng)[0]
                    for i in seated:
                        obs[i].pick = int(picks[i])
                decisions, transcript = await team.act(obs)
                rec.emit(*message_events(t, with_message_cost(transcript, spec.dials)))
                rec.flush_calls()
                actions = [d.action if d.action is not None else IDLE for d in decisions]
            joint = np.array([actions], dtype=np.int64)
            _, _, _, info = env.step(joint)
            rec.emit(step_event(t, joint[0], info.final_actions[0], info.agent_rewards[0],
                                {"pre": int(info.decision_pre[0]),
                                 "post": int(info.decision_post[0])},
                                info.completed_task[0]))
            reason = rec.stop_reason()
            if reason:
                break
    return rec.finish(int(env.state.t[0]), success=bool(info.terminated[0]), stop=reason,
                      detail="episode limit reached")
