"""Shared fixtures: a small synthetic profile, and the reference data path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toyprofile import make_toy

from coadapt.world.profiles.profile import AppProfile

REFERENCE = Path(os.environ.get(
    "COADAPT_REFERENCE", Path(__file__).resolve().parents[1] / "../shared/reference/adaptdl"))


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
