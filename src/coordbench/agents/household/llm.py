"""Model-driven household minds: any model in the registry as a team member.

Each mind keeps the paper's windows: the dialogue it saw (last `window` messages), its own
action history with outcomes, the last feedback (in the observation), and a free-text memory
it rewrites every step. Every model call is recorded into the running episode by the model
harness; a reply that cannot be turned into an action is a protocol failure: the agent
idles and the episode goes on.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from coordbench.envs.household.observe import Observation, render_text
from coordbench.llm import prompts
from coordbench.llm.client import Completion, ModelHarness
from coordbench.llm.parse import extract_json, parse_action
from coordbench.runner.episode import current_recorder

from ..team.protocols import Decision, Message


def agent_number(value: Any) -> int | None:
    """Return the agent number a reply names (an int, an integral float, digits in a
    string), or None: `Infinity`, NaN, booleans and huge numbers name no agent."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e6 else None
    if isinstance(value, int):
        return value if abs(value) < 10**6 else None
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,6}\s*", value):
        return int(value)
    return None


@dataclass
class LlmMind:
    """A team member driven by the model `alias` (see the module docstring)."""

    agent: int
    harness: ModelHarness
    alias: str
    role: str = "agent"
    window: int = 8
    max_tokens: int | None = None
    memory: str = "{}"
    dialogue: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    _last: str | None = None
    _last_call: dict[str, Any] | None = None  # the model_call record of the last call

    # what a family changes: its prompts (SYSTEM, ACT, SPEAK, SPEAK_USER, ASSIGN, MEMORY,
    # SCHEMAS) and how an observation becomes prompt text
    prompts: ClassVar[Any] = prompts
    render: ClassVar[Any] = staticmethod(render_text)

    # -- plumbing -------------------------------------------------------------------------
    def _system(self, obs: Any) -> dict[str, Any]:
        return {"role": "system", "content": self.prompts.SYSTEM.format(agent=obs.agent,
                                                                        n=obs.n_agents)}

    def _user(self, text: str, images: list[str]) -> dict[str, Any]:
        if not images or not self.harness.spec(self.alias).supports_images:
            return {"role": "user", "content": text}
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for path in images:
            data = base64.b64encode(Path(path).read_bytes()).decode()
            parts.append({"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{data}"}})
        return {"role": "user", "content": parts}

    async def _call(self, obs: Observation, phase: str, text: str,
                    images: list[str] | None = None) -> Completion | None:
        rec = current_recorder()
        if rec is not None and rec.tokens_exhausted:
            self._last_call = None
            return None  # the team's token budget for this episode is spent
        messages = [self._system(obs), self._user(text, images or [])]
        out = await self.harness.complete(self.alias, messages, self.max_tokens,
                                          who=(self.agent, self.role, phase),
                                          schema=self.prompts.SCHEMAS.get(phase))
        self._last_call = out.event
        return out

    def _mark(self, status: str, error: str | None = None) -> None:
        if self._last_call is not None:
            self._last_call["parse_status"] = status
            self._last_call["parse_error"] = error

    def _absorb(self, inbox: list[Message]) -> None:
        for m in inbox:
            if m.sender != self.agent and m.phase != "memory":
                line = f"agent {m.sender} ({m.phase}): {m.content[:500]}"
                if not self.dialogue or self.dialogue[-1] != line:
                    self.dialogue.append(line)
        del self.dialogue[:-self.window]

    def _context(self) -> tuple[str, str]:
        return ("\n".join(self.dialogue[-self.window:]) or "(none)",
                "\n".join(self.history[-self.window:]) or "(none)")

    def _images(self, obs: Observation, team: bool = False) -> list[str]:
        key = "team_image" if team else "image"
        return [obs.extra[key]] if obs.extra.get(key) else []

    # -- communicate phase --------------------------------------------------------------------
    async def speak(self, obs: Observation, phase: str, inbox: list[Message],
                    rnd: int) -> str | None:
        """Return this agent's message for a broadcast, discuss or report phase."""
        self._absorb(inbox)
        dialogue, _ = self._context()
        text = self.prompts.SPEAK_USER.format(
            observation=self.render(obs), memory=self.memory, dialogue=dialogue,
            instruction=self.prompts.SPEAK.get(phase, self.prompts.SPEAK["broadcast"]))
        out = await self._call(obs, phase, text, self._images(obs))
        if out is None or out.error:
            self._mark("failed", out.error if out else "token budget exhausted")
            return None
        reply = out.text.strip()[:1500]
        self._mark("ok")
        if not reply or "<NO_MESSAGE>" in reply:
            return None
        if phase == "discuss" and not reply.upper().startswith(("READY", "CONTINUE")):
            reply = "CONTINUE " + reply
        return reply

    async def assign(self, obs: Observation, inbox: list[Message],
                     views: dict[int, Observation] | None) -> dict[int, str]:
        """Return one instruction per agent from the leader's JSON list (3 tries)."""
        self._absorb(inbox)
        reports = "\n".join(f"agent {m.sender}: {m.content[:800]}" for m in inbox
                            if m.phase == "report") or "(none)"
        text = self.prompts.ASSIGN.format(observation=self.render(obs), reports=reports)
        images = self._images(obs, team=views is not None)
        for _ in range(3):
            out = await self._call(obs, "assignment", text, images)
            if out is None or out.error:
                self._mark("failed", out.error if out else "token budget exhausted")
                return {}
            data, err = extract_json(out.text)
            if isinstance(data, dict):
                data = data.get("assignments", [data])
            if isinstance(data, list):
                orders = {}
                for item in data:
                    if isinstance(item, dict):
                        j = agent_number(item.get("agent"))
                        if j is not None and 0 <= j < obs.n_agents:
                            orders[j] = str(item.get("instruction", ""))[:600]
                if orders:
                    self._mark("ok")
                    return orders
                err = "no usable assignment"
            self._mark("failed", err or "the reply is not a JSON list")
        return {}

    async def update_memory(self, obs: Observation, board: dict[str, Any]) -> dict[str, Any]:
        """Return the shared board as the model rewrote it (unchanged if the reply fails)."""
        text = self.prompts.MEMORY.format(observation=self.render(obs),
                                          board=json.dumps(board)[:6000])
        out = await self._call(obs, "memory", text)
        if out is None or out.error:
            self._mark("failed", out.error if out else "token budget exhausted")
            return board
        data, err = extract_json(out.text)
        if not isinstance(data, dict):
            self._mark("failed", err or "the reply is not a JSON object")
            return board
        self._mark("ok")
        return data

    # -- act phase ----------------------------------------------------------------------------
    async def act(self, obs: Observation, inbox: list[Message]) -> Decision:
        """Return the action the model chose, or a protocol failure with its reason."""
        self._absorb(inbox)
        if self._last is not None and obs.last_outcome is not None:
            self.history.append(f"{self._last} -> {obs.last_outcome.code}")
        board = [m.content for m in inbox if m.phase == "memory"]
        dialogue, history = self._context()
        if board:
            dialogue += f"\nShared memory: {board[-1][:3000]}"
        text = prompts.ACT.format(observation=render_text(obs), memory=self.memory,
                                  dialogue=dialogue, history=history)
        out = await self._call(obs, "act", text, self._images(obs))
        if out is None:
            self._last = "none"
            return Decision(None, "", "token budget exhausted")
        if out.error:
            self._mark("failed", out.error)
            self._last = "none"
            return Decision(None, "", f"model call failed: {out.error}", out.tokens)
        parsed = parse_action(out.text, obs)
        if parsed.memory is not None:
            self.memory = parsed.memory
        if parsed.action is None:
            error = parsed.error
            if out.finish_reason == "length":  # not the model's format: the token cap
                error = f"the reply was cut at the token limit ({error})"
            self._mark("failed", error)
            self._last = "none"
            return Decision(None, out.text[:4000], error, out.tokens)
        self._mark("ok")
        self._last = parsed.action.text()
        return Decision(parsed.action, out.text[:4000], None, out.tokens)
