"""The coordination constructs on the one runner: conditions, cases, play, summaries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coordbench.agents.team.dials import dials_suffix
from coordbench.agents.team.seats import has_human, team_label
from coordbench.core.provenance import file_digest
from coordbench.core.rundir import safe_name
from coordbench.core.sample import Sample, draw_order, stratified_sample
from coordbench.core.trajectory import Trajectory
from coordbench.envs.household.render import ImageStore
from coordbench.errors import ConfigError
from coordbench.llm.client import harness_for
from coordbench.metrics.constructs import episode_metrics
from coordbench.runner import Case, PlayContext, play_concurrently
from coordbench.runner.suite import Played, harness_source

from .episode import ConstructSpec, arun_construct, load_instance
from .instances import select_indexed, select_sample, selection_strata, stratum

HEADLINE = ("SR", "CS", "legal_rate")


def condition_name(subset: str, construct: str | None, team: int | None,
                   spec: ConstructSpec) -> str:
    """Return the run-directory name of a construct condition."""
    model = safe_name(f"-{spec.model}") if spec.model else ""
    who = spec.agents if spec.seats is None else safe_name(f"team-{team_label(spec.seats)}")
    order = "" if spec.order == "index" else f"_order-{spec.order}"
    cap = "" if spec.buffer_capacity is None else f"_cap{spec.buffer_capacity}"
    proto = "" if spec.protocol is None else f"_proto-{spec.protocol}"
    proto += "" if spec.on_protocol_failure == "end" else f"_pf-{spec.on_protocol_failure}"
    proto += dials_suffix(spec.dials)
    if spec.checkpoint is not None:  # which trained team: its file's name and content digest
        model = safe_name(f"-{Path(spec.checkpoint).stem}-{file_digest(spec.checkpoint)}")
    return (f"constructs_{subset}_{construct or 'all'}_team{team or 'all'}_{spec.planner}_"
            f"{who}{model}_{spec.observation}_seed{spec.seed}{order}{cap}{proto}")


@dataclass(frozen=True)
class ConstructCondition:
    """A construct condition: the planners' spec and which instances (a built-in subset, or
    an instance file; only construct D1-D4 / team size; with `limit`, a stratified sample of
    that many over constructs x team sizes: `core.sample`)."""

    planners: ConstructSpec
    subset: str = "all"
    construct: str | None = None
    team: int | None = None
    limit: int | None = None
    instances_file: str | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")

    def indexed(self) -> list[tuple[int, dict[str, Any]]]:
        """Return (index in the selection, instance dict) of the condition's instances, in
        the selection's order (with `limit`: its stratified sample)."""
        if not self.instances_file:
            return select_indexed(self.subset, self.construct, self.team, self.limit)
        raws = load_instance_file(Path(self.instances_file))
        picked = (range(len(raws)) if self.limit is None
                  else file_sample(raws, self.limit).indices)
        return [(i, raws[i]) for i in picked]

    def instances(self) -> list[dict[str, Any]]:
        """Return the condition's instance dicts, in order."""
        return [raw for _, raw in self.indexed()]

    def sample(self) -> Sample | None:
        """Return the stratified sample `limit` draws (None without a limit)."""
        if self.limit is None:
            return None
        if self.instances_file:
            return file_sample(load_instance_file(Path(self.instances_file)), self.limit)
        return select_sample(self.subset, self.construct, self.team, self.limit)


def instance_stratum(raw: dict[str, Any]) -> tuple[str, int]:
    """Return an instance dict's stratum: its construct and team size (its roles, else its
    agents' start rooms)."""
    task, info = load_instance(raw, str(raw.get("task_id")))
    return stratum(info["construct"], len(task.roles) if task.roles else len(task.start_rooms))


def file_sample(raws: list[dict[str, Any]], limit: int) -> Sample:
    """Return the stratified sample of `limit` of an instance file's instances."""
    return stratified_sample(raws, instance_stratum, limit)


def load_instance_file(path: Path) -> list[dict[str, Any]]:
    """Return the instances of a JSON list file, each checked against the task and instance
    models (`envs.household.schema`, `suites.constructs.schema`); ConfigError names the file,
    the instance and the field of the first problem."""
    from coordbench.core.files import read_json
    from coordbench.envs.household.schema import check_references, check_task

    from .schema import check_instance

    raws = read_json(path, "instance file")
    if not isinstance(raws, list) or not raws:
        raise ConfigError(f"{path}: expected a non-empty JSON list of instances")
    for k, raw in enumerate(raws):
        where = (f"{path.name}[{k}] ({raw.get('task_id', '?')})" if isinstance(raw, dict)
                 else f"{path.name}[{k}]")
        model = check_task(raw, where)
        task, _ = load_instance(raw, where)
        check_references(model, set(task.scene.nodes), set(task.scene.rooms), where)
        check_instance(raw, task, where)
    return raws


class ConstructSuite:
    """The coordination constructs on the one runner: a case is an instance."""

    name = "constructs"
    headline = HEADLINE

    def condition(self, spec: ConstructCondition) -> str:
        """Return the condition's directory name."""
        subset = f"file-{Path(spec.instances_file).stem}" if spec.instances_file else spec.subset
        # `_sample`, not the `_limit` of runs that played the first K instances: such a run
        # is never resumed (and mixed) as a sample
        return (condition_name(subset, spec.construct, spec.team, spec.planners)
                + (f"_sample{spec.limit}" if spec.limit else ""))

    def manifest(self, spec: ConstructCondition) -> dict[str, Any]:
        """Return the planners' spec (buffer capacity included: None, the instances' own, is
        what a manifest written before it was a parameter is brought up to; the protocol only
        when there is one) and the instance selection."""
        planners = spec.planners.as_dict()
        for key in ("protocol", "checkpoint", "dials", "seats"):  # conditions without one
            # keep their manifest
            if planners[key] is None:
                del planners[key]
        # kept where a planner can break the protocol (model-driven, or dialed rule planners),
        # so that a run made before a bad reply ended the episode is never resumed under the
        # new rule (and mixed): its manifest lacks the field and is refused in one line
        can_break = spec.planners.agents == "llm" or planners.get("dials") is not None
        if planners["on_protocol_failure"] == "end" and not can_break:
            del planners["on_protocol_failure"]
        return {**planners, "subset": spec.subset, "construct": spec.construct,
                "team": spec.team, "limit": spec.limit, "instances_file": spec.instances_file}

    def cases(self, spec: ConstructCondition, limit: int | None = None) -> list[Case]:
        """Return the condition's instances in order, each keyed by its index in the
        selection; `limit` (a run's cap) draws the stratified sample of that many, a part of
        the condition's own sample (samples of one selection nest)."""
        if limit is not None and (spec.limit is None or limit < spec.limit):
            spec = replace(spec, limit=limit)
        return [Case(f"inst{k:04d}", raw) for k, raw in spec.indexed()]

    def sample_keys(self, fields: dict[str, Any]) -> list[str]:
        """Return the case keys of the condition recorded as `fields` (its manifest entry)
        in the order `--limit` draws them: a sample of K is the first K (the viewer tells a
        missing episode from one never drawn by it)."""
        if fields.get("instances_file"):
            raws = load_instance_file(Path(fields["instances_file"]))
            strata = [instance_stratum(raw) for raw in raws]
        else:
            strata = selection_strata(fields.get("subset", "all"), fields.get("construct"),
                                      fields.get("team"))
        return [f"inst{k:04d}" for k in draw_order(strata)]

    def unit_size(self, spec: ConstructCondition) -> int:
        """Return instances per unit."""
        return 8 if spec.planners.agents == "llm" else 40

    def play(self, spec: ConstructCondition, cases: list[Case], ctx: PlayContext
             ) -> Iterator[Played] | AsyncIterator[Played]:
        """Yield (case, trajectory) as each instance ends (model-driven ones concurrently)."""
        ps = spec.planners
        store = ImageStore(Path(ctx.run_path)) if ps.observation == "image" else None
        cond = self.condition(spec)
        # a plan of several families shares one resources object that carries the harness
        source = harness_source(ctx.resources)
        harness = harness_for(source) if ps.agents == "llm" else None

        async def one(case: Case) -> Trajectory:
            return await arun_construct(case.data, ps, f"{cond}/{case.key}", harness, store,
                                        limits=ctx.limits, resources=ctx.resources)

        if harness is not None or has_human(ps.seats):
            return play_concurrently(cases, one, ctx)
        return ((case, asyncio.run(one(case))) for case in cases)

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        """Return the construct score, success, legality and diagnostics of one episode."""
        return episode_metrics(trajectory)


SUITE = ConstructSuite()


def plan_items(p: dict[str, Any]) -> tuple[list[tuple], list[str]]:
    """Return (runner items, progress labels) of the default benchmark's construct section:
    each planner on the subset (its optional `limit`: a stratified sample of that many)."""
    items = [(SUITE, ConstructCondition(ConstructSpec(planner, p["agents"]), p["subset"]),
              p.get("limit")) for planner in p["planners"]]
    return items, [f"constructs {p['subset']} {planner}" for planner in p["planners"]]


def api_condition(options: dict[str, Any]) -> tuple[ConstructSuite, ConstructCondition, None]:
    """Return (suite, condition, None) from `coordbench.evaluate("constructs", ...)`'s
    options (the selection `subset`, `construct`, `team`, `limit`, `instances_file`)."""
    where = {k: options.pop(k) for k in ("subset", "construct", "team", "limit",
                                         "instances_file") if k in options}
    return SUITE, ConstructCondition(ConstructSpec(**options), **where), None
