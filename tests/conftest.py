"""Fixtures shared across test modules."""

from __future__ import annotations

import pytest

from tests import viewer_runs


@pytest.fixture(scope="session")
def small_runs(tmp_path_factory) -> dict:
    """A small run of every family and a damaged copy ({"run", "bad", "conds"}), built once
    per test process: the viewer, browser and data-out modules read them, none writes."""
    return viewer_runs.good_and_damaged(tmp_path_factory.mktemp("small-runs"))
