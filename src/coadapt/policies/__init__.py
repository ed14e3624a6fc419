"""Scheduling policies; importing this package registers every policy."""

from coadapt.policies import dynamic, fixed, optimus, pollux, tiresias  # noqa: F401
from coadapt.policies.base import (
    REGISTRY,
    Assignment,
    Decision,
    JobView,
    Policy,
    PolicyConfig,
    Snapshot,
    make_policy,
)

__all__ = ["REGISTRY", "Assignment", "Decision", "JobView", "Policy", "PolicyConfig",
           "Snapshot", "make_policy"]
