"""The physical suite's part in failure attribution (docs/attribution.md): a condition's spec
from its manifest fields, the reference (`expert`: the clean scripted expert, which shadows
the robot and takes it over, `agents.physical.expert.Shadow`), and success (all three phases
done).

A replay counts steps as the episode records them: control steps at 50 Hz, the `t` of its
phase events and of its end. An injected failure (`scripted:expert+fail_at=T`) obeys the
`clean` reference itself (`agents.physical.expert.ExpertPolicy`).
"""

from __future__ import annotations

from typing import Any

from coordbench.errors import ConfigError
from coordbench.runner.counterfactual import Counterfactual
from coordbench.suites.physical.suite import PhysicalSpec

_SPEC = ("task", "policy", "protocol", "demos", "model", "controller", "seats", "embodiment")


def spec_of(fields: dict[str, Any]) -> PhysicalSpec:
    """Return the condition a manifest entry records; ConfigError where it was played with a
    G1 model file other than the one this machine finds (its replay would differ)."""
    spec = PhysicalSpec(**{k: v for k, v in fields.items() if k in _SPEC})
    recorded = fields.get("robot_model_sha256")
    if recorded is not None:
        from coordbench.envs.physical.g1 import model_sha256, resolve_model

        here = model_sha256(resolve_model())
        if here != recorded:
            raise ConfigError(f"{spec.task}: its episodes were played with the G1 model "
                              f"{recorded[:12]}, this machine's is {here[:12]}; give the "
                              "same model (--g1-model, COORDBENCH_G1_MODEL) to replay them")
    return spec


COUNTERFACTUAL = Counterfactual(spec=spec_of, references=("expert",), outcome="success")
