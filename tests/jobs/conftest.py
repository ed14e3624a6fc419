"""Fixtures for the job tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _mnist1d_cache() -> None:
    """Generate the cached data set once, before any timed group start."""
    from coadapt.jobs.data import mnist1d_arrays

    mnist1d_arrays()
