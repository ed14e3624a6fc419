"""Throughput-only elastic scheduling: the "dynamic" baseline.

Every round each active job gets one slot in FIFO order while slots last; the
rest go to the job with the largest marginal gain in relative throughput per
slot at its requested batch size (looking past plateaus where an added slot
alone gains nothing, e.g. until an accumulation step can be dropped), from the same fitted throughput model
Pollux uses. No statistical efficiency, no batch adaptation, no oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from coadapt.policies.base import Assignment, Decision, PolicyConfig, Snapshot, register
from coadapt.policies.estimates import (
    fixed_batch_throughput,
    greedy_marginal,
    growth_cap,
    start_slots,
)
from coadapt.policies.placement import Pack, Placer


@register
@dataclass
class Dynamic:
    config: PolicyConfig
    placer: Placer = field(default_factory=Pack)
    name: ClassVar[str] = "dynamic"
    uses_oracle: ClassVar[bool] = False

    def decide(self, snap: Snapshot) -> Decision:
        per_node = snap.max_slots_per_node
        values = []
        for job in snap.jobs:
            start = start_slots(job, per_node, self.config.start_node)
            cap = min(growth_cap(job, snap.total_slots, start),
                      job.requested_batch // job.limits.min_local_bsz)
            r = np.arange(1, max(cap, 1) + 1)
            x = fixed_batch_throughput(job, r, per_node)
            values.append(np.concatenate([[0.0], x / x[0]]))
        counts = greedy_marginal(values, snap.total_slots, lookahead=True)
        want = {j.name: c for j, c in zip(snap.jobs, counts, strict=True) if c > 0}
        placed = self.placer.place(want, snap.nodes, {j.name: j.allocation for j in snap.jobs})
        return {j.name: Assignment(placed[j.name], j.requested_batch)
                for j in snap.jobs if j.name in placed}
