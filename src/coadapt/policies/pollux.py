"""Pollux (Qiao et al., OSDI 2021): goodput-optimal slots and batch sizes.

Each job's speedup at r slots is its best goodput there (batch size chosen
jointly) over its best goodput at the fair share ceil(slots / jobs). The
policy maximizes the power mean (p = -1 by default) of the speedups, each
discounted by the restart factor max(age - restarts*delay, 0)/(age + delay) if
its allocation changes. The objective is separable, so the slot counts are
solved exactly (``solve.min_sum_allocation``); placement then packs jobs onto
nodes with at most one multi-node job per node.

Two ablations switch off one half of the co-adaptation, to tell which half
the gains come from (registered as variants, not run by 'all'):

- ``pollux-workers-only`` (``adapt_batch=False``): the same slot optimization,
  but every job keeps its requested batch (clipped to its limits). Goodput is
  taken at that batch for every slot count, so efficiency is constant and the
  speedup is plain throughput scaling at a fixed global batch (the micro-batch
  shrinks as workers are added); slot counts that would leave a worker less
  than ``min_local_bsz`` are not allowed. This is Pollux without batch tuning.
- ``pollux-batch-only`` (``adapt_workers=False``): a job gets exactly its
  requested slots (capped at its max useful replicas and the cluster, so that
  no job waits forever) or none, and Pollux picks the goodput-optimal batch for
  that allocation. Since workers do not adapt, the start rule and growth cap
  (which ration exploration of unseen slot counts) do not apply: a job starts
  at its request. This is batch tuning on top of fixed gang allocations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from coadapt.models.goodput import GoodputModel
from coadapt.policies.base import (
    Assignment,
    Decision,
    JobView,
    PolicyConfig,
    Snapshot,
    register,
    register_variant,
)
from coadapt.policies.estimates import (
    best_goodput,
    fixed_batch,
    fixed_batch_goodput,
    growth_cap,
    packed_nodes,
    start_slots,
)
from coadapt.policies.placement import pack
from coadapt.policies.solve import min_sum_allocation

_EPS = 1e-3  # keeps the power mean finite for jobs with no slots


@register
@dataclass
class Pollux:
    config: PolicyConfig
    adapt_batch: bool = True  # choose each job's batch size (else its requested batch)
    adapt_workers: bool = True  # choose each job's slot count (else its request or none)
    name: str = "pollux"
    uses_oracle: ClassVar[bool] = False
    _tables: dict[str, tuple[GoodputModel, np.ndarray]] = field(default_factory=dict)

    def _max_slots(self, job: JobView, total: int) -> int:
        """Most slots a job can use: its limits, and at a fixed batch at least
        a minimal micro-batch per worker."""
        limit = min(total, job.limits.max_useful_replicas())
        if not self.adapt_batch:
            limit = min(limit, fixed_batch(job) // job.limits.min_local_bsz)
        return max(limit, 1)

    def _goodput_table(self, job: JobView, limit: int, per_node: int) -> np.ndarray:
        """Goodput at 0..limit packed slots, cached until the job's model changes."""
        hit = self._tables.get(job.name)
        if hit is not None and hit[0] is job.model:
            return hit[1]
        r = np.arange(1, limit + 1)
        nodes = packed_nodes(r, per_node)
        good = best_goodput(job, nodes, r).goodput if self.adapt_batch else \
            fixed_batch_goodput(job, nodes, r, fixed_batch(job))
        table = np.concatenate([[0.0], good])
        self._tables[job.name] = (job.model, table)
        return table

    def _speedups(self, job: JobView, total: int, per_node: int, fair: int) -> np.ndarray:
        """Speedup at 0..top slots; NaN where the job may not run at that count."""
        limit = self._max_slots(job, total)
        if self.adapt_workers:
            top = min(limit, growth_cap(job, total, start_slots(job, per_node,
                                                                self.config.start_node)))
        else:
            top = max(1, min(job.requested_replicas, limit))
        s = np.arange(top + 1) / fair
        if job.model is not None:
            table = self._goodput_table(job, limit, per_node)
            base = table[min(fair, len(table) - 1)]
            if base > 0:
                s = table[: top + 1] / base
        if not self.adapt_workers:
            r = np.arange(top + 1)
            s = np.where((r == 0) | (r == top), s, np.nan)
        return s

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
            cost = np.where(np.isnan(cost), np.inf, cost)
            # Among jobs left without slots, prefer to serve the least-served.
            cost[0] *= 1.0 + 1e-3 * (len(jobs) - rk) / len(jobs)
            costs.append(cost)
        counts = min_sum_allocation(costs, total)
        want = {j.name: c for j, c in zip(jobs, counts, strict=True) if c > 0}
        placed = pack(want, snap.slots_per_node, {j.name: j.allocation for j in jobs})
        out: Decision = {}
        for job in jobs:
            alloc = placed.get(job.name)
            if alloc is None or (not self.adapt_workers and sum(alloc) != want[job.name]):
                continue  # a gang that did not fit whole waits
            out[job.name] = Assignment(alloc, self._batch(job, alloc), adaptive=self.adapt_batch)
        return out

    def _batch(self, job: JobView, alloc: tuple[int, ...]) -> int:
        if not self.adapt_batch:
            return fixed_batch(job)
        replicas = sum(alloc)
        if job.model is None:
            return max(job.limits.init_batch_size, job.limits.min_local_bsz * replicas)
        nodes = sum(1 for a in alloc if a)
        choice = best_goodput(job, np.array([nodes]), np.array([replicas]))
        return int(choice.batch_size[0]) * replicas


register_variant("pollux-workers-only", Pollux, adapt_batch=False)
register_variant("pollux-batch-only", Pollux, adapt_workers=False)
