"""Scheduling policies; importing this package registers every policy."""

from coadapt.policies import (  # noqa: F401
    dynamic,
    fixed,
    gavel,
    gavel_ftf,
    optimus,
    pollux,
    sia,
    tiresias,
)
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
