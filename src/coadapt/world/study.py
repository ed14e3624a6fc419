"""A published study's per-job-type constants, applied to a run's world.

The Sia study (SOSP'23) calibrates each model's profiled step times by a factor,
charges a per-model checkpoint-restore time when a job is rescaled, and lets its
policy assume a per-model restart penalty S (two different tables in its
artifact). ``--preset sosp23`` selects :data:`STUDIES` ``["sosp23"]``; the
numbers live beside the reader of that study's profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from coadapt.world.profiles.profile import AppProfile
from coadapt.world.profiles.sia import (
    SOSP23_RESCALE_S,
    SOSP23_RESTART_S,
    SOSP23_STEP_SCALE,
    scale_steps,
)


@dataclass(frozen=True)
class Study:
    name: str
    step_scale: Mapping[str, float] = field(default_factory=dict)  # x step and sync time
    rescale_s: Mapping[str, float] = field(default_factory=dict)  # charged per restart
    penalty_s: Mapping[str, float] = field(default_factory=dict)  # the policy's S

    def calibrate(self, profiles: Mapping[str, AppProfile]) -> dict[str, AppProfile]:
        """The profiles with the study's step-time factors applied."""
        return scale_steps(profiles, self.step_scale) if self.step_scale else dict(profiles)


STUDIES: dict[str, Study] = {
    "sosp23": Study("sosp23", SOSP23_STEP_SCALE, SOSP23_RESCALE_S, SOSP23_RESTART_S),
}
