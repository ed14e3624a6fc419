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


# Tests that time the machine are marked ``exclusive``: ``make test`` runs them
# alone after the parallel rest (a neighbour would skew their timings). Tests
# that share a machine-wide resource (network namespaces, cgroups, a local Ray)
# get one xdist group each, so that two of them never run at once.
EXCLUSIVE = (
    "tests/tools/measure/test_calibrate.py",
    "tests/tools/measure/test_measure_real.py",
    "tests/backends/live/test_nodes.py::test_a_gloo_allreduce_across_nodes_is_paced_by_the_link",
    "tests/backends/live/test_live_kinds.py::test_a_half_quota_halves_a_busy_loop",
)
GROUPS = {
    "netns": ("tests/backends/live/test_nodes.py", "tests/runs/live/test_emulated.py"),
    "cgroup": ("tests/backends/live/test_live_kinds.py", "tests/runs/live/test_live_kinds_request.py"),
    # two-worker live runs side by side would each get half the cores they were timed on
    "live": ("tests/runs/live/test_live_runs.py", "tests/runs/live/test_live_faults.py"),
    "ray": ("tests/experiment/test_runner.py::test_ray_runs_cells_on_a_local_instance",
            "tests/experiment/test_runner_plugins.py::test_ray_tasks_load_a_file_policy"),
}
# Real processes for tens of seconds: scheduled first, so that the short tests
# fill the other worker instead of two long ones ending the run side by side.
LONG_FIRST = ("tests/runs/live/", "tests/jobs/test_group.py", "tests/cli/test_faults.py",
              "tests/experiment/test_runner.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(EXCLUSIVE):
            item.add_marker(pytest.mark.exclusive)
        for group, prefixes in GROUPS.items():
            if item.nodeid.startswith(prefixes):
                item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))  # stable


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
