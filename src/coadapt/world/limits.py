"""Where a job type's declared limits come from.

A scheduler knows what a job declares (M0, batch and micro-batch bounds,
replica cap), never what a profile measured. For the CPU job types that is
their declaration (``world.jobtypes``); the Pollux paper's imported GPU traces
have none and carry the reference simulator's declarations (``profiles.adaptdl``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from coadapt.models.batching import JobLimits
from coadapt.world.jobtypes import DECLARED_JOB_TYPES
from coadapt.world.profiles.profile import AppProfile


def declared_limits(apps: Iterable[str],
                    profiles: Mapping[str, AppProfile] | None = None) -> dict[str, JobLimits]:
    """Limits per application; KeyError names an application nobody declares."""
    out = {}
    for app in sorted(set(apps)):
        job = DECLARED_JOB_TYPES.get(app)
        if job is not None:
            out[app] = job.limits
        elif profiles is not None and app in profiles:
            out[app] = profiles[app].limits
        else:
            raise KeyError(f"job type {app!r} is neither a declared job type nor an imported "
                           f"trace; known: {', '.join(sorted(DECLARED_JOB_TYPES))}")
    return out
