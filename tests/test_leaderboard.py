"""`table --by model`: models as rows, paired differences over the instances both played."""

import json

import pytest
from typer.testing import CliRunner

from coordbench.agents.team.dials import Dials
from coordbench.cli import app
from coordbench.core.rundir import RunDir
from coordbench.report import leaderboard as L
from coordbench.suites.constructs.episode import ConstructSpec, run_construct
from coordbench.suites.constructs.instances import select

RAWS = select("rep240", "D1", 2)


def _run(path, model, spec, instances=RAWS):
    """A run whose one condition is `spec`'s team, filed as played by `model` (the same
    setting for every model, so their episodes pair by case)."""
    run = RunDir.create_or_open(path)
    cond = "constructs_rep240_D1_team2_central"
    run.register(cond, {"suite": "constructs", "model": model, "planner": "central",
                        "subset": "rep240", "construct": "D1", "team": 2, "seed": 0})
    run.save_manifest()
    for k, raw in enumerate(instances):
        run.write_episode(cond, f"inst{k:04d}", run_construct(raw, spec, f"{cond}/inst{k:04d}"))
    return RunDir.open(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("boards")
    return [_run(root / "a", "strong", ConstructSpec("central", "oracle")),
            _run(root / "b", "weak", ConstructSpec("central", "rule", dials=Dials(
                protocol_violation=0.08))),
            _run(root / "c", "middling", ConstructSpec("central", "rule"))]


def test_models_rank_and_pair_as_their_play_implies(runs):
    (board,) = L.collect(runs, reference="strong")
    assert board.suite == "constructs" and board.reference == "strong"
    assert board.models == ["strong", "middling", "weak"]
    sr = {m: board.rows[m]["SR"]["mean"] for m in board.models}
    assert sr["strong"] == 1.0 and sr["strong"] >= sr["middling"] > sr["weak"]
    weak = board.paired["weak"]
    assert weak["pairs"] == len(RAWS)
    d = weak["metrics"]["SR"]
    # paired over the same instances: the difference of success rates, McNemar significant
    assert d["delta"] == pytest.approx(sr["weak"] - sr["strong"])
    assert d["hi"] < 0 and d["p"] < 0.001 and d["p_holm"] >= d["p"]
    assert d["discordant"][0] == 0  # the weak team never succeeds where the oracle fails


def test_table_by_model_from_the_cli(runs, tmp_path):
    paths = [str(r.path) for r in runs]
    res = CliRunner().invoke(app, ["table", *paths, "--by", "model", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["model"] for r in rows] == ["middling", "strong", "weak"]  # no reference given
    first = rows[0]
    assert first["paired"] is None and set(first["SR"]) == {"mean", "ci95", "n", "lo", "hi"}
    assert rows[2]["paired"]["SR"]["test"] == "mcnemar-exact"
    res = CliRunner().invoke(app, ["table", *paths, "--by", "model", "--reference", "strong"])
    assert res.exit_code == 0, res.output
    assert "## constructs: models" in res.stdout and "Paired against strong" in res.stdout
    for fmt, needle in (("csv", "suite,model,metric"), ("html", "<table>")):
        res = CliRunner().invoke(app, ["table", *paths, "--by", "model", "--format", fmt])
        assert res.exit_code == 0 and needle in res.stdout


def test_bad_leaderboard_input_is_one_line(runs, tmp_path):
    from tests.cli_errors import error_line

    paths = [str(r.path) for r in runs]
    assert "--reference 'nobody' played no condition of these runs; models: middling, " \
        "strong, weak" in error_line(["table", *paths, "--by", "model", "--reference",
                                      "nobody"], tmp_path)
    assert "--by must be model" in error_line(["table", *paths, "--by", "task"], tmp_path)
    assert "--reference needs --by model" in error_line(["table", *paths, "--reference",
                                                         "strong"], tmp_path)


def test_repeated_seeds_give_pass_at_k_and_pass_hat_k(tmp_path):
    from coordbench.agents.team.dials import Dials

    raws = RAWS[:6]
    spec = ConstructSpec("central", "rule", dials=Dials(protocol_violation=0.05))
    runs = []
    for seed in (0, 1, 2):  # one model, one setting, three seeds: three trials an instance
        run = RunDir.create_or_open(tmp_path / f"s{seed}")
        cond = "constructs_rep240_D1_team2_central"
        run.register(cond, {"suite": "constructs", "model": "m", "planner": "central",
                            "subset": "rep240", "construct": "D1", "team": 2, "seed": seed})
        run.save_manifest()
        for k, raw in enumerate(raws):
            tr = run_construct(raw, ConstructSpec("central", "rule", seed=seed, dials=Dials(
                protocol_violation=0.05)), f"{cond}/inst{k:04d}")
            run.write_episode(cond, f"inst{k:04d}", tr)
        runs.append(RunDir.open(tmp_path / f"s{seed}"))
    assert spec.dials.protocol_violation == 0.05
    (board,) = L.collect(runs)
    rep = board.repeats["m"]
    assert rep["k"] == 3 and rep["instances"] == len(raws)
    # by hand from the trials: per instance pass@3 = any success, pass^3 = all successes
    trials = {}
    for run in runs:
        (cond,) = run.conditions
        for key in run.episode_keys(cond):
            trials.setdefault(key, []).append(run.load_episode(cond, key).end.success)
    assert rep["pass@k"] == pytest.approx(sum(any(v) for v in trials.values()) / len(raws))
    assert rep["pass^k"] == pytest.approx(sum(all(v) for v in trials.values()) / len(raws))


def test_a_rule_team_pairs_with_a_model_whose_manifest_names_the_default_rule():
    rule = {"suite": "constructs", "agents": "rule", "planner": "central", "seed": 0,
            "team": 2, "protocol": None}
    model = {**rule, "agents": "llm", "model": "A", "on_protocol_failure": "end"}
    assert L.setting_of(rule) == L.setting_of(model)
    assert L.setting_of(rule) != L.setting_of({**model, "on_protocol_failure": "skip"})
    dialed = {**rule, "dials": Dials(perception=0.1).as_dict()}
    assert L.setting_of(dialed) == L.setting_of(rule)  # dials say who played, not what


def test_who_played_names_checkpoints_and_dials():
    assert L.model_of({"agents": "learned", "checkpoint": "/x/qmix-3.pt"}) == "learned:qmix-3"
    assert L.model_of({"agents": "rule", "dials": Dials(perception=0.1).as_dict()}) == \
        "rule[perception0.1]"
    assert L.model_of({"agents": "rule", "dials": Dials().as_dict()}) == "rule"


def test_one_row_in_two_runs_is_one_line(runs, tmp_path):
    import shutil

    from coordbench.errors import ConfigError

    assert len(L.collect([runs[0], runs[0]])[0].models) == 1  # one run named twice: once
    copy = shutil.copytree(runs[0].path, tmp_path / "copy")
    with pytest.raises(ConfigError, match="pass each run once") as e:
        L.collect([runs[0], RunDir.open(copy)])
    assert "\n" not in str(e.value)
