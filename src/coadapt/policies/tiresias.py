"""Tiresias (Gu et al., NSDI 2019), discretized 2D-LAS as in the Pollux study.

Two queues split at a threshold of attained service (time x requested
slots; 16 GPU-hours in the Pollux study, ``PolicyConfig.tiresias_threshold``,
scaled to the workload for minute-long CPU jobs), FIFO within a queue, no
starvation promotion; jobs run at their requested slots and batch size; a
job that no longer fits is preempted; a smaller job later in the queue may
start when an earlier one does not fit. With priorities (``weight``) each
queue is ordered by weight, then arrival.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from coadapt.policies.base import Assignment, Decision, PolicyConfig, Snapshot, register
from coadapt.policies.placement import Placer, SpreadMostFree


@register
@dataclass
class Tiresias:
    config: PolicyConfig
    name: ClassVar[str] = "tiresias"
    uses_oracle: ClassVar[bool] = False
    placer: Placer = field(default_factory=SpreadMostFree)
    _q0: list[str] = field(default_factory=list)
    _q1: list[str] = field(default_factory=list)
    _running: set[str] = field(default_factory=set)
    _executed: dict[str, float] = field(default_factory=dict)
    _last_check: dict[str, float] = field(default_factory=dict)

    def decide(self, snap: Snapshot) -> Decision:
        now = snap.time
        jobs = {j.name: j for j in snap.jobs}
        need = {j.name: min(j.requested_replicas, snap.total_slots) for j in snap.jobs}
        self._q0 = [k for k in self._q0 if k in jobs]
        self._q1 = [k for k in self._q1 if k in jobs]
        self._running &= jobs.keys()
        for name in jobs:
            if name not in self._executed:
                self._executed[name] = 0.0
                self._last_check[name] = now
                self._q0.append(name)
        for name in jobs:
            if name in self._running:
                self._executed[name] += now - self._last_check[name]
                if name in self._q0 and \
                        self._executed[name] * need[name] >= self.config.tiresias_threshold:
                    self._q0.remove(name)
                    self._q1.append(name)
            self._last_check[name] = now
        budget = snap.total_slots
        running: list[str] = []
        def by_weight(queue: list[str]) -> list[str]:  # heavier first, FIFO among equals
            return sorted(queue, key=lambda k: -jobs[k].weight)

        for name in by_weight(self._q0) + by_weight(self._q1):
            if need[name] <= budget:
                running.append(name)
                budget -= need[name]
        self._running = set(running)
        # jobs that stay keep their placement; a gang that did not get all its slots waits
        placed = self.placer.place({k: need[k] for k in running}, snap.nodes,
                                   {k: jobs[k].allocation for k in running})
        return {k: Assignment(alloc, jobs[k].requested_batch)
                for k, alloc in placed.items() if sum(alloc) == need[k]}
