"""The profiles shipped in ``profiles/`` (what ``make simulate`` runs on) are complete:
every registered job type is there, measured with the registry's current limits, and
reached its target at M0, 4 x M0 and 16 x M0 (the statistical-efficiency figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coadapt.jobs.registry import JOB_TYPES
from coadapt.world.profiles.cpu_format import load_cpu_profiles, read_cpu_profile

SHIPPED = Path(__file__).resolve().parents[3] / "profiles"


@pytest.mark.parametrize("name", sorted(JOB_TYPES))
def test_shipped_profile_matches_registry_and_reaches_targets(name: str) -> None:
    job = JOB_TYPES[name]
    prof = read_cpu_profile(SHIPPED / name)
    meta = prof.meta
    have, want = meta.limits, job.limits
    assert (have.init_batch_size, have.max_batch_size, meta.target) == \
        (want.init_batch_size, want.max_batch_size, job.target), "re-run make profile"
    assert prof.info["timing"]["quick"] is False
    by_batch = prof.info["curves"]["by_batch_size"]
    for factor in (1, 4, 16):
        entry = by_batch[str(factor * job.limits.init_batch_size)]
        assert "samples_to_target" in entry, f"{name}: {factor} x M0 never reached the target"
    samples = [by_batch[str(f * job.limits.init_batch_size)]["samples_to_target"]["median"]
               for f in (1, 16)]
    assert samples[1] > 1.2 * samples[0]  # efficiency visibly falls at large batch


def test_shipped_profiles_load_for_the_simulator() -> None:
    apps = load_cpu_profiles(SHIPPED)
    assert set(apps) == set(JOB_TYPES)
