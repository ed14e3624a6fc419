"""Optimus+Oracle (Peng et al., EuroSys 2018, as run in the Pollux study).

An ORACLE baseline: it reads each job's true remaining iterations and true
step times from the profile. Each job gets one slot in order while slots
last; further slots go to the job whose remaining time drops most,
(T(r) - T(r+1)) * remaining iterations, at the requested batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from coadapt.models.batching import split_batch
from coadapt.policies.base import Assignment, Decision, JobView, PolicyConfig, Snapshot, register
from coadapt.policies.estimates import greedy_marginal
from coadapt.policies.placement import Placer, SpreadMostFree
from coadapt.world.cluster import packed_placement


@register
@dataclass
class OptimusOracle:
    config: PolicyConfig
    name: ClassVar[str] = "optimus-oracle"
    uses_oracle: ClassVar[bool] = True
    placer: Placer = field(default_factory=SpreadMostFree)
    _steps: dict[str, np.ndarray] = field(default_factory=dict)

    def _values(self, job: JobView, total: int, per_node: int) -> np.ndarray:
        assert job.oracle is not None, "optimus-oracle needs oracle data from the engine"
        steps = self._steps.get(job.name)
        if steps is None:  # true step times at the fixed batch never change: once per job
            lim = job.limits
            cap = max(1, min(lim.max_replicas, job.requested_batch // lim.min_local_bsz, total))
            r = np.arange(1, cap + 1)
            m, s = split_batch(job.requested_batch, r, lim)
            steps = np.array([job.oracle.step_time(packed_placement(int(ri), per_node), int(mi),
                                                   int(si))
                              for ri, mi, si in zip(r, m, s, strict=True)])
            self._steps[job.name] = steps
        remaining = job.oracle.remaining_iterations(job.requested_batch)
        return np.concatenate([[-np.inf], -steps * remaining])

    def decide(self, snap: Snapshot) -> Decision:
        active = {j.name for j in snap.jobs}
        self._steps = {k: v for k, v in self._steps.items() if k in active}
        per_node = snap.max_slots_per_node
        values = [self._values(j, snap.total_slots, per_node) for j in snap.jobs]
        counts = greedy_marginal(values, snap.total_slots)
        order = sorted(range(len(counts)), key=lambda i: counts[i])  # smallest placed first
        want = {snap.jobs[i].name: counts[i] for i in order if counts[i]}
        placed = self.placer.place(want, snap.nodes, {j.name: j.allocation for j in snap.jobs})
        batch = {j.name: j.requested_batch for j in snap.jobs}
        return {name: Assignment(alloc, batch[name]) for name, alloc in placed.items()}
