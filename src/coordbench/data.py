"""A run's trajectories as pandas DataFrames: `load_run(DIR)`.

    run = coordbench.load_run("runs/default")
    run.episodes()    # one row per episode: suite, condition, episode_id, seed, success, metrics
    run.profile()     # one row per episode: its coordination profile (metrics/profile.py)
    run.steps()       # one row per agent per step (household, constructs, STAT)
    run.calls()       # one row per model call (tokens, latency, parse status, reply)
    run.messages()    # one row per message of a communicate phase
    run.prompts()     # one row per stored prompt (join calls() on request_hash)
    run.problems()    # episode files that could not be read, with the reason
    run.events()      # one row per event of any kind, its fields as JSON
    run.conditions()  # one row per condition: suite, spec fields, episodes, errored
    run.attribution() # one row per attributed episode and responsible seat (who and when)

Every frame is recomputed from the saved trajectories (metrics by each family's
`Suite.metrics`), never read from results.json. pandas is the frame library because it is what
the evaluation tools researchers already use return (inspect_ai's `evals_df`, lm-eval's
tables) and it writes CSV and (with pyarrow) Parquet itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from coordbench.core.rundir import RunDir
from coordbench.core.trajectory import (
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    StatStepEvent,
    Trajectory,
)
from coordbench.errors import RunDirError
from coordbench.runner.family import suite_object

EPISODE_COLUMNS = ("suite", "condition", "episode_id", "key", "seed", "task_id", "team",
                   "termination", "success", "events")
ATTRIBUTION_COLUMNS = ("condition", "episode_id", "key", "outcome", "seat", "step", "reference",
                       "blame", "rescue_rate", "rescue_lo", "rescue_hi", "replays", "calls")
STEP_COLUMNS = ("suite", "condition", "episode_id", "t", "agent", "action", "outcome",
                "conflict", "reward", "completion", "detail")


def _suite_of(condition: str, spec: dict[str, Any]) -> str:
    from coordbench.report.compose import suite_of

    return suite_of(condition, spec)


class RunData:
    """One run directory's episodes, steps, model calls, messages and conditions as
    DataFrames (each built when first asked for)."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.path = run.path

    def _trajectories(self) -> Iterator[tuple[str, str, Trajectory]]:
        for cond in self.run.conditions:
            for key in self.run.episode_keys(cond):
                try:
                    yield cond, key, self.run.load_episode(cond, key)
                except RunDirError as e:  # listed by problems(), left out of every frame
                    self._problems.append({"condition": cond, "key": key, "reason": str(e)})

    @cached_property
    def _loaded(self) -> list[tuple[str, str, Trajectory]]:
        self._problems: list[dict[str, str]] = []
        return list(self._trajectories())

    def problems(self) -> pd.DataFrame:
        """Return one row per episode file that could not be read (condition, key, reason):
        those episodes are in no other frame, and a run with them still loads."""
        self._loaded  # noqa: B018 - reading the files is what finds them
        return pd.DataFrame(self._problems, columns=["condition", "key", "reason"])

    def conditions(self) -> pd.DataFrame:
        """Return one row per condition: condition, suite, episodes (complete), errored
        (kept under errors/), then the condition's spec fields."""
        rows = []
        for cond, spec in self.run.conditions.items():
            fields = {k: (json.dumps(v) if isinstance(v, dict | list) else v)
                      for k, v in spec.items() if k != "suite"}
            rows.append({"condition": cond, "suite": _suite_of(cond, spec),
                         "episodes": len(self.run.episode_keys(cond)),
                         "errored": len(self.run.errored_keys(cond)), **fields})
        return pd.DataFrame(rows, columns=None if rows else ["condition", "suite", "episodes",
                                                             "errored"])

    def episodes(self) -> pd.DataFrame:
        """Return one row per complete episode: suite, condition, episode_id, key, seed,
        task_id, team (who sat where: `agent_0=llm:A,agent_1=rule`; a crossplay run adds
        partner_first and partner_others, the partners' names), termination, success,
        events, then every metric of the family's
        `Suite.metrics` (NaN where it does not apply; a metric named like one of the first
        columns is left to that column)."""
        rows = []
        partners = self._partners()
        for cond, key, t in self._loaded:
            end = t.end
            row: dict[str, Any] = {
                "suite": t.header.suite, "condition": cond, "episode_id": t.header.episode_id,
                "key": key, "seed": t.header.seed, "task_id": t.header.task_id,
                "team": ",".join(f"{a.id}={a.driver}" for a in t.header.team),
                **({"partner_first": partners.get(cond, (None, None))[0],
                    "partner_others": partners.get(cond, (None, None))[1]}
                   if partners else {}),
                "termination": end.termination if end else None,
                "success": bool(end.success) if end else False, "events": len(t.events)}
            suite = suite_object(t.header.suite)
            if suite is not None:
                for name, value in suite.metrics(t).items():
                    row.setdefault(name, value)
            rows.append(row)
        return pd.DataFrame(rows, columns=None if rows else list(EPISODE_COLUMNS))

    def _partners(self) -> dict[str, tuple[str, str]]:
        """Return {condition: (partner in agent_0, partner in the other seats)} of a
        crossplay run (empty for any other run)."""
        from coordbench.crossplay.matrix import load

        design = load(self.path)
        if design is None:
            return {}
        names = design.names()
        return {c: (names[i], names[j]) for i, row in enumerate(design.cells)
                for j, c in enumerate(row)}

    def profile(self) -> pd.DataFrame:
        """Return one row per complete episode of a family with a coordination profile:
        suite, condition, episode_id, then every measure of `metrics.profile.KEYS` (NaN
        where it does not apply), the numbers `coordbench profile` averages."""
        from coordbench.metrics.profile import KEYS, episode_profile
        from coordbench.runner.family import names

        profiled = names("profile")

        rows = [{"suite": t.header.suite, "condition": cond, "episode_id": t.header.episode_id,
                 **{k: (float("nan") if v is None else v)
                    for k, v in episode_profile(t).items()}}
                for cond, _, t in self._loaded if t.header.suite in profiled]
        return pd.DataFrame(rows, columns=["suite", "condition", "episode_id", *KEYS])

    def steps(self) -> pd.DataFrame:
        """Return one row per agent per step: suite, condition, episode_id, t, agent, action,
        outcome, conflict (the agent was in a same-step conflict), reward (STAT), completion
        (household and constructs: after the step), detail; household rows add args (JSON),
        obj_class and completed; STAT rows add executed. Physical episodes have no
        per-agent steps (see events())."""
        rows: list[dict[str, Any]] = []
        for cond, _, t in self._loaded:
            base = {"suite": t.header.suite, "condition": cond,
                    "episode_id": t.header.episode_id}
            for e in t.events:
                if isinstance(e, HouseholdStepEvent):
                    fought = {a for c in e.conflicts for a in c.agents}
                    for a in e.actions:
                        rows.append({**base, "t": e.t, "agent": a.agent, "action": a.action,
                                     "outcome": a.outcome, "conflict": a.agent in fought,
                                     "reward": float("nan"), "completion": e.completion,
                                     "detail": a.detail, "args": json.dumps(a.args),
                                     "obj_class": a.obj_class,
                                     "completed": ",".join(a.completed)})
                elif isinstance(e, StatStepEvent):
                    fought = {a for c in e.conflicts for a in c.agents}
                    for i, (act, done, r) in enumerate(zip(e.actions, e.executed, e.rewards,
                                                           strict=True)):
                        rows.append({**base, "t": e.t, "agent": i, "action": str(act),
                                     "outcome": "ok" if act == done else "forced_idle",
                                     "conflict": i in fought, "reward": r,
                                     "completion": float("nan"), "detail": "",
                                     "executed": done})
        return pd.DataFrame(rows, columns=None if rows else list(STEP_COLUMNS))

    def calls(self) -> pd.DataFrame:
        """Return one row per model call: suite, condition, episode_id, then every field of
        the call as recorded (agent, role, phase, model, tokens, latency_s, cache_hit,
        parse_status, error, reply, ...)."""
        return self._rows(ModelCallEvent, ["t", "agent", "role", "phase", "model"])

    def messages(self) -> pd.DataFrame:
        """Return one row per message: suite, condition, episode_id, t, phase, round, sender,
        recipients (JSON; null = everyone), content, tokens."""
        return self._rows(MessageEvent, ["t", "phase", "round", "sender", "content"])

    def _rows(self, kind: type, empty: list[str]) -> pd.DataFrame:
        rows = []
        for cond, _, t in self._loaded:
            for e in t.steps(kind):
                fields = e.model_dump(mode="json", exclude={"type"})
                fields = {k: json.dumps(v) if isinstance(v, list | dict) else v
                          for k, v in fields.items()}
                rows.append({"suite": t.header.suite, "condition": cond,
                             "episode_id": t.header.episode_id, **fields})
        return pd.DataFrame(rows, columns=None if rows else
                            ["suite", "condition", "episode_id", *empty])

    def prompts(self) -> pd.DataFrame:
        """Return one row per stored prompt of the run's model calls: request_hash, model,
        messages (JSON; images as their sha256). Join with calls() on request_hash."""
        rows = []
        folder = self.path / "prompts"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            prompt = self.run.load_prompt(path.stem)
            rows.append({"request_hash": path.stem, "model": prompt.get("model"),
                         "messages": json.dumps(prompt.get("messages"))})
        return pd.DataFrame(rows, columns=["request_hash", "model", "messages"])

    def events(self) -> pd.DataFrame:
        """Return one row per event of every kind: suite, condition, episode_id, index (its
        place in the episode), type, t, and the rest of its fields as one JSON object."""
        rows = []
        for cond, _, t in self._loaded:
            for i, e in enumerate(t.events):
                fields = e.model_dump(mode="json")
                rows.append({"suite": t.header.suite, "condition": cond,
                             "episode_id": t.header.episode_id, "index": i,
                             "type": fields.pop("type"), "t": fields.pop("t"),
                             "fields": json.dumps(fields)})
        return pd.DataFrame(rows, columns=None if rows else
                            ["suite", "condition", "episode_id", "index", "type", "t",
                             "fields"])

    def attribution(self) -> pd.DataFrame:
        """Return one row per attributed episode and responsible seat, from the results
        `coordbench attribute` stored beside the episodes (`RUN/attribution/`): condition,
        episode_id, key, outcome (the recorded metric the failure was judged by), seat,
        step (its decisive step: the last from which taking the seat over still rescues the
        episode), reference (what took it over), blame (its share), rescue_rate with
        rescue_lo and rescue_hi (the rate's 95% interval), replays and calls (of the whole
        episode's attribution). An episode that no single seat rescues has one row with seat
        and reference None and step, blame and the rescue rate missing; an episode whose
        replay differed from its recording (refused) is left out. No rows for a run never
        attributed."""
        from coordbench.report.compose import attributions

        rows = []
        for r in attributions(self.run):
            if "refused" in r:
                continue
            base = {"condition": r.get("condition"), "episode_id": r.get("episode"),
                    "key": r.get("key"), "outcome": r.get("outcome")}
            tail = {"replays": r.get("replays"), "calls": r.get("calls")}
            seats = r.get("responsible") or [None]
            for x in seats:
                x = x or {}
                rate = x.get("rescue_rate") or {}
                rows.append({**base, "seat": x.get("seat"), "step": x.get("step"),
                             "reference": x.get("reference"), "blame": x.get("blame"),
                             "rescue_rate": rate.get("mean"), "rescue_lo": rate.get("lo"),
                             "rescue_hi": rate.get("hi"), **tail})
        frame = pd.DataFrame(rows, columns=list(ATTRIBUTION_COLUMNS))
        for col in ("step", "replays", "calls"):  # whole numbers, missing where no seat
            frame[col] = frame[col].astype("Int64")
        for col in ("outcome", "blame", "rescue_rate", "rescue_lo", "rescue_hi"):
            frame[col] = frame[col].astype(float)
        for col in ("seat", "reference"):  # None (not NaN) where no single seat rescues
            frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
        return frame

    def attributed(self) -> bool:
        """Return whether `coordbench attribute` stored any result for the run."""
        from coordbench.report.compose import attributions

        return bool(attributions(self.run))


def _columnar(frame: pd.DataFrame) -> pd.DataFrame:
    """Return `frame` with every column Parquet can type: a column mixing kinds of value (a
    spec field that is a number in one family and text in another) becomes text."""
    out = frame.copy()
    for col in [c for c in out.columns if pd.api.types.is_object_dtype(out[c].dtype)]:
        kinds = {type(v) for v in out[col] if v is not None and v == v}
        if len(kinds) > 1:
            out[col] = [None if v is None or v != v else str(v) for v in out[col]]
    return out


def load_run(path: str | Path) -> RunData:
    """Return the run directory at `path` as DataFrames (RunDirError names a missing or
    damaged run)."""
    return RunData(RunDir.open(path))


TABLES = ("episodes", "profile", "steps", "calls", "messages", "prompts", "conditions",
          "problems")


def export(data: RunData, fmt: str, out: Path) -> list[Path]:
    """Write every table of `data` into the folder `out` as <table>.csv or <table>.parquet
    (attribution only for a run that has been attributed); return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in TABLES + (("attribution",) if data.attributed() else ()):
        frame = getattr(data, name)()
        path = out / f"{name}.{fmt}"
        tmp = path.with_name(path.name + ".tmp")
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        else:
            _columnar(frame).to_parquet(tmp, index=False)
        tmp.replace(path)  # a reader never sees half a file
        paths.append(path)
    return paths
