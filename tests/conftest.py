"""Shared fixtures: a small synthetic profile, and the reference data path; and
which tests need the machine to themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toyprofile import make_toy

from coadapt.world.profiles.profile import AppProfile

REFERENCE = Path(os.environ.get(
    "COADAPT_REFERENCE", Path(__file__).resolve().parents[1] / "../shared/reference/adaptdl"))


# Tests that time the machine, make network namespaces or cgroups, or start Ray:
# marked ``exclusive``, and ``make test`` runs them alone after the parallel rest
# (two at once would skew each other's timings or see each other's leftovers).
EXCLUSIVE = (
    "tests/tools/measure/test_calibrate.py",
    "tests/tools/measure/test_measure_real.py",
    "tests/backends/live/test_nodes.py",
    "tests/backends/live/test_live_kinds.py",
    "tests/runs/live/test_emulated.py",
    "tests/runs/live/test_live_kinds_request.py",
    "tests/experiment/test_runner.py::test_ray_runs_cells_on_a_local_instance",
    "tests/experiment/test_runner_plugins.py::test_ray_tasks_load_a_file_policy",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(EXCLUSIVE):
            item.add_marker(pytest.mark.exclusive)


@pytest.fixture
def toy_profile() -> AppProfile:
    return make_toy()


@pytest.fixture
def reference_dir() -> Path:
    if not (REFERENCE / "traces").is_dir():
        pytest.skip(f"reference data not found at {REFERENCE}")
    return REFERENCE


@pytest.fixture(scope="session")
def reference_apps() -> dict[str, AppProfile]:
    """The reference GPU profiles, loaded once per test session."""
    if not (REFERENCE / "traces").is_dir():
        pytest.skip(f"reference data not found at {REFERENCE}")
    from coadapt.world.profiles.adaptdl import load_adaptdl

    return load_adaptdl(REFERENCE)
