"""Rule-based teams under every protocol on the real MECoBench cases: the papers' mechanisms."""

import statistics

import pytest

from coordbench.agents.team.protocols import PROTOCOLS
from coordbench.envs.household.task import load_tasks
from coordbench.metrics.household import episode_metrics
from coordbench.suites.mecobench.episode import HouseholdSpec, run_case
from coordbench.suites.mecobench.instances import PARALLEL_EXAMPLES, SEQUENTIAL_EXAMPLES


def mean_metric(path, structure, n, protocol, key, seeds=range(4)):
    values = []
    for task in load_tasks(path):
        for seed in seeds:
            v = episode_metrics(run_case(task, HouseholdSpec(structure, n, protocol), seed,
                                         "x"))[key]
            if v is not None:
                values.append(v)
    return statistics.mean(values) if values else None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_runs_and_records_messages(protocol):
    task = load_tasks(PARALLEL_EXAMPLES)[0]
    tr = run_case(task, HouseholdSpec("parallel", 3, protocol), 0, "x")
    messages = [e for e in tr.events if e.type == "message"]
    assert (len(messages) == 0) == (protocol == "none")
    phases = {m.phase for m in messages}
    expected = {"none": set(), "broadcast": {"broadcast"}, "discuss": {"discuss"},
                "leader": {"report", "assignment"}, "leader_vision": {"report", "assignment"},
                "shared_memory": {"memory"}}[protocol]
    assert phases == expected
    assert tr.end is not None


def test_communication_lowers_conflicts_in_parallel_teams():
    none = mean_metric(PARALLEL_EXAMPLES, "parallel", 3, "none", "CAR")
    for protocol in ("broadcast", "shared_memory"):
        assert mean_metric(PARALLEL_EXAMPLES, "parallel", 3, protocol, "CAR") < none
    assert mean_metric(PARALLEL_EXAMPLES, "parallel", 3, "none", "duplicate_grabs") > 0
    assert mean_metric(PARALLEL_EXAMPLES, "parallel", 3, "broadcast", "duplicate_grabs") == 0


def test_handovers_fail_more_without_communication():
    none = mean_metric(SEQUENTIAL_EXAMPLES, "sequential", 2, "none", "HFR")
    assert none > 0.1
    for protocol in ("broadcast", "leader", "shared_memory"):
        assert mean_metric(SEQUENTIAL_EXAMPLES, "sequential", 2, protocol, "HFR") < none
        assert mean_metric(SEQUENTIAL_EXAMPLES, "sequential", 2, protocol, "SR") >= \
            mean_metric(SEQUENTIAL_EXAMPLES, "sequential", 2, "none", "SR")


def test_oracle_team_solves_every_real_case():
    for path, structure, n in [(PARALLEL_EXAMPLES, "parallel", 2),
                               (SEQUENTIAL_EXAMPLES, "sequential", 2)]:
        for task in load_tasks(path):
            tr = run_case(task, HouseholdSpec(structure, n, agents="oracle"), 0, "x")
            assert tr.end.success


@pytest.mark.parametrize("prior", ["none", "no_location", "noisy", "no_appearance"])
def test_rule_teams_work_under_every_prior(prior):
    from coordbench.suites.mecobench.instances import load_suite

    tasks = [t for t in load_suite("v1") if t.structure == "parallel"][:16]
    crs = []
    for k, task in enumerate(tasks):
        tr = run_case(task, HouseholdSpec("parallel", 2, "broadcast", prior=prior), k, "x")
        assert tr.header.params["budget"] == (60 if prior == "no_appearance" else 80)
        crs.append(episode_metrics(tr)["CR"])
    assert statistics.mean(crs) > 0.5
