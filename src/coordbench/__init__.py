"""coordbench: measure how teams of agents coordinate, not only whether they finish.

From Python::

    import coordbench
    summary = coordbench.evaluate("stat", config="3A-6T-5x3", policy="hungarian")
    summary["metrics"]["return"]          # {"mean", "ci95", "n", "lo", "hi", "interval"}
    coordbench.results("runs/default")    # every condition of a run, recomputed
    run = coordbench.load_run("runs/default")
    run.episodes()                        # pandas: one row per episode, every metric

`gymnasium.make("coordbench/STAT-v0", config=...)` and
`gymnasium.make("coordbench/Physical-v0", task=..., embodiment=...)` work once coordbench is
imported.
"""

import gymnasium as _gym

from coordbench.core.provenance import VERSION as __version__

# registered by name only: the environment module is imported when an environment is made
if "coordbench/STAT-v0" not in _gym.registry:
    _gym.register(id="coordbench/STAT-v0", entry_point="coordbench.envs.stat.gym_env:StatGymEnv")
if "coordbench/Physical-v0" not in _gym.registry:
    _gym.register(id="coordbench/Physical-v0",
                  entry_point="coordbench.envs.physical.gym_env:PhysicalGymEnv")


def __getattr__(name: str):
    if name in ("evaluate", "results"):
        from . import api

        return getattr(api, name)
    if name == "load_run":
        from .data import load_run

        return load_run
    raise AttributeError(f"module 'coordbench' has no attribute {name!r}")


__all__ = ["__version__", "evaluate", "load_run", "results"]
