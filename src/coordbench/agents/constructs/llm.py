"""A model as the construct planner: one menu choice per decision, central or per agent.

The prompt (`llm.prompts.CONSTRUCT_PLAN`) shows the step, the actions left of the budget, what
the last step's actions did (or why a planner chose nothing), the goal, progress, what every
agent holds, the state of the instance's items, containers and buffers, the teammates' notes
and the action menu; the reply names one menu id. Because step and outcome are in the prompt,
no two calls of an episode send the same request, so a cached reply is never replayed within
an episode and a planner that failed a step sees that it did. Every call is recorded into the
running episode by the model harness; a failed call or a reply with no id is a protocol
failure, an id not on the menu an invalid action.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.menu import menu
from coordbench.llm import prompts
from coordbench.llm.parse import parse_menu_id
from coordbench.runner.episode import gather_all

from .planners import StepChoice, menu_catalog


def state_text(env: HouseholdEnv, info: dict[str, Any]) -> str:
    """Return the planner's view of the instance: goal, progress, holdings, object states."""
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


def last_step_text(records: list[Any]) -> str:
    """Return what the last step's actions did, one clause per agent."""
    if not records:
        return "(none yet)"
    parts = []
    for r in records:
        what = r.action if r.action == "none" else f"{r.action} {r.args or ''}".strip()
        why = f" ({r.detail[:120]})" if r.detail and r.outcome != "success" else ""
        parts.append(f"agent_{r.agent}: {what} -> {r.outcome}{why}")
    return "; ".join(parts)


async def choose(harness, alias: str, env: HouseholdEnv, info: dict[str, Any],
                 options: list[tuple[int, int, Action]], who: str, board: str,
                 image: str | None, agent: int, role: str, progress: dict[str, Any]
                 ) -> tuple[int, Action] | tuple[None, str]:
    """Return (acting agent, action) the model picks from `options`, or (None, why not).
    `progress`: step, left, budget and last (what the last step did) for the prompt."""
    text = prompts.CONSTRUCT_PLAN.format(
        who=who, state=state_text(env, info), board=board, **progress,
        menu="\n".join(f"{k}: agent_{a}: {act.text()}" for k, a, act in options))
    content: Any = text
    if image and harness.spec(alias).supports_images:
        data = base64.b64encode(Path(image).read_bytes()).decode()
        content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {
            "url": f"data:image/png;base64,{data}"}}]
    out = await harness.complete(alias, [{"role": "user", "content": content}], 200,
                                 who=(agent, role, "act"))
    rec = out.event if out.event is not None else {}
    if out.error:
        rec["parse_status"], rec["parse_error"] = "failed", out.error
        return None, f"model call failed: {out.error}"
    digits = parse_menu_id(out.text)
    ids = {k: (a, act) for k, a, act in options}
    if digits is None:
        rec["parse_status"], rec["parse_error"] = "failed", "no menu id in the reply"
        return None, "the reply names no menu id"
    picked = ids.get(int(digits)) if len(digits) <= 18 else None
    if picked is None:
        rec["parse_status"], rec["parse_error"] = "ok", None
        return None, f"invalid: id {digits[:12]} is not in the current menu"
    rec["parse_status"] = "ok"
    return picked


class LlmPlanners:
    """Model-driven construct team: one central planner, or one planner per agent deciding
    from the same snapshot (with the teammates' notes under decentralized_comm)."""

    name = "llm"

    def __init__(self, harness, alias: str, planner: str) -> None:
        self.harness, self.alias, self.planner = harness, alias, planner

    def reset(self, env: HouseholdEnv, info: dict[str, Any]) -> None:
        """Start an episode on `env`."""
        self.env, self.info = env, info
        self.catalog = menu_catalog(env, info)
        self.board: list[tuple[int, str]] = []
        self.step, self.used, self.budget = 0, 0, env.task.budget()
        self.last: list[Any] = []

    def _progress(self) -> dict[str, Any]:
        return {"step": self.step, "left": max(0, self.budget - self.used),
                "budget": self.budget, "last": last_step_text(self.last)}

    async def act(self, images: dict[int, str]) -> StepChoice:
        """Return this step's choices (and why a planner chose nothing)."""
        env, info, n = self.env, self.info, self.env.n
        chosen: list[Action | None] = [None] * n
        errors: dict[int, str] = {}
        if self.planner == "central":
            got = await choose(self.harness, self.alias, env, info, menu(env, self.catalog, None),
                               f"the central planner of {n} agents", "", images.get(0), 0,
                               "planner", self._progress())
            if got[0] is None:
                errors[0] = got[1]
            else:
                chosen[got[0]] = got[1]
            return StepChoice(chosen, errors)
        board = ("TEAMMATE MESSAGES:\n" + "\n".join(f"agent_{s}: {m}" for s, m in self.board)
                 ) if self.board and self.planner == "decentralized_comm" else ""
        results = await gather_all(*(
            choose(self.harness, self.alias, env, info, menu(env, self.catalog, i),
                   f"agent_{i}, one of {n} robots deciding at the same time", board,
                   images.get(i), i, "agent", self._progress()) for i in range(n)))
        for i, got in enumerate(results):
            if got[0] is None:
                errors[i] = got[1]
            else:
                chosen[i] = got[1]
        return StepChoice(chosen, errors)

    def executed(self, acting: list[int], records: list[Any] = ()) -> list[tuple[int, str]]:
        """Note what ran and how (`records`: the step's action records, for the next
        prompt); return the notes to broadcast (none: model planners write none)."""
        self.step += 1
        self.used += len(records)
        self.last = list(records)
        return []
