"""The trajectory schema: one typed, versioned record per episode, for every suite.

A trajectory file is JSONL: the first line is the `TrajectoryHeader`, every further line is one
event, discriminated by its `type` field. Files are plain JSON, readable without coordbench;
`coordbench schema` prints the JSON Schema. Minor schema versions add event types or optional
fields; a major version change means old readers must not guess.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter
from pydantic_core import PydanticSerializationError

SCHEMA_VERSION = "1.7"

# JSON allows these raw inside strings, but str.splitlines() and many line readers break on
# them; a model reply can hold any of them, so they are written escaped.
_LINE_BREAKERS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Return `text` with every lone surrogate (which UTF-8 cannot hold) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def json_line(record: BaseModel) -> str:
    """Return `record` as one JSON line that every line reader splits correctly and UTF-8
    can hold (lone surrogates become U+FFFD)."""
    try:
        text = record.model_dump_json()
    except PydanticSerializationError:
        text = None
    # pydantic raises on a lone surrogate in a value but writes one in a dict key as three
    # U+FFFD (in JSON mode too); the python dump keeps it, so clean that and dump again.
    if text is None or "\ufffd" in text:
        text = type(record).model_validate(_scrub(record.model_dump())).model_dump_json()
    return text.translate(_LINE_BREAKERS)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentSpec(_Record):
    """One team member: its id, its role, and what drives it (policy name or model alias)."""

    id: str
    role: str = "agent"
    driver: str


class TrajectoryHeader(_Record):
    """What an episode was: suite, task, seed, team, protocol/policy and provenance."""

    kind: Literal["header"] = "header"
    schema_version: str = SCHEMA_VERSION
    episode_id: str
    suite: str
    task_id: str
    seed: int
    team: list[AgentSpec]
    protocol: str | None = None
    policy: str | None = None
    models: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    coordbench_version: str
    git_sha: str | None = None
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))


class Conflict(_Record):
    """Several agents picked one target in the same step; `winner` kept it (None: nobody)."""

    target: int
    agents: list[int]
    winner: int | None


class StatStepEvent(_Record):
    """One joint step of a STAT episode.

    `actions` are the submitted per-agent actions, `executed` the actions after conflict
    resolution (losers become IDLE = 0); `rewards` are per agent (the team reward is their sum);
    `decision_pre`/`decision_post` count agents with more than one valid action before/after
    the step; `completed` lists (agent, task) pairs completed this step.
    """

    type: Literal["stat_step"] = "stat_step"
    t: int
    actions: list[int]
    executed: list[int]
    rewards: list[float]
    conflicts: list[Conflict] = Field(default_factory=list)
    decision_pre: int
    decision_post: int
    completed: list[tuple[int, int]] = Field(default_factory=list)


class ActionRecord(_Record):
    """One agent's action in a household step: what it tried and what happened.

    `outcome` is an outcome code (docs/household.md); `completed` lists the subgoal keys whose
    count this action raised; `raw` keeps a model's reply when the action came from one.
    """

    agent: int
    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    obj_class: str | None = None  # class of the object the action names, if any
    outcome: str
    detail: str = ""
    completed: list[str] = Field(default_factory=list)
    raw: str | None = None
    tokens: int = 0


class HouseholdStepEvent(_Record):
    """One team step of a household episode, after execution."""

    type: Literal["household_step"] = "household_step"
    t: int
    actions: list[ActionRecord]
    conflicts: list[Conflict] = Field(default_factory=list)
    satisfied: dict[str, int]
    completion: float
    images: dict[str, str] = Field(default_factory=dict)  # view name -> sha256 of the PNG
    buffers: dict[str, int] = Field(default_factory=dict)  # buffer id -> objects on it after


class MessageEvent(_Record):
    """A message of the communicate phase (broadcast, discuss, report, assignment, memory)."""

    type: Literal["message"] = "message"
    t: int
    phase: str
    round: int = 0
    sender: int
    recipients: list[int] | None = None  # None: every agent
    content: str
    tokens: int = 0


class CallTry(_Record):
    """One attempt of a model call (schema 1.7): whether the request carried the JSON schema,
    its latency, how it ended (ok, throttled, transient, malformed, timeout, permanent,
    refused), why (the provider's error, redacted) and the backoff waited after it."""

    with_schema: bool = False
    latency_s: float = 0.0
    outcome: str
    why: str | None = None
    wait_s: float = 0.0


class ModelCallEvent(_Record):
    """One model call: who made it, for what, how it went. Never holds credentials."""

    type: Literal["model_call"] = "model_call"
    t: int
    agent: int
    role: str
    phase: str
    model: str
    request_hash: str
    cache_hit: bool = False
    attempts: int = 1
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    finish_reason: str | None = None
    parse_status: Literal["ok", "failed", "n/a"] = "n/a"
    parse_error: str | None = None
    error: str | None = None
    structured: bool = False  # the request carried a JSON schema the server accepted (1.4)
    # every attempt, the re-ask without the schema included (1.7); none for a cache hit
    tries: list[CallTry] = []
    reply: str = ""


class HumanDecisionEvent(_Record):
    """One decision of a seat a person plays (`coordbench play`; schema 1.6): what the
    person was asked (`phase`: act, or the protocol's speak/assign/memory phase), what they
    chose (an action's label, a message, "" for silence) and how long they took to decide
    (`think_s`, from the moment the page could show the question to the answer)."""

    type: Literal["human_decision"] = "human_decision"
    t: int
    agent: int
    phase: str
    choice: str
    think_s: float


class PhysicalPhaseEvent(_Record):
    """A physical task's phase completed (phases latch in order 1, 2, 3) at control step t."""

    type: Literal["physical_phase"] = "physical_phase"
    t: int
    phase: int
    name: str
    collaborative: bool


class PhysicalCouplingEvent(_Record):
    """A physical coupling event between robots at control step t.

    kinds: partner_lag (value = seconds between the first and the last robot taking hold),
    drop (a robot lost its hold while the object was lifted), robot_collision (robot bodies
    touched; value = steps in contact in this run of contact).
    """

    type: Literal["physical_event"] = "physical_event"
    t: int
    kind: Literal["partner_lag", "drop", "robot_collision"]
    robots: list[int]
    value: float | None = None


class PhysicalPosesEvent(_Record):
    """The robots' and objects' poses of a physical episode, sampled every `every` control
    steps (10 Hz of simulated time at 50 Hz control) and at its last step, so the episode can
    be drawn again without simulating (schema 1.5; older files have none).

    `steps[k]` is the control step of sample k (`t` is the last one). Each array holds
    integers in units of `unit` (1e-4: 0.1 mm, 1e-4 rad, far below what a frame shows); its
    first row is sample 0 and every later row the change since the previous sample, so
    `values = cumsum(rows, axis=0) * unit` (exact: the sums are of integers). That keeps a
    pose a few characters in plain JSON.

    `robots`, (K, n, 10): robot i's base x, y (world, m) and yaw (rad), then its joint
    positions: torso lift (m), shoulder, elbow, wrist pitch, wrist roll (rad), left and right
    finger (m; 0 open). `bodies[name]`, (K, 7): a free body's world position (m) and
    orientation quaternion (w, x, y, z). `joints[name]`, (K,): another joint of the task
    (MoveHouse's door hinge, rad).
    """

    type: Literal["physical_poses"] = "physical_poses"
    t: int
    every: int
    unit: float
    steps: list[int]
    robots: list[list[list[int]]]
    bodies: dict[str, list[list[int]]] = Field(default_factory=dict)
    joints: dict[str, list[int]] = Field(default_factory=dict)

Termination = Literal["success", "truncated", "normal_stop", "protocol_failure", "error"]


class EpisodeEndEvent(_Record):
    """The last event of every complete episode: how it ended and after how many steps."""

    type: Literal["episode_end"] = "episode_end"
    t: int
    termination: Termination
    success: bool
    detail: str | None = None


Event = Annotated[StatStepEvent | HouseholdStepEvent | MessageEvent | ModelCallEvent
                  | HumanDecisionEvent | PhysicalPhaseEvent | PhysicalCouplingEvent
                  | PhysicalPosesEvent | EpisodeEndEvent,
                  Field(discriminator="type")]
_EVENT = TypeAdapter(Event)


class Trajectory(BaseModel):
    """A header plus its events; complete trajectories end with an EpisodeEndEvent."""

    model_config = ConfigDict(extra="forbid")

    header: TrajectoryHeader
    events: list[Event]
    # request hash -> prompt JSON of the episode's model calls: not part of the file (prompts
    # repeat across steps and episodes); the runner stores each once under RUN/prompts/
    _prompts: dict[str, str] = PrivateAttr(default_factory=dict)
    # values derived from the events (message tags, ...), kept per trajectory so analyses that
    # ask for them again do not recompute; see `memo`
    _memo: dict[str, Any] = PrivateAttr(default_factory=dict)

    def memo(self, key: str, compute: Any) -> Any:
        """Return `compute(self)`, computed once per trajectory object under `key` (events
        are not modified after an episode ends, so a derived value stays valid)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    @property
    def prompts(self) -> dict[str, str]:
        """Return the prompts of this episode's model calls by request hash (filled while it
        is played; empty for a trajectory read from a file)."""
        return self._prompts

    @property
    def end(self) -> EpisodeEndEvent | None:
        """Return the closing event, or None if the episode is incomplete."""
        last = self.events[-1] if self.events else None
        return last if isinstance(last, EpisodeEndEvent) else None

    def steps(self, kind: type[_Record]) -> list[Any]:
        """Return the events of class `kind`, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def to_jsonl(self) -> str:
        """Return the trajectory as JSONL text (header line, then one line per event)."""
        lines = [json_line(self.header)]
        lines.extend(json_line(e) for e in self.events)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_jsonl(cls, text: str) -> Trajectory:
        """Return the trajectory parsed from JSONL text; raises ValueError on a malformed line."""
        # "\n" only: str.splitlines() also splits on U+2028, U+0085 and other separators
        lines = [ln for ln in text.split("\n") if ln.strip()]
        if not lines:
            raise ValueError("empty trajectory")
        header = TrajectoryHeader.model_validate_json(lines[0])
        major = header.schema_version.split(".")[0]
        if major != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(f"schema version {header.schema_version} is not readable by "
                             f"this coordbench (schema {SCHEMA_VERSION})")
        events = [_EVENT.validate_json(ln) for ln in lines[1:]]
        return cls(header=header, events=events)


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a trajectory file: the header line and the event lines."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"coordbench trajectory (JSONL), schema {SCHEMA_VERSION}",
        "description": "Line 1 matches `header`; every further line matches `event`.",
        "schema_version": SCHEMA_VERSION,
        "header": TrajectoryHeader.model_json_schema(),
        "event": _EVENT.json_schema(),
    }


def json_schema_text() -> str:
    """Return `json_schema()` as indented JSON text."""
    return json.dumps(json_schema(), indent=2)
