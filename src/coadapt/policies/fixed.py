"""Fixed allocation: FIFO, non-preemptive, requested slots and batch size.

A job waits until its requested slots are free and then keeps them to the end;
strict FIFO (no backfilling), so the first waiting job blocks later ones, as on
a plain batch queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from coadapt.policies.base import Assignment, Decision, PolicyConfig, Snapshot, register
from coadapt.policies.placement import pack


@register
@dataclass
class Fixed:
    config: PolicyConfig
    name: ClassVar[str] = "fixed"
    uses_oracle: ClassVar[bool] = False

    def decide(self, snap: Snapshot) -> Decision:
        total = snap.total_slots
        used = sum(j.replicas for j in snap.jobs)
        counts: dict[str, int] = {}
        blocked = False
        for job in snap.jobs:
            want = min(job.requested_replicas, total)
            if job.replicas:
                counts[job.name] = job.replicas
            elif not blocked and used + want <= total:
                counts[job.name] = want
                used += want
            else:
                blocked = True
        placed = pack(counts, snap.slots_per_node,
                      {j.name: j.allocation for j in snap.jobs if j.replicas})
        # Gang semantics: a job that could not get all its slots waits.
        out: Decision = {}
        for job in snap.jobs:
            alloc = placed.get(job.name)
            if alloc is not None and sum(alloc) == counts[job.name]:
                out[job.name] = Assignment(alloc, job.requested_batch)
        return out
