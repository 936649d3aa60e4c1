"""Three scripted construct planners of known skill, served by one loopback server.

- `good` follows the oracle: it recognises the instance from the prompt's goal and objects
  and answers, at step t, the action the oracle planner took at step t (central: the team's
  one action; decentralized: its own agent's).
- `err` follows the oracle too, but on every other instance (by a hash of the instance) it
  answers without a menu id at step 1: a protocol failure, which ends the episode.
- `never` never coordinates: every agent only waits.
- any other model name plays as `good` does.

So their success ranks good > err > never on any instance set where the oracle succeeds.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

from coordbench.agents.constructs.llm import state_text
from coordbench.core.trajectory import HouseholdStepEvent
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.suites.constructs.episode import ConstructSpec, load_instance, run_construct
from coordbench.suites.constructs.instances import select

MODELS = ("good", "err", "never")
MENU = re.compile(r"^(\d+): agent_(\d+): (.+)$", re.M)
OBJECT = re.compile(r"^(?!agent )(\w+) \((\d+)\)", re.M)


def _text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def signature(text: str) -> tuple:
    """Return what identifies an instance in any of its prompts: goal, team, objects."""
    goal = next((line for line in text.splitlines() if line.startswith("Goal:")), "")
    team = len(re.findall(r"^agent \d+(?: \(\w+\))? holds", text, re.M))
    state = text.split("ACTION MENU")[0]
    return goal, team, tuple(sorted(OBJECT.findall(state.split("\nGoal:")[-1])))


def oracle_plans(picks: list[tuple[str | None, int]]) -> dict[tuple, dict[str, Any]]:
    """Return, per instance signature, the oracle's action text per (planner, step, agent)
    over the first `limit` rep240 instances of each (construct, limit) in `picks`."""
    plans: dict[tuple, dict[str, Any]] = {}
    for construct, limit in picks:
        for raw in select("rep240", construct, None, limit):
            task, info = load_instance(copy.deepcopy(raw), "x")
            n = len(task.roles) if task.roles else len(task.start_rooms)
            sig = signature(state_text(HouseholdEnv(task, n, 0, "with_close"), info))
            steps: dict[tuple, str] = {}
            for planner in ("central", "decentralized"):
                traj = run_construct(copy.deepcopy(raw), ConstructSpec(planner, "oracle"), "x")
                for e in traj.steps(HouseholdStepEvent):
                    for a in e.actions:
                        if a.action != "none":
                            args = ", ".join(str(v) for v in a.args.values())
                            steps[(planner, e.t, a.agent)] = f"{a.action}({args})"
            plans[sig] = steps
    return plans


def planner_reply(plans: dict[tuple, dict[str, Any]]):
    """Return the server's reply function: the three planners, chosen by the request's
    model name."""
    def reply(body: dict[str, Any]) -> str:
        text, model = _text(body), body["model"]
        if "JSON list" in text:
            return '[{"agent": 0, "instruction": "follow the plan"}]'
        if "Shared team memory" in text:
            return '{"claims": {}}'
        if "Start your reply with READY" in text:
            return "READY I follow the plan."
        if "ACTION MENU" not in text:
            return "I follow the plan."
        menu = {(int(a), action): i for i, a, action in MENU.findall(text)}
        me = re.match(r"You are agent_(\d+)", text)
        step = int(re.search(r"Step (\d+):", text).group(1))
        agent = int(me.group(1)) if me else None
        if model == "never":
            return f"REASON: wait\nACTION: {menu[(agent or 0, 'wait()')]}"
        sig = signature(text)
        digest = int(hashlib.blake2b(repr(sig).encode(), digest_size=4).hexdigest(), 16)
        if model == "err" and digest % 2 == 0 and step >= 1:
            return "REASON: unsure"  # no menu id: a protocol failure
        steps = plans.get(sig, {})
        if agent is None:  # the central planner: the oracle's one action this step
            who, action = next(((a, act) for (p, t, a), act in steps.items()
                                if p == "central" and t == step), (0, "wait()"))
        else:
            who, action = agent, steps.get(("decentralized", step, agent), "wait()")
        return f"REASON: plan\nACTION: {menu.get((who, action), menu[(who, 'wait()')])}"

    return reply


def registry(path, base_url: str) -> Any:
    """Write a registry naming the three planners on the server; return its path."""
    f = path / "models.yaml"
    f.write_text("models:\n" + "".join(
        f"  {m}:\n    base_url: {base_url}\n    model: {m}\n    max_retries: 0\n"
        f"    timeout_s: 5\n" for m in MODELS))
    return f
