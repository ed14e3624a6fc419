"""Workloads: which jobs arrive when, with their requested configuration."""

from typing import Any

from coadapt.world.workload import JobSpec, Workload, WorkloadError, load_workload

__all__ = ["SETS", "JobSpec", "Workload", "WorkloadError", "WorkloadSet", "load_workload",
           "make_workload"]

_SETS_EXPORTS = ("SETS", "WorkloadSet", "make_workload")


def __getattr__(name: str) -> Any:
    # The named sets import the generator (numpy, profiles); only on first use.
    if name in _SETS_EXPORTS:
        from coadapt.workloads import sets

        return getattr(sets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
