"""A family's part in failure attribution (`coordbench attribute`, docs/attribution.md): how
a condition's recorded fields become its spec again, which references can take a seat over,
and which metric says an episode succeeded.

The replay itself is the family's own `Suite.play` of the one case, with the swap in force
(`agents.team.counterfactual.swapped`): the same code that played the episode plays it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _model_resources(fields: dict[str, Any], harness: Any) -> Any:
    from coordbench.runner.suite import ModelResources

    return ModelResources(harness=harness, max_reply_tokens=fields.get("max_reply_tokens"))


@dataclass(frozen=True)
class Counterfactual:
    """`spec(fields)` the suite's spec of a condition from its manifest fields (the run
    settings recorded beside them included); `references` the minds that can take a seat
    over besides `clean`, the default for a seat without injected failures first;
    `outcome` the episode metric whose value 1 is success; `resources(fields, harness)`
    what a replay plays with (the model harness settings of model-driven seats)."""

    spec: Callable[[dict[str, Any]], Any]
    references: tuple[str, ...]
    outcome: str
    resources: Callable[[dict[str, Any], Any], Any] = _model_resources
