"""Pollux (Qiao et al., OSDI 2021): goodput-optimal slots and batch sizes.

Each job's speedup at r slots is its best goodput there (batch size chosen
jointly) over its best goodput at the fair share ceil(slots / jobs). The
policy maximizes the power mean (p = -1 by default) of the speedups, each
discounted by the restart factor max(age - restarts*delay, 0)/(age + delay) if
its allocation changes. The objective is separable, so the slot counts are
solved exactly (``solve.min_sum_allocation``); placement then packs jobs onto
nodes with at most one multi-node job per node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from coadapt.models.goodput import GoodputModel
from coadapt.policies.base import Assignment, Decision, JobView, PolicyConfig, Snapshot, register
from coadapt.policies.estimates import best_goodput, growth_cap, packed_nodes, start_slots
from coadapt.policies.placement import pack
from coadapt.policies.solve import min_sum_allocation

_EPS = 1e-3  # keeps the power mean finite for jobs with no slots


@register
@dataclass
class Pollux:
    config: PolicyConfig
    name: ClassVar[str] = "pollux"
    uses_oracle: ClassVar[bool] = False
    _tables: dict[str, tuple[GoodputModel, np.ndarray]] = field(default_factory=dict)

    def _goodput_table(self, job: JobView, total: int, per_node: int) -> np.ndarray:
        """Best goodput at 0..R_max packed slots, cached until the job's model changes."""
        hit = self._tables.get(job.name)
        if hit is not None and hit[0] is job.model:
            return hit[1]
        limit = min(total, job.limits.max_useful_replicas())
        r = np.arange(1, limit + 1)
        table = np.concatenate([[0.0], best_goodput(job, packed_nodes(r, per_node), r).goodput])
        self._tables[job.name] = (job.model, table)
        return table

    def _speedups(self, job: JobView, total: int, per_node: int, fair: int) -> np.ndarray:
        cap = growth_cap(job, total, start_slots(job, per_node, self.config.start_node))
        if job.model is None:
            return np.arange(cap + 1) / fair
        table = self._goodput_table(job, total, per_node)
        base = table[min(fair, len(table) - 1)]
        return table[: cap + 1] / base if base > 0 else np.arange(cap + 1) / fair

    def decide(self, snap: Snapshot) -> Decision:
        jobs = snap.jobs
        if not jobs:
            return {}
        total, per_node = snap.total_slots, max(snap.slots_per_node)
        fair = max(1, math.ceil(total / len(jobs)))
        delay, p = self.config.restart_delay, self.config.p
        rank = np.argsort(np.argsort([j.attained_service for j in jobs], kind="stable"))
        costs = []
        for job, rk in zip(jobs, rank, strict=True):
            s = self._speedups(job, total, per_node, fair)
            # no delay at age 0 (a job just submitted, --restart-delay 0): nothing to lose
            factor = max(job.age - job.restarts * delay, 0.0) / (job.age + delay) \
                if job.age + delay > 0 else 1.0
            r = np.arange(len(s))
            s = np.where(r == job.replicas, s, s * factor)
            cost = (s + _EPS) ** p if p < 0 else -((s + _EPS) ** p)
            # Among jobs left without slots, prefer to serve the least-served.
            cost[0] *= 1.0 + 1e-3 * (len(jobs) - rk) / len(jobs)
            costs.append(cost)
        counts = min_sum_allocation(costs, total)
        want = {j.name: c for j, c in zip(jobs, counts, strict=True) if c > 0}
        placed = pack(want, snap.slots_per_node, {j.name: j.allocation for j in jobs})
        out: Decision = {}
        for job in jobs:
            alloc = placed.get(job.name)
            if alloc is None:
                continue
            out[job.name] = Assignment(alloc, self._batch(job, alloc), adaptive=True)
        return out

    @staticmethod
    def _batch(job: JobView, alloc: tuple[int, ...]) -> int:
        replicas = sum(alloc)
        if job.model is None:
            return max(job.limits.init_batch_size, job.limits.min_local_bsz * replicas)
        nodes = sum(1 for a in alloc if a)
        choice = best_goodput(job, np.array([nodes]), np.array([replicas]))
        return int(choice.batch_size[0]) * replicas
