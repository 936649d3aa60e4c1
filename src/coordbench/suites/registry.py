"""The families on the one runner, by the suite name their trajectories and manifests record."""

from __future__ import annotations

from typing import Any

NAMES = ("stat", "mecobench", "constructs", "physical")


def suite_object(name: str) -> Any | None:
    """Return the family's Suite object for a suite name (None for an unknown one); each
    family is imported only when asked for."""
    if name == "stat":
        from coordbench.suites.stat.suite import SUITE
    elif name == "mecobench":
        from coordbench.suites.mecobench.suite import SUITE
    elif name == "constructs":
        from coordbench.suites.constructs.suite import SUITE
    elif name == "physical":
        from coordbench.suites.physical.suite import SUITE
    else:
        return None
    return SUITE
