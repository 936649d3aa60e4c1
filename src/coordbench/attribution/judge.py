"""The log-reading judge: a model reads a failed episode's log and names who failed it, and when.

After the automated failure attribution methods of Who&When (Zhang et al., ICML 2025, "Which
Agent Causes Task Failures and When?"; github.com/mingyin1/Agents_Failure_Attribution,
`Automated_FA`), with coordbench's own prompts:

- `all_at_once`: one call with the task, how the episode ended and the whole log
  (`baselines.timeline`); the model names the responsible agent and the step of its decisive
  mistake ("Agent Name: ... / Step Number: ... / Reason: ...").
- `step_by_step`: the steps in order, one call each with the log up to that step, asking
  whether this step holds the decisive error; the first yes is the answer (its agent and
  step), no yes at all is no answer. At most `max_calls` calls.

Replies are free text, as in the paper (no reply schema is sent): `parse_answer` and
`parse_yes` read the paper's formats, markdown variants and JSON objects. Calls go through
the `ModelHarness` (`harness.complete`), so a models file's aliases, the response cache,
retries and connection caps apply; they are not recorded into any episode. A provider failure
raises `ProviderFailed` as for every harness call; a refused request (HTTP 400/413/422: a log
too long for the model's context, say) is an unanswered call.
"""

from __future__ import annotations

import re
from typing import Any

from coordbench.core.trajectory import Trajectory
from coordbench.errors import ConfigError
from coordbench.llm.client import ModelHarness
from coordbench.llm.parse import extract_json

from .baselines import Guess, LogLine, family_of, goal_of, log_entries, seat_names

METHODS = ("all_at_once", "step_by_step")

SYSTEM = ("You review the logs of teams of agents that failed a task, to find which agent "
          "caused the failure and at which step. You judge from the log alone.")

# what a step is in each family's log, so the judge reads the step numbers right
_LOG_NOTES = {
    "household": "Each line starts with its step. At every step each agent takes one action, "
                 "and the actions execute in agent order; a step's messages come before its "
                 "actions. An action's line ends with its outcome (ok, or why it failed).",
    "stat": "Each line starts with its step. At every step each agent chooses one action: "
            "select(task=j) commits it to task j, move goes towards its task, execute works "
            "on it, idle does nothing; agents selecting the same task conflict and one wins.",
    "physical": "Each line starts with its control step (50 per simulated second). The log "
                "lists the skills robots start, the task phases completed and coupling events "
                "(a drop, a collision, the lag between robots taking hold).",
    "unknown": "Each line starts with its step.",
}

_INTRO = """A team of {n} agents ({names}) worked on a task together and failed.
Task: {goal}
How it ended: {outcome}
{note}
"""

ALL_AT_ONCE = _INTRO + """
The team's log:
{log}

Which agent's mistake is most directly responsible for the failure, and at which step did that \
agent first make it? If no agent made an obvious mistake, still name the one agent and step \
you judge most responsible. The step is the number after "step" in the log line of that \
mistake.

Answer in exactly this format:
Agent Name: <one of {names}>
Step Number: <a step number>
Reason: <one or two sentences>"""

STEP_BY_STEP = _INTRO + """
The team's log up to and including step {step}:
{log}

Does step {step} hold the decisive error: an action or message at step {step} that clearly \
derails the team and leads to the failure? Do not be overly critical: a harmless detour or a \
small inefficiency is not the decisive error.

Answer in exactly this format:
1. Yes or No
2. Agent Name: <if Yes: the agent whose action or message at step {step} is the error; one \
of {names}>
3. Reason: <one sentence>"""

# reasoning models may think aloud first; the answer is what follows
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_AGENT_LABEL = re.compile(
    r"(?:responsible\s+)?(?:agent|robot)(?:[ _]?name)?[ \t]*\**[ \t]*[:=][ \t]*\**[ \t]*"
    r"([^\n]*)", re.I)
_STEP_LABEL = re.compile(
    r"step(?:[ _]?(?:number|no\.?|index))?[ \t]*\**[ \t]*[:=][ \t]*\**[ \t]*(-?\d+)", re.I)
_STEP_ANY = re.compile(r"\bstep\s*#?\s*(\d+)", re.I)
_SEAT_NUMBER = re.compile(r"\b(?:agent|robot|seat)[\s_#-]*(\d+)\b", re.I)
_YES = re.compile(r"^\W*(?:1\W*)?(?:(?:answer|verdict|decisive error|error|judge?ment)\W*)?"
                  r"(yes|no)\b", re.I)


def _clean(reply: str) -> str:
    return _THINK.sub("", reply or "").strip()


def _json_object(text: str) -> dict[str, Any] | None:
    """Return the first JSON object in `text` (found as every model reply is read,
    `llm.parse.extract_json`) with its keys reduced to lower-case letters ("Agent Name" ->
    "agentname"), or None."""
    obj, _ = extract_json(text)
    if not isinstance(obj, dict):
        return None
    return {re.sub(r"[^a-z]", "", str(k).lower()): v for k, v in obj.items()}


def seat_of(value: Any, names: list[str]) -> int | None:
    """Return the seat a reply's agent field names: one of `names` (agent_1, robot0; any
    case, with markdown or quotes around it, or inside a sentence: the first one named), a
    seat number ("agent 1", "Robot #0", 1); None if it names no seat of the team."""
    n = len(names)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < n else None
    if not isinstance(value, str):
        return None
    text = value.strip().strip("*`'\" .").lower()
    lowered = [s.lower() for s in names]
    if text in lowered:
        return lowered.index(text)
    # a name inside a sentence: the earliest mention wins; word edges keep agent_1 out of
    # agent_10
    found = []
    for i, name in enumerate(lowered):
        m = re.search(rf"(?<![a-z0-9_]){re.escape(name)}(?![a-z0-9_])", text)
        if m:
            found.append((m.start(), -len(name), i))
    if found:
        return min(found)[2]
    m = _SEAT_NUMBER.search(text)
    if m is None and text.isdigit():
        return int(text) if int(text) < n else None
    if m is not None and int(m.group(1)) < n:
        return int(m.group(1))
    return None


def _step_value(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        m = re.search(r"-?\d+", value)
        return int(m.group(0)) if m and int(m.group(0)) >= 0 else None
    return None


def parse_answer(reply: str, names: list[str]) -> tuple[int | None, int | None]:
    """Return (seat, step) from an all-at-once reply: "Agent Name: agent_1" and "Step Number:
    12" lines (any case, markdown bold), a JSON object with agent and step fields, or failing
    those an agent and a "step N" named in the text; None for what it does not name (or names
    outside the team, or a negative step)."""
    text = _clean(reply)
    obj = _json_object(text)
    if obj is not None:
        agent = next((v for k, v in obj.items() if "agent" in k or "robot" in k
                      or k == "seat"), None)
        step = next((v for k, v in obj.items() if "step" in k), None)
        if agent is not None or step is not None:
            return seat_of(agent, names), _step_value(step)
    label = _AGENT_LABEL.search(text)
    # a labelled field is the answer; only a reply without labels is searched as a whole
    seat = seat_of(label.group(1), names) if label else seat_of(text, names)
    m = _STEP_LABEL.search(text) or _STEP_ANY.search(text)
    step = int(m.group(1)) if m and int(m.group(1)) >= 0 else None
    return seat, step


def parse_yes(reply: str) -> bool | None:
    """Return a step-by-step reply's verdict: True for yes ("1. Yes", "**Yes**", "Answer:
    yes", JSON {"error": true}), False for no, None when the reply starts with neither."""
    text = _clean(reply)
    obj = _json_object(text)
    if obj is not None:
        for key in ("decisiveerror", "error", "answer", "verdict", "yes"):
            v = obj.get(key)
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
                return v.strip().lower() == "yes"
    m = _YES.match(text)
    return None if m is None else m.group(1).lower() == "yes"


def _prompt(traj: Trajectory, template: str, lines: list[str], outcome: str,
            **extra: Any) -> list[dict[str, str]]:
    names = seat_names(traj)
    user = template.format(n=len(names), names=", ".join(names), goal=goal_of(traj),
                           outcome=outcome, note=_LOG_NOTES[family_of(traj)],
                           log="\n".join(lines), **extra)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


async def all_at_once(traj: Trajectory, harness: ModelHarness, alias: str, *,
                      max_tokens: int = 512) -> Guess:
    """Return the seat and step one call on the whole log names (Guess(None, None) when the
    reply names neither or the request was refused), with its call and tokens counted."""
    entries = log_entries(traj)
    messages = _prompt(traj, ALL_AT_ONCE, [e.text for e in entries], entries[-1].text)
    done = await harness.complete(alias, messages, max_tokens)
    if done.error is not None:
        return Guess(None, None, 1, done.tokens)
    seat, step = parse_answer(done.text, seat_names(traj))
    return Guess(seat, step, 1, done.tokens)


def _only_seat(lines: list[LogLine]) -> int | None:
    """Return the one seat with lines in `lines`, or None if several (or none) have any."""
    seats = {e.seat for e in lines if e.seat is not None}
    return seats.pop() if len(seats) == 1 else None


async def step_by_step(traj: Trajectory, harness: ModelHarness, alias: str, *, max_calls: int = 200,
                       max_tokens: int = 256) -> Guess:
    """Return the first step the model says holds the decisive error, with the agent it names
    (or, where the reply names none, the one agent with lines at that step, else None);
    Guess(None, None) when no step gets a yes within `max_calls` calls or a request was
    refused. Calls and tokens are counted either way."""
    entries = log_entries(traj)
    outcome = entries[-1].text
    stepped = [e for e in entries if e.step is not None]
    names = seat_names(traj)
    calls = tokens = 0
    for step in sorted({e.step for e in stepped if e.step is not None}):
        if calls >= max_calls:
            break
        upto = [e.text for e in stepped if e.step is not None and e.step <= step]
        done = await harness.complete(alias, _prompt(traj, STEP_BY_STEP, upto, outcome,
                                                     step=step), max_tokens)
        calls, tokens = calls + 1, tokens + done.tokens
        if done.error is not None:
            # the paper stops at a call that got no answer: a log too long now stays too long
            break
        if parse_yes(done.text):
            seat, _ = parse_answer(done.text, names)
            if seat is None:
                seat = _only_seat([e for e in stepped if e.step == step])
            return Guess(seat, step, calls, tokens)
    return Guess(None, None, calls, tokens)


async def judge(traj: Trajectory, harness: ModelHarness, alias: str, method: str,
                max_calls: int = 200) -> Guess:
    """Return the judge's attribution of `traj` by `method` ("all_at_once" or
    "step_by_step") with model `alias` of `harness`, and the calls and tokens it took
    (all_at_once makes one call; none when `max_calls` < 1)."""
    if method not in METHODS:
        raise ConfigError(f"unknown judge method {method!r}; choose from {', '.join(METHODS)}")
    if max_calls < 1:
        return Guess(None, None)
    if method == "all_at_once":
        return await all_at_once(traj, harness, alias)
    return await step_by_step(traj, harness, alias, max_calls=max_calls)
