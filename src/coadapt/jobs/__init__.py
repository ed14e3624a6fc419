"""Real CPU training jobs: job types, worker groups (DDP/gloo), checkpoints, verify.

Public API (imported lazily so that ``python -m coadapt.jobs.worker`` stays light):
``JOB_TYPES``, ``get_job_type``, ``JobType``, ``plan_batch``, ``BatchPlan``,
``ConfigError``, ``RunConfig``, ``GroupResult``, ``Group``, ``run_group``,
``verify``, ``VerifyResult``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "JOB_TYPES": "coadapt.jobs.registry",
    "get_job_type": "coadapt.jobs.registry",
    "JobType": "coadapt.jobs.types",
    "BatchPlan": "coadapt.jobs.types",
    "ConfigError": "coadapt.jobs.types",
    "plan_batch": "coadapt.jobs.types",
    "RunConfig": "coadapt.jobs.group",
    "GroupResult": "coadapt.jobs.group",
    "Group": "coadapt.jobs.group",
    "run_group": "coadapt.jobs.group",
    "verify": "coadapt.jobs.verify",
    "VerifyResult": "coadapt.jobs.verify",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'coadapt.jobs' has no attribute {name!r}")
