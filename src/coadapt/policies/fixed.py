"""Fixed allocation: FIFO, non-preemptive, requested slots and batch size.

A job waits until its requested slots are free and then keeps them to the end;
strict FIFO (no backfilling), so the first waiting job blocks later ones, as on
a plain batch queue. With priorities (``weight``) the queue is ordered by
weight first, then submission: a waiting heavier job goes ahead of lighter
ones but never preempts a running job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from coadapt.policies.base import Assignment, Decision, PolicyConfig, Snapshot, register
from coadapt.policies.placement import Pack, Placer


@register
@dataclass
class Fixed:
    config: PolicyConfig
    placer: Placer = field(default_factory=Pack)
    name: ClassVar[str] = "fixed"
    uses_oracle: ClassVar[bool] = False

    def decide(self, snap: Snapshot) -> Decision:
        total = snap.total_slots
        current = {j.name: j.allocation for j in snap.jobs if j.replicas}
        counts: dict[str, int] = {j.name: j.replicas for j in snap.jobs if j.replicas}
        placed = self.placer.place(counts, snap.nodes, current)
        free = total - sum(counts.values())
        # Heavier jobs first, FIFO among equals (a stable sort keeps submission order).
        for job in sorted(snap.jobs, key=lambda j: -j.weight):
            if job.replicas:
                continue
            # Strict FIFO: the head waiting job must *place* (not merely fit by
            # count: fragmentation and the one-multi-node-job rule can refuse
            # it), otherwise nobody behind it starts.
            # Everyone already admitted must keep their placement too: the placer may
            # otherwise place the newcomer by dropping an earlier (heavier) job.
            want = min(job.requested_replicas, total)
            if want > free:  # no placement can hold it: skip the trial (a full placement)
                break
            trial = {**counts, job.name: want}
            trial_placed = self.placer.place(trial, snap.nodes, current)
            if not all(_whole(trial_placed.get(n), k, current.get(n)) for n, k in trial.items()):
                break
            counts, placed, free = trial, trial_placed, free - want
        # Gang semantics: a job that could not get all its slots waits.
        out: Decision = {}
        for job in snap.jobs:
            alloc = placed.get(job.name)
            if _whole(alloc, counts.get(job.name, 0), current.get(job.name)):
                out[job.name] = Assignment(alloc, job.requested_batch)
        return out


def _whole(alloc: tuple[int, ...] | None, want: int, kept: tuple[int, ...] | None) -> bool:
    """The placement gives all ``want`` slots: a job left where it was (its
    ``kept`` allocation itself, which holds its count) without summing its
    entry per node, as every trial would for every running job."""
    return alloc is not None and (alloc is kept or sum(alloc) == want)
