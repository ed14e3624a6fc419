"""Input checks that must pass before a live run starts any process.

A live run holds real cores for minutes; a request it cannot honour found
half-way through would waste that and leave a partial log. Everything a job
set asks for is checked against the declared job types and the cluster first, and
reported as ``file:line: field ...``.
"""

from __future__ import annotations

from coadapt.world.cluster import ClusterSpec
from coadapt.world.jobtypes import DECLARED_JOB_TYPES
from coadapt.world.workload import Workload, WorkloadError


def check_live_workload(workload: Workload, cluster: ClusterSpec) -> None:
    """WorkloadError naming file, line and field for a row a live job cannot run."""
    for spec in workload.jobs:
        where = (f"{workload.path}:{spec.line}" if workload.path is not None
                 else f"{workload.name}, job {spec.name}")
        job = DECLARED_JOB_TYPES.get(spec.application)
        if job is None:
            raise WorkloadError(f"{where}: field 'application' is {spec.application!r}, not a "
                                f"live job type; known: {', '.join(sorted(DECLARED_JOB_TYPES))}")
        lim = job.limits
        most = min(cluster.total_slots, lim.max_replicas)
        if spec.num_replicas > most:
            raise WorkloadError(f"{where}: field 'num_replicas' is {spec.num_replicas}, more than "
                                f"the {most} workers job {spec.name} can get on cluster {cluster}")
        low = spec.num_replicas * lim.min_local_bsz
        if not low <= spec.batch_size <= lim.max_batch_size:
            raise WorkloadError(f"{where}: field 'batch_size' is {spec.batch_size}; "
                                f"{spec.application} on {spec.num_replicas} worker(s) runs "
                                f"batches {low}..{lim.max_batch_size}")
