"""Reproduce MECoBench's analyses (seeds: "MECoBench", 2026; Sections 4 and 6, Appendices D-F).

The conditions (`design`) are household conditions on the v1 instance set (96 parallel and 96
sequential cases); `--quick` plays every fourth case (24 + 24). Without a model, the rows the
paper fills with MLLM teams are played by coordbench's rule teams (agents/household/rule.py),
the offline agents that use communication, priors and protocols; with `--model M` every such
row is played by that model. The oracle team is coordbench's reference and always runs.

The paper's numbers quoted here are its best open-weight rows where it reports several models
(Qwen3-VL-32B unless said otherwise), copied from the tables named in each item.

The study is split by the paper's sections: `mecobench_design.py` (the conditions),
`mecobench_teams.py` (Sections 4.1-4.3), `mecobench_behaviour.py` (Section 6, Appendices E-F)
and `mecobench_models.py` (the model comparisons of Section 5).
"""

from __future__ import annotations

from pathlib import Path

from coordbench.core.rundir import RunDir
from coordbench.core.sample import Sample

from .examples import mecobench_items
from .mecobench_behaviour import (
    correction_item,
    duplicate_grab_item,
    failure_item,
    leader_scaling_item,
    oracle_item,
    query_item,
    relative_gain_item,
    shared_memory_item,
    tags_item,
)

# the paper's pieces (`reproduce/paper.py`): plan, labels, resources, compare, study
from .mecobench_design import (  # noqa: F401
    PAPER,
    TITLE,
    Key,
    episodes,
    keys,
    labels,
    plan,
    resources,
)
from .mecobench_models import compare  # noqa: F401
from .mecobench_teams import (
    bars_item,
    comm_ablation_item,
    no_location_item,
    no_location_objects_item,
    objects_item,
    prior_item,
    progress_item,
    protocol_item,
    scaling_item,
)
from .sampled import mark_untestable, missing_reason, sample_item, sample_line
from .study import VERDICT_RULE, Options, Study


def study(run: RunDir, options: Options, out: Path) -> Study:
    """Return the MECoBench study recomputed from the run's trajectories."""
    ep = episodes(run, options, out)
    who = (f"the model `{options.model}`" if options.model else
           options.offline_who("rule teams"))
    subset = ("the quick subset (every fourth v1 case: 24 parallel + 24 sequential)"
              if options.quick else "the v1 instance set (96 parallel + 96 sequential cases)")
    if options.tasks:
        subset = f"the task files of `{options.tasks}` (every task, played whole)"
    preamble = (f"Rows the paper fills with MLLM teams are played here by {who}, on {subset}. "
                + VERDICT_RULE + " Conflict set: grab and open (the paper's).")
    items = [scaling_item(ep), objects_item(ep), no_location_item(ep),
             no_location_objects_item(ep), progress_item(ep),
             comm_ablation_item(ep), bars_item(ep), protocol_item(ep), prior_item(ep),
             failure_item(ep), query_item(ep), correction_item(ep), tags_item(ep),
             relative_gain_item(ep), leader_scaling_item(ep), shared_memory_item(ep),
             duplicate_grab_item(ep), oracle_item(ep)]
    items += mecobench_items(ep)  # Tables 17 and 21: examples from the episodes
    if options.limit is not None:
        samples = limit_samples(options, out)
        preamble += " " + sample_line(options.limit, samples, "tasks")
        # the object-count trend is fitted on the parallel teams' episodes
        objects = missing_reason(options.limit, samples["parallel"], 1, 2, "object counts")
        mark_untestable(items, {"meco-objects-sr": objects, "meco-noloc-objects-sr": objects,
                                "meco-noloc-objects-milder": objects})
        items.append(sample_item(options.limit, samples, "tasks"))
    return Study(PAPER, TITLE, preamble, items)


def limit_samples(options: Options, out: Path) -> dict[str, Sample]:
    """Return the --limit sample of each structure's tasks (every condition of a structure
    plays it, whatever its team), by structure."""
    from coordbench.suites.mecobench.suite import SUITE

    from .mecobench_design import _condition

    assert options.limit is not None
    return {s: SUITE.sample(_condition(Key(s, 2), options, out), options.limit)
            for s in ("parallel", "sequential")}
