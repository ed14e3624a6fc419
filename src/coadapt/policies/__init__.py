"""Scheduling policies; importing this package registers every built-in policy.

Policies from outside the package (a file, a module, an installed entry
point) are loaded by ``policies.plugins`` into the same registry."""

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
    policy_names,
)
from coadapt.policies.plugins import make_policy, resolve_policies

__all__ = ["PRIMARY", "REGISTRY", "Assignment", "Decision", "JobView", "Policy", "PolicyConfig",
           "Snapshot", "make_policy", "policy_names", "resolve_policies"]
