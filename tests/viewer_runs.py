"""Small run directories of every family for the viewer's tests, built with the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.llm.loopback import ScriptedServer
from tests.scripted_team import household_reply

STAT = "stat_3A-6T-5x3_greedy_paper_seed0_limit700"
HOUSEHOLD = "mecobench_suite-v1_sequential_n2_none_rule_full_seed0"
D3 = "constructs_rep240_D3_teamall_central_rule_blind_seed0_sample1"
D4 = "constructs_rep240_D4_teamall_decentralized_rule_blind_seed0_sample1"
PHYSICAL = "physical_Handover_expert_main"


def _invoke(*args: str) -> None:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output


def build(out: Path) -> dict[str, str]:
    """Write one small run of every family into `out` (a model-driven household condition
    against the loopback server included); return {family: a condition name}."""
    o = str(out)
    _invoke("stat", "eval", "--config", "3A-6T-5x3", "--policy", "greedy", "--episodes", "3",
            "--out", o)
    _invoke("mecobench", "run", "--suite", "v1", "--structure", "sequential", "--team", "2",
            "--limit", "2", "--images", "--out", o)
    _invoke("constructs", "run", "--subset", "rep240", "--construct", "D3", "--limit", "1",
            "--out", o)
    _invoke("constructs", "run", "--subset", "rep240", "--construct", "D4", "--planner",
            "decentralized", "--limit", "1", "--out", o)
    _invoke("physical", "eval", "--task", "Handover", "--policy", "expert", "--rollouts", "1",
            "--out", o)
    with ScriptedServer(household_reply) as server:
        models = out.parent / "models.yaml"
        models.write_text(f"models:\n  scripted:\n    base_url: {server.base_url}\n"
                          "    model: scripted-1\n    max_retries: 1\n    timeout_s: 2\n")
        _invoke("mecobench", "run", "--agents", "llm", "--model", "scripted", "--models",
                str(models), "--structure", "parallel", "--team", "2", "--protocol",
                "broadcast", "--max-steps", "3", "--limit", "1", "--cache-path",
                str(out.parent / "cache.sqlite"), "--out", o)
    manifest = json.loads((out / "manifest.json").read_text())
    llm = next(c for c in manifest["conditions"] if "_llm-" in c)
    return {"stat": STAT, "mecobench": HOUSEHOLD, "constructs": D3, "constructs_d4": D4,
            "physical": PHYSICAL, "llm": llm}


def episode_keys(run: Path, conds: dict[str, str]) -> dict[str, list[str]]:
    """Return {family: its condition's episode keys, in order} (a --limit run plays a
    stratified sample, so the keys are the sampled cases' indices, not 0, 1, ...)."""
    from coordbench.core.rundir import RunDir

    rd = RunDir.open(run)
    return {family: rd.episode_keys(cond) for family, cond in conds.items()}


def good_and_damaged(base: Path) -> dict:
    """Build the small run of every family under `base` and a damaged copy of it; return
    {"run", "bad", "conds", "keys"} (the run, the copy, {family: a condition name},
    {family: its condition's episode keys})."""
    conds = build(base / "run")
    keys = episode_keys(base / "run", conds)
    damage(base / "run", base / "bad", keys["mecobench"][1])
    return {"run": base / "run", "bad": base / "bad", "conds": conds, "keys": keys}


def damage(run: Path, bad: Path, household_key: str) -> None:
    """Copy `run` to `bad` and break it: a truncated file, a file that is not JSON (the
    household episode `household_key`), an episode missing from the middle, an errored
    attempt, a set-aside file."""
    shutil.copytree(run, bad)
    ep = bad / "episodes" / STAT
    text = (ep / "ep00000.jsonl").read_text()
    (ep / "ep00000.jsonl").write_text(text.rsplit("\n", 2)[0] + "\n")  # no episode_end
    (ep / "ep00001.jsonl").unlink()  # missing between ep00000 and ep00002
    (bad / "episodes" / HOUSEHOLD / f"{household_key}.jsonl").write_text("this is not json\n")
    err = bad / "errors" / STAT
    err.mkdir(parents=True)
    (err / "ep00003.jsonl").write_text(text.replace('"success":true', '"success":false'))
    dmg = bad / "damaged" / PHYSICAL
    dmg.mkdir(parents=True)
    (dmg / "seed0002.jsonl").write_text("{}\n")
