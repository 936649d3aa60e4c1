"""Snapshots of a training loop, so a killed run continues where it stopped.

A loop hands `Snapshots` a place to keep them (anything with `resume() -> bytes | None` and
`save(bytes)`: the job engine's `JobContext`), restores its state from `load()` when there
is one, and saves its state at the top of an iteration when one is `due()`: at most every
`every_s` seconds. The state is the loop's own objects (networks and
their optimisers, the replay buffer, the environments, the random generators' states, the
evaluation curve so far) written with `torch.save`, which keeps parameters that are views of
one flat tensor (`core.FlatAdam`) attached; resuming replays the same sequence of draws, so
a resumed run ends where an uninterrupted one does. A snapshot is read back only by the
coordbench that wrote it for the same training config, as trusted as the run directory that
holds it (it is a pickle); one that cannot be read is ignored and the run starts afresh.
"""

from __future__ import annotations

import io
import time
from dataclasses import asdict
from typing import Any, Protocol

import torch

FORMAT = "coordbench-train-snapshot"
VERSION = 1
EVERY_S = 60.0


class SnapshotStore(Protocol):
    """Where snapshots live (the job engine's JobContext)."""

    def resume(self) -> bytes | None:
        """Return the last snapshot, or None."""

    def save(self, blob: bytes) -> None:
        """Replace the snapshot with `blob`."""


class Snapshots:
    """A training loop's snapshots in `store` (None: none are taken)."""

    def __init__(self, store: SnapshotStore | None, config: Any,
                 every_s: float | None = None, identity: dict[str, Any] | None = None
                 ) -> None:
        self.store = store
        # the store may say how often (the job engine's --snapshot-every)
        self.every_s = every_s if every_s is not None else getattr(store, "every_s", EVERY_S)
        # what the snapshot must match: the config and whatever else the run depends on
        self.config = {**asdict(config), **(identity or {})}
        self.last = time.perf_counter()
        self.resumed_at: int | None = None

    def load(self) -> dict[str, Any] | None:
        """Return the state of the last snapshot (the torch random state already restored),
        or None when there is none for this config."""
        blob = self.store.resume() if self.store is not None else None
        if not blob:
            return None
        try:
            state = torch.load(io.BytesIO(blob), weights_only=False)
        except Exception:  # noqa: BLE001 - a damaged snapshot: start afresh
            return None
        if not isinstance(state, dict) or state.get("format") != FORMAT or \
                state.get("version") != VERSION or state.get("config") != self.config:
            return None
        torch.set_rng_state(state.pop("torch_rng"))
        self.resumed_at = int(state.get("steps", 0))
        return state

    def due(self) -> bool:
        """Return whether a snapshot is to be taken now (`every_s` since the last one)."""
        return self.store is not None and time.perf_counter() - self.last >= self.every_s

    def save(self, state: dict[str, Any]) -> None:
        """Write `state` (with the torch random state) as the run's snapshot."""
        buf = io.BytesIO()
        torch.save({"format": FORMAT, "version": VERSION, "config": self.config,
                    "torch_rng": torch.get_rng_state(), **state}, buf)
        self.store.save(buf.getvalue())
        self.last = time.perf_counter()


def adopt(target: Any, restored: Any) -> None:
    """Make `target` (the caller's method object) the restored one: same networks, same
    state, so references the caller holds stay valid."""
    vars(target).update(vars(restored))
