"""Scheduling policies; importing this package registers every policy."""

from coadapt.policies import dynamic, fixed, gavel, optimus, pollux, sia, tiresias  # noqa: F401
from coadapt.policies.base import (
    PRIMARY,
    REGISTRY,
    Assignment,
    Decision,
    JobView,
    Policy,
    PolicyConfig,
    Snapshot,
    make_policy,
    policy_names,
)

__all__ = ["PRIMARY", "REGISTRY", "Assignment", "Decision", "JobView", "Policy", "PolicyConfig",
           "Snapshot", "make_policy", "policy_names"]
