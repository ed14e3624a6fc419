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
        current = {j.name: j.allocation for j in snap.jobs if j.replicas}
        counts: dict[str, int] = {j.name: j.replicas for j in snap.jobs if j.replicas}
        placed = pack(counts, snap.slots_per_node, current)
        for job in snap.jobs:
            if job.replicas:
                continue
            # Strict FIFO: the head waiting job must *place* (not merely fit by
            # count: fragmentation and the one-multi-node-job rule can refuse
            # it), otherwise nobody behind it starts.
            trial = {**counts, job.name: min(job.requested_replicas, total)}
            trial_placed = pack(trial, snap.slots_per_node, current)
            alloc = trial_placed.get(job.name)
            if alloc is None or sum(alloc) != trial[job.name]:
                break
            counts, placed = trial, trial_placed
        # Gang semantics: a job that could not get all its slots waits.
        out: Decision = {}
        for job in snap.jobs:
            alloc = placed.get(job.name)
            if alloc is not None and sum(alloc) == counts[job.name]:
                out[job.name] = Assignment(alloc, job.requested_batch)
        return out
