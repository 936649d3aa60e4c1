"""Same results after refactoring: small runs of every family, pinned as content hashes.

For scripted, rule, oracle and expert agents a trajectory is a pure function of its condition
and case, so its bytes (without the `created` timestamp, the `git_sha` of the checkout and the
installed `coordbench_version`, which say where a file came from, not what happened) are
pinned here. Regenerate with `COORDBENCH_WRITE_GOLDEN=1 pytest tests/test_golden.py` only when
a change of content is intended, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from coordbench.cli import app

GOLDEN = Path(__file__).parent / "golden" / "trajectories.json"
runner = CliRunner()

STAT = [["stat", "eval", "--config", "3A-6T-5x3", "--policy", p, "--episodes", "3"]
        for p in ("random", "greedy", "matching", "hungarian")]
MECO = [["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team", "3",
         "--protocol", p, "--limit", "2"] for p in ("none", "broadcast", "discuss", "leader",
                                                     "leader_vision", "shared_memory")]
MECO += [["mecobench", "run", "--suite", "v1", "--structure", "sequential", "--team", "2",
          "--protocol", "broadcast", "--limit", "2"],
         ["mecobench", "run", "--suite", "v1", "--structure", "parallel", "--team", "2",
          "--agents", "oracle", "--prior", "none", "--limit", "2"],
         ["mecobench", "run", "--structure", "sequential", "--team", "2", "--agents", "oracle",
          "--limit", "1"]]
CONS = [["constructs", "run", "--subset", "rep240", "--construct", c, "--planner", p,
         "--agents", a, "--limit", "2"]
        for c in ("D1", "D2", "D3", "D4")
        for p, a in (("central", "rule"), ("decentralized_comm", "rule"),
                     ("decentralized", "oracle"), ("central", "oracle"))]
CONS += [["constructs", "run", "--subset", "rep240", "--construct", "D3", "--limit", "2",
          "--planner", "decentralized", "--order", "reverse"]]
PHYS = [["physical", "eval", "--task", "Handover", "--policy", p, "--rollouts", "2"]
        for p in ("expert", "expert_noisy")]


def _strip(line: str) -> str:
    rec = json.loads(line)
    if rec.get("kind") == "header":
        for key in ("created", "git_sha", "coordbench_version"):
            rec.pop(key, None)
    return json.dumps(rec, sort_keys=True)


def trajectory_hashes(run_dir: Path) -> dict[str, str]:
    """Return {condition/key: sha256 of the episode file without its provenance fields}."""
    out = {}
    for path in sorted((run_dir / "episodes").glob("*/*.jsonl")):
        text = "\n".join(_strip(x) for x in path.read_text(encoding="utf-8").splitlines())
        out[f"{path.parent.name}/{path.stem}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def _run_all(out: Path, commands: list[list[str]]) -> dict[str, str]:
    for cmd in commands:
        res = runner.invoke(app, [*cmd, "--out", str(out), "--json"])
        assert res.exit_code == 0, (cmd, res.output)
    return trajectory_hashes(out)


def _demo_hashes(out: Path) -> dict[str, str]:
    res = runner.invoke(app, ["physical", "demos", "--task", "Handover", "--n", "3",
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    hashes = {}
    for path in sorted(out.glob("*.npz")):
        with np.load(path) as data:
            for name in sorted(data.files):
                arr = np.ascontiguousarray(data[name])
                hashes[f"{path.name}:{name}"] = hashlib.sha256(
                    str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes()
                ).hexdigest()
    return hashes


TASK_FAMILIES = {"stat": STAT, "mecobench": MECO, "constructs": CONS, "physical": PHYS}


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}


@pytest.mark.parametrize("family", [*TASK_FAMILIES, "demos"])
def test_trajectories_match_the_pinned_hashes(tmp_path, family):
    got = (_demo_hashes(tmp_path / "demos") if family == "demos"
           else _run_all(tmp_path / "run", TASK_FAMILIES[family]))
    assert got, "the golden run wrote nothing"
    if os.environ.get("COORDBENCH_WRITE_GOLDEN"):
        golden = _golden()
        golden[family] = got
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        return
    want = _golden().get(family)
    assert want is not None, f"no pinned hashes for {family}"
    assert sorted(got) == sorted(want), "a condition or episode name changed"
    changed = [k for k in want if got[k] != want[k]]
    assert not changed, f"{len(changed)} trajectories changed, e.g. {changed[:3]}"
