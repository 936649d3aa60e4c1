"""Learned construct teams: which instances a family trains on and is tested on, and one
training run (`coordbench constructs train`).

A family is one construct (D1-D4) at one team size. The team trains on the family's instances
of the full set that are not in the stratified 240 subset and is tested on the subset's (held
out), where the rule, oracle and model-driven planners are compared too
(`constructs run --subset rep240 --construct C --team N --agents learned --checkpoint P
--planner decentralized`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic
from coordbench.core.stats import estimate
from coordbench.envs.household.menu import construct_nodes
from coordbench.envs.household.pettingzoo_env import Episode

from .instances import select
from .runner import load_instance


def family(construct: str, team: int) -> tuple[list[Episode], list[Episode]]:
    """Return (training episodes, held-out test episodes) of one construct and team size."""
    held = {raw["task_id"] for raw in select("rep240", construct, team)}

    def episodes(raws: list[dict[str, Any]]) -> list[Episode]:
        out = []
        for raw in raws:
            task, info = load_instance(raw, str(raw.get("task_id")))
            out.append((task, construct_nodes(info)))
        return out

    return (episodes([r for r in select("all", construct, team) if r["task_id"] not in held]),
            episodes(select("rep240", construct, team)))


def checkpoint_path(out: Path, construct: str, team: int, seed: int) -> Path:
    """Return where a run's checkpoint goes (its result sits beside it as .json)."""
    return Path(out) / f"learned_{construct}_team{team}_seed{seed}.pt"


def train_team(construct: str, team: int, out: Path, steps: int, seed: int = 0,
               log: Any = None) -> dict[str, Any]:
    """Train one team (menu PPO) on the family, test it greedily on the held-out instances,
    write its checkpoint and result; return the result (success and completion estimates
    over the held-out instances, the curve, training time)."""
    from coordbench.learn import menu_ppo

    train_eps, test_eps = family(construct, team)
    cfg = menu_ppo.MenuPPOConfig(steps=steps, seed=seed, eval_every=max(1, steps // 4))
    net, res = menu_ppo.train(cfg, train_eps, test_eps, team, "with_close", False, log)
    ok, comp = menu_ppo.evaluate_each(net, test_eps, team, "with_close", False, seed)
    path = checkpoint_path(out, construct, team, seed)
    Path(out).mkdir(parents=True, exist_ok=True)
    meta = {"config": res["config"], "construct": construct, "team": team,
            "train_instances": len(train_eps), "test_instances": len(test_eps)}
    tmp = path.with_suffix(".pt.tmp")
    menu_ppo.save(tmp, net, meta)
    tmp.replace(path)
    result = {**meta, "checkpoint": str(path),
              "success": estimate(ok, "binary").as_dict(),
              "completion": estimate(comp, "unit").as_dict(),
              "train_s": res["wall_s"], "steps_per_s": res["steps_per_s"], "curve": res["curve"]}
    write_atomic(path.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
    return result
