"""Run construct episodes: planners choose, the household engine executes, trajectories record.

Planner modes: `central` (C0: one decision picks one action for one agent; the others do
nothing that step), `decentralized` (every agent decides from the same snapshot, no messages)
and `decentralized_comm` (the same, plus a broadcast board: each agent's note from the previous
round). Landing order within a step is agent index order (deterministic). The budget counts
executed agent-actions, waits included.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict, dataclass
from typing import Any

from coordbench.core.provenance import git_sha, version
from coordbench.core.trajectory import (
    ActionRecord,
    AgentSpec,
    Conflict,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    Trajectory,
    TrajectoryHeader,
)
from coordbench.envs.household.actions import WAIT, Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.render import ImageStore, png_bytes, render_agent
from coordbench.envs.household.task import HouseholdTask, task_from_dict
from coordbench.errors import ConfigError

from .oracle import ConstructOracle
from .planners import RuleAgent, menu, menu_catalog

PLANNERS = ("central", "decentralized", "decentralized_comm")
AGENTS = ("oracle", "rule", "llm")


@dataclass(frozen=True)
class ConstructSpec:
    """A construct condition: planner mode, who plans, what it sees."""

    planner: str = "central"
    agents: str = "rule"
    observation: str = "blind"
    model: str | None = None
    seed: int = 0
    order: str = "index"  # landing order within a step: index or reverse

    def __post_init__(self) -> None:
        if self.planner not in PLANNERS:
            raise ConfigError(f"unknown --planner {self.planner!r}; choose from "
                              f"{', '.join(PLANNERS)}")
        if self.agents not in AGENTS:
            raise ConfigError(f"unknown --agents {self.agents!r}; choose from {', '.join(AGENTS)}")
        if self.order not in ("index", "reverse"):
            raise ConfigError(f"--order must be index or reverse, not {self.order!r}")
        if self.observation not in ("image", "blind"):
            raise ConfigError(f"--observation must be image or blind, not {self.observation!r}")
        if self.agents == "llm" and not self.model:
            raise ConfigError("--agents llm needs --model ALIAS")

    def as_dict(self) -> dict[str, Any]:
        """Return the spec as a plain dict."""
        return asdict(self)


def load_instance(raw: dict[str, Any], where: str) -> tuple[HouseholdTask, dict[str, Any]]:
    """Return (task, construct info) of one instance dict; ConfigError names a bad field."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: an instance must be a JSON object")
    info = raw.get("coordbench_construct")
    if not isinstance(info, dict) or info.get("construct") not in ("D1", "D2", "D3", "D4"):
        raise ConfigError(f"{where}: field 'coordbench_construct' is missing or malformed")
    return task_from_dict(raw, where), info


def _state_text(env: HouseholdEnv, info: dict[str, Any]) -> str:
    sc = env.scene
    lines = [f"Goal: {env.task.goal_text('none')}"]
    sat = env.satisfied()
    lines.append("Progress: " + ", ".join(f"{k} {v}/{g.count}" for k, v, g in
                                          zip(sat, sat.values(), env.task.subgoals,
                                              strict=True)))
    for a in range(env.n):
        role = f" ({env.roles[a]})" if env.roles else ""
        held = ", ".join(f"{sc.nodes[h].class_name} ({h})" for h in env.held[a]) or "nothing"
        lines.append(f"agent {a}{role} holds {held}")
    for n in sorted({*info.get("items", []), *info.get("containers", []),
                     *info.get("buffers", [])}):
        node = sc.nodes[n]
        where = ", ".join(f"{r.lower()} {sc.nodes[p].class_name} ({p})"
                          for r, p in env.parents.get(n, ()))
        state = "" if n not in env.open_state else (" open" if env.open_state[n] else " closed")
        extra = " sliced" if env.has_state(n, "SLICED") else ""
        lines.append(f"{node.class_name} ({n}){state}{extra}" + (f": {where}" if where else ""))
    return "\n".join(lines)


async def _llm_choose(harness, alias: str, env: HouseholdEnv, info: dict[str, Any],
                      options: list[tuple[int, int, Action]], who: str, board: str,
                      image: str | None, calls: list[dict], agent: int, role: str
                      ) -> tuple[int, Action] | tuple[None, str]:
    import base64

    text = (f"You are {who}. Coordinate the team to reach the goal with few actions; avoid "
            f"contention for shared objects.\n{_state_text(env, info)}\n{board}"
            "\nACTION MENU (id: agent: action):\n"
            + "\n".join(f"{k}: agent_{a}: {act.text()}" for k, a, act in options)
            + "\n\nReply with two lines: REASON: ... and ACTION: <id>")
    content: Any = text
    if image and harness.spec(alias).supports_images:
        data = base64.b64encode(open(image, "rb").read()).decode()  # noqa: SIM115
        content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {
            "url": f"data:image/png;base64,{data}"}}]
    out = await harness.complete(alias, [{"role": "user", "content": content}], 200)
    rec = out.record(agent, role, "act")
    calls.append(rec)
    if out.error:
        rec["parse_status"], rec["parse_error"] = "failed", out.error
        return None, f"model call failed: {out.error}"
    m = re.search(r"ACTION:\s*(\d+)", out.text) or re.search(r"\b(\d+)\b", out.text)
    ids = {k: (a, act) for k, a, act in options}
    if not m:
        rec["parse_status"], rec["parse_error"] = "failed", "no menu id in the reply"
        return None, "the reply names no menu id"
    if int(m.group(1)) not in ids:
        rec["parse_status"], rec["parse_error"] = "ok", None
        return None, f"invalid: id {m.group(1)[:12]} is not in the current menu"
    rec["parse_status"] = "ok"
    return ids[int(m.group(1))]


async def arun_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                         harness=None, images: ImageStore | None = None) -> Trajectory:
    """Play one construct instance; return its trajectory."""
    task, info = load_instance(raw, episode_id)
    n = len(task.roles) if task.roles else len(task.start_rooms)
    env = HouseholdEnv(task, n, spec.seed)
    budget = task.budget()
    oracle = ConstructOracle(env, info, serial=spec.planner == "central") \
        if spec.agents == "oracle" else None
    rules = [RuleAgent(i, info, spec.planner == "decentralized_comm") for i in range(n)]
    catalog = menu_catalog(env, info) if spec.agents == "llm" else []
    events: list = []
    board: list[tuple[int, str]] = []
    used = 0
    turn = 0
    t = 0
    stop: str | None = None
    while used < budget and not env.success():
        chosen: list[Action | None] = [None] * n
        calls: list[dict] = []
        errors: dict[int, str] = {}
        image_paths = {}
        if images is not None and spec.observation == "image":
            image_paths = {i: str(images.root / f"{images.put(png_bytes(render_agent(env, i)))}"
                                                ".png") for i in range(n)}
        if spec.agents == "oracle":
            plan = oracle.act()
            if spec.planner == "central":
                order = [(turn + k) % n for k in range(n)]
                pick = next((i for i in order if plan[i] is not None), None)
                if pick is not None:
                    chosen[pick] = plan[pick]
                    turn = pick + 1
            else:
                chosen = plan
        elif spec.agents == "rule":
            if spec.planner == "central":
                for k in range(n):
                    i = (turn + k) % n
                    chosen_i = rules[i].decide(env)
                    if chosen_i is not None and chosen_i.name != "wait":
                        chosen[i] = chosen_i
                        turn = i + 1
                        break
            else:
                for r in rules:
                    r.read(board)
                chosen = [r.decide(env) for r in rules]
        else:
            text_board = ("TEAMMATE MESSAGES:\n" + "\n".join(f"agent_{s}: {m}"
                                                               for s, m in board)) if board else ""
            if spec.planner == "central":
                got = await _llm_choose(harness, spec.model, env, info, menu(env, catalog, None),
                                        f"the central planner of {n} agents", "",
                                        image_paths.get(0), calls, 0, "planner")
                if got[0] is None:
                    errors[0] = got[1]
                else:
                    chosen[got[0]] = got[1]
            else:
                results = await asyncio.gather(*(
                    _llm_choose(harness, spec.model, env, info, menu(env, catalog, i),
                                f"agent_{i}, one of {n} robots deciding at the same time",
                                text_board if spec.planner == "decentralized_comm" else "",
                                image_paths.get(i), calls, i, "agent") for i in range(n)))
                for i, got in enumerate(results):
                    if got[0] is None:
                        errors[i] = got[1]
                    else:
                        chosen[i] = got[1]
        if all(a is None for a in chosen) and not errors:
            stop = "every planner has nothing left to do"
            break
        room = budget - used
        acting = [i for i in range(n) if chosen[i] is not None][:room]
        landing = list(range(n)) if spec.order == "index" else list(range(n))[::-1]
        outcomes = env.step([chosen[i] if i in acting else WAIT for i in range(n)], landing)
        records = []
        for i in range(n):
            if i in acting:
                a, o = chosen[i], outcomes[i]
                node = task.scene.nodes.get(a.obj) if isinstance(a.obj, int) else None
                records.append(ActionRecord(agent=i, action=a.name, args=a.args(),
                                            obj_class=node.class_name if node else None,
                                            outcome=o.code, detail=o.detail,
                                            completed=list(o.completed)))
            elif i in errors:
                code = "invalid" if errors[i].startswith("invalid:") else "protocol_failure"
                records.append(ActionRecord(agent=i, action="none", outcome=code,
                                            detail=errors[i]))
        used += len(records)
        if oracle is not None:
            for i in acting:
                oracle.executed(i)
        events.extend(ModelCallEvent(t=t, **c) for c in calls)
        if spec.planner == "decentralized_comm" and spec.agents == "rule":
            board = [(r.agent, r.message()) for r in rules if r.message()]
            events.extend(MessageEvent(t=t, phase="broadcast", sender=s, content=m)
                          for s, m in board)
        events.append(HouseholdStepEvent(
            t=t, actions=records,
            conflicts=[Conflict(target=o, agents=m, winner=w) for o, m, w in env.last_conflicts],
            satisfied=env.satisfied(), completion=env.completion_rate(),
            buffers={str(b): env.buffer_load(b) for b in info.get("buffers", [])},
            images={f"agent_{i}": p.rsplit("/", 1)[-1][:-4] for i, p in image_paths.items()}))
        t += 1
    ok = env.success()
    if ok:
        end = EpisodeEndEvent(t=t, success=True, termination="success")
    elif stop:
        end = EpisodeEndEvent(t=t, success=False, termination="normal_stop", detail=stop)
    else:
        end = EpisodeEndEvent(t=t, success=False, termination="truncated",
                              detail=f"budget of {budget} actions exhausted")
    events.append(end)
    header = TrajectoryHeader(
        episode_id=episode_id, suite="constructs", task_id=str(raw["task_id"]), seed=spec.seed,
        team=[AgentSpec(id=f"agent_{i}", role=task.roles[i] if task.roles else "agent",
                        driver=spec.agents) for i in range(n)],
        protocol=spec.planner, policy=spec.agents, coordbench_version=version(),
        git_sha=git_sha(), models={f"agent_{i}": spec.model for i in range(n)} if spec.model
        else {},
        params={"agents": n, "family": raw["task_name"], "budget": budget,
                "observation": spec.observation, "construct": info})
    return Trajectory(header=header, events=events)


def run_construct(raw: dict[str, Any], spec: ConstructSpec, episode_id: str,
                  harness=None, images: ImageStore | None = None) -> Trajectory:
    """Play one instance synchronously (see `arun_construct`)."""
    return asyncio.run(arun_construct(raw, spec, episode_id, harness, images))
