"""`--limit K` draws a stratified sample (core/sample.py): round-robin over the strata, the
same cases every time, no case twice, everything once K reaches the population; and the
studies play every construct and several team sizes (CoCoBench), both structures
(MECoBench), and call a finding untestable when the sample lacks the strata it compares."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.core.sample import draw_order, stratified_sample, stratum_order
from coordbench.metrics.constructs import construct_of

runner = CliRunner()
CONSTRUCTS = ("D1", "D2", "D3", "D4")
# an uneven population: 12 strata of 1 to 6 members
POPULATION = [(c, t) for i, c in enumerate(CONSTRUCTS) for j, t in enumerate((2, 3, 4))
              for _ in range(1 + (i * 3 + j) % 6)]


def _counts(sample, items) -> Counter:
    return Counter(items[i] for i in sample.indices)


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8, 12, 13, 20, 30, len(POPULATION) - 1])
def test_the_sample_spreads_as_evenly_as_k_allows(k):
    sizes = Counter(POPULATION)
    sample = stratified_sample(POPULATION, lambda s: s, k)
    assert sample.size == min(k, len(POPULATION)) == len(set(sample.indices))
    counts = _counts(sample, POPULATION)
    top = max(counts.values(), default=0)
    # round-robin: a stratum has fewer than the fullest one minus one only when it ran out
    for s, n in sizes.items():
        assert counts[s] >= min(n, top - 1), (s, counts[s], n, top)
    assert sum(counts.values()) == sample.size
    assert set(sample.strata) == {f"{c}x{t}" for c, t in counts}
    assert set(sample.missing) == {f"{c}x{t}" for c, t in sizes} - set(sample.strata)
    assert sample.strata == {f"{c}x{t}": n for (c, t), n in counts.items()}


def test_the_sample_is_deterministic_nested_and_whole_past_the_population():
    again = list(reversed(list(reversed(POPULATION))))  # an equal list, another object
    previous: set[int] = set()
    for k in range(len(POPULATION) + 1):
        one = stratified_sample(POPULATION, lambda s: s, k)
        assert one == stratified_sample(again, lambda s: s, k)
        assert previous <= set(one.indices)  # a smaller sample is part of a larger one
        previous = set(one.indices)
    for k in (len(POPULATION), len(POPULATION) + 1, 10_000):
        whole = stratified_sample(POPULATION, lambda s: s, k)
        assert whole.indices == tuple(range(len(POPULATION))) and whole.whole
        assert whole.missing == [] and sum(whole.strata.values()) == len(POPULATION)
    assert stratified_sample(POPULATION, lambda s: s, None).whole
    assert sorted(draw_order(POPULATION)) == list(range(len(POPULATION)))
    # another seed draws other members, from the same strata
    other = stratified_sample(POPULATION, lambda s: s, 8, seed=1)
    assert other.strata == stratified_sample(POPULATION, lambda s: s, 8).strata
    with pytest.raises(ValueError):
        stratified_sample(POPULATION, lambda s: s, -1)


def test_the_first_strata_cover_every_value_of_every_dimension():
    order = stratum_order((c, t) for c in CONSTRUCTS for t in (2, 3, 4))
    assert {c for c, _ in order[:4]} == set(CONSTRUCTS)
    assert {t for _, t in order[:3]} == {2, 3, 4}
    firsts = order[:8]
    assert Counter(c for c, _ in firsts) == Counter({c: 2 for c in CONSTRUCTS})
    assert set(Counter(t for _, t in firsts).values()) <= {2, 3}
    sample = stratified_sample(POPULATION, lambda s: s, 8)
    assert sample.values(0) == list(CONSTRUCTS) and len(sample.values(1)) == 3
    one = stratified_sample(POPULATION, lambda s: s, 1)
    assert one.values(1) == [2] and one.missing_values(1) == [3, 4]
    assert "a stratified sample of 1 of" in one.describe("instances")


def test_the_suites_sample_their_strata_and_play_everything_past_the_population():
    from coordbench.suites.constructs.episode import ConstructSpec
    from coordbench.suites.constructs.instances import select, select_sample
    from coordbench.suites.constructs.suite import SUITE as CS
    from coordbench.suites.constructs.suite import ConstructCondition
    from coordbench.suites.mecobench.episode import HouseholdSpec
    from coordbench.suites.mecobench.suite import SUITE as MS
    from coordbench.suites.mecobench.suite import mecobench_condition

    sample = select_sample("rep240", None, None, 8)
    assert {c for c, _ in (sample.parts[s] for s in sample.strata)} == set(CONSTRUCTS)
    assert len(sample.values(1)) > 1
    raws = select("rep240", None, None, 8)
    assert {r["coordbench_construct"]["construct"] for r in raws} == set(CONSTRUCTS)
    # K above the population: every instance of the selection, once, keyed by its index
    cond = ConstructCondition(ConstructSpec("central", "rule"), "rep240", "D4", 2, 50)
    keys = [c.key for c in CS.cases(cond)]
    assert keys == [f"inst{k:04d}" for k in range(20)]
    assert CS.condition(cond).endswith("_sample50")
    # a run's cap draws a part of the condition's own sample (the pilot of a study)
    small = ConstructCondition(ConstructSpec("central", "rule"), "rep240", None, None, 8)
    assert {c.key for c in CS.cases(small, 1)} <= {c.key for c in CS.cases(small)}
    household = mecobench_condition(None, "v1", HouseholdSpec("parallel", 2, "none", "rule"))
    every = [c.key for c in MS.cases(household)]
    assert [c.key for c in MS.cases(household, 1000)] == every
    eight = MS.cases(household, 8)
    assert len({c.key for c in eight}) == 8 and {c.key for c in eight} <= set(every)
    objects = {sum(g.count for g in c.data[1].subgoals) for c in eight}
    assert len(objects) == 6  # every object count of v1 (2-7)
    assert [c.key for c in MS.cases(household, 8)] == [c.key for c in eight]


def _study(*args: str) -> dict:
    res = runner.invoke(app, ["reproduce", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def _played(out) -> dict[str, list[tuple[str, str, int]]]:
    """Return {condition: [(key, task id, team size)]}."""
    run = RunDir.open(out)
    return {c: [(t.header.episode_id.rsplit("/", 1)[-1], t.header.task_id,
                 len(t.header.team)) for t in run.load_episodes(c)] for c in run.conditions}


def test_cocobench_limit_8_plays_every_construct_and_several_team_sizes(tmp_path):
    from coordbench.llm.loopback import ScriptedServer
    from tests.scripted_models import planner_reply, registry

    offline = _study("cocobench", "--quick", "--limit", "8", "--out", str(tmp_path / "a"))
    with ScriptedServer(planner_reply({})) as server:
        models = registry(tmp_path, server.base_url)
        _study("cocobench", "--quick", "--limit", "8", "--model", "never", "--models",
               str(models), "--out", str(tmp_path / "m"))
    for out in ("a", "m"):
        run = RunDir.open(tmp_path / out)
        rows = [c for c, spec in run.conditions.items() if spec["buffer_capacity"] is None]
        assert rows
        for cond in rows:
            trajs = run.load_episodes(cond)
            assert len(trajs) == 8
            assert {construct_of(t) for t in trajs} == set(CONSTRUCTS), (out, cond)
            assert len({len(t.header.team) for t in trajs}) > 1, (out, cond)
    agents = {spec["agents"] for spec in RunDir.open(tmp_path / "m").conditions.values()}
    assert agents == {"llm", "oracle"}  # the model's rows are sampled as the offline ones
    # the same command again: the same instances
    _study("cocobench", "--quick", "--limit", "8", "--out", str(tmp_path / "b"))
    assert _played(tmp_path / "a") == _played(tmp_path / "b")
    md = (tmp_path / "a" / "reproduce.md").read_text()
    assert "a stratified sample of 8 of 240 instances: D1x2 1," in md
    items = {i["ref"]: i for i in json.loads((tmp_path / "a" / "findings.json").read_text())
             ["items"]}
    assert sum(items["Sample"]["data"]["the 240 subset"]["strata"].values()) == 8
    assert set(offline) == {"paper", "findings"}  # the --json contract is unchanged


def test_a_sample_without_the_strata_a_finding_needs_makes_it_untestable(tmp_path):
    payload = _study("cocobench", "--quick", "--limit", "1", "--out", str(tmp_path / "c"))
    found = {f["id"]: f for f in payload["findings"]}
    for fid, stratum in (("coco-team-size", "D1x3"), ("coco-d4-decentral", "D4x2"),
                         ("coco-d4-decentral-cs", "D4x2"), ("coco-capacity", "D4x2")):
        assert found[fid]["holds"] is None, fid
        assert found[fid]["note"].startswith("untestable: "), fid
        assert stratum in found[fid]["note"], fid
    # the oracle is judged on the instances drawn, not failed for the constructs left out
    assert found["coco-oracle"]["holds"] is True
    # one task per condition: one object count, no object-count trend to fit
    payload = _study("mecobench", "--quick", "--limit", "1", "--max-steps", "1", "--out",
                     str(tmp_path / "m"))
    objects = next(f for f in payload["findings"] if f["id"] == "meco-objects-sr")
    assert objects["holds"] is None and objects["note"].startswith("untestable: ")
    assert "parallel 3 objects" in objects["note"]
    # a sample with every stratum a finding compares leaves it to the runs
    payload = _study("cocobench", "--quick", "--limit", "8", "--out", str(tmp_path / "a"))
    assert not any(f["note"].startswith("untestable: the --limit")
                   for f in payload["findings"])


def test_mecobench_limit_8_plays_both_structures(tmp_path):
    out = tmp_path / "meco"
    _study("mecobench", "--quick", "--limit", "8", "--max-steps", "2", "--out", str(out))
    run = RunDir.open(out)
    by_structure: dict[str, set] = {}
    played = _played(out)
    for cond, spec in run.conditions.items():
        assert len(played[cond]) == 8, cond
        tasks = tuple((key, task) for key, task, _ in played[cond])
        by_structure.setdefault(spec["structure"], set()).add(tasks)
    assert set(by_structure) == {"parallel", "sequential"}
    # every condition of a structure plays the same sample, whatever its team
    assert all(len(samples) == 1 for samples in by_structure.values())
    md = (out / "reproduce.md").read_text()
    assert "parallel: a stratified sample of 8 of 24 tasks" in md
    assert "sequential: a stratified sample of 8 of 24 tasks" in md


def test_a_sampled_case_is_the_episode_a_run_of_every_case_plays(tmp_path):
    from tests.test_golden import trajectory_hashes

    cmd = ["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team", "3",
           "--protocol", "none", "--json"]
    for out, more in (("sample", ["--limit", "3"]), ("every", [])):
        res = runner.invoke(app, [*cmd, *more, "--out", str(tmp_path / out)])
        assert res.exit_code == 0, res.output
    sample, every = trajectory_hashes(tmp_path / "sample"), trajectory_hashes(tmp_path / "every")
    assert len(sample) == 3 and len(every) == 96
    assert all(every[key] == h for key, h in sample.items())


def test_the_viewer_lists_a_sample_without_the_cases_it_never_drew(tmp_path):
    from coordbench.suites.constructs.suite import SUITE
    from coordbench.viewer import index

    out = tmp_path / "r"
    res = runner.invoke(app, ["constructs", "run", "--subset", "rep240", "--limit", "4",
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    run = RunDir.open(out)
    (cond,) = run.conditions
    keys = run.episode_keys(cond)
    assert len(keys) == 4 and keys != [f"inst{k:04d}" for k in range(4)]
    rows = index.condition_rows(run, cond)
    assert [(r.key, r.status) for r in rows] == [(k, "ok") for k in keys]
    # an episode of the sample whose file is gone is missing; the cases between, never
    # drawn, are not
    order = SUITE.sample_keys(run.conditions[cond])
    assert order[:4] == sorted(keys, key=order.index)
    gone = min(keys[1:-1], key=order.index)
    (out / "episodes" / cond / f"{gone}.jsonl").unlink()
    rows = index.condition_rows(RunDir.open(out), cond)
    assert [(r.key, r.status) for r in rows] == [(k, "missing" if k == gone else "ok")
                                                 for k in keys]
