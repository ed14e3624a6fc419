"""Workloads: which jobs arrive when, with their requested configuration."""

from coadapt.workloads.workload import JobSpec, Workload, WorkloadError, load_workload

__all__ = ["JobSpec", "Workload", "WorkloadError", "load_workload"]
