"""Pollux (Qiao et al., OSDI 2021): goodput-optimal slots and batch sizes.

Each job's speedup at r slots is its best goodput there (batch size chosen
jointly) over its best goodput at the fair share ceil(slots / jobs). The
policy maximizes the power mean (p = -1 by default) of the speedups, each
discounted by the restart factor max(age - restarts*delay, 0)/(age + delay) if
its allocation changes. The objective is separable, so the slot counts are
solved exactly (``solve.min_sum_allocation``; partitioned as POP does above
about a thousand jobs on thousands of slots); placement then packs jobs onto
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

**Objectives** (one protocol: a per-slot-count cost per job, summed and
minimized exactly; see :func:`power_cost`). The power mean over p is swept by
variants ``pollux-p+1`` (the plain mean: throughput-greedy), ``pollux-p-0.5``
(Sia's), ``pollux`` (p = -1), ``pollux-p-2`` and ``pollux-p-8`` (near max-min);
``--p`` sets it for ``pollux`` itself.

``pollux-fair``, our objective, trades mean JCT for finish-time fairness with
the goodput model the policy already fits. Themis weights a job by how far
behind its fair finish it is; a real scheduler cannot know a job's remaining
work, but it can see how far behind it is *so far*:
rho_hat = (age + tau) / (progress / fair_rate + tau), with fair_rate the
job's predicted progress rate (goodput / M0) at the fair share, progress its
own reported progress and tau = the restart delay (a prior that keeps a job
with no progress yet finite: its rho_hat grows with its wait). Each job's
power-mean term is weighted by rho_hat ** ``fairness`` (1 for pollux-fair),
the weighted power mean Sia uses for priorities. A job that has been
starved or slowed gets more slots until it catches up; a job that ran ahead
yields. With ``fairness = 0`` this is Pollux.
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
from coadapt.policies.options import apply_options, with_options
from coadapt.policies.placement import Pack, Placer
from coadapt.policies.solve import partitioned_allocation

_EPS = 1e-3  # keeps the power mean finite for jobs with no slots


def power_cost(speedups: np.ndarray, p: float) -> np.ndarray:
    """Per slot count, the cost whose sum the allocation minimizes so that the
    power mean of the speedups is maximized: s^p for p < 0, -log s at p = 0
    (the geometric mean, the limit p -> 0), -s^p for p > 0. NaN (a count the
    job may not run at) costs infinity."""
    s = speedups + _EPS
    with np.errstate(invalid="ignore"):
        cost = s ** p if p < 0 else (-np.log(s) if p == 0 else -(s ** p))
    return np.where(np.isnan(cost), np.inf, cost)


@register
@with_options(
    p="the power-mean exponent (none: --p, default -1; -0.5 Sia's, 1 the mean)",
    adapt_batch="choose each job's batch size (false: its requested batch)",
    adapt_workers="choose each job's slot count (false: its request or none)",
    fairness="weight each job by rho_hat ** fairness (0 Pollux, 1 pollux-fair)")
@dataclass
class Pollux:
    config: PolicyConfig
    adapt_batch: bool = True  # choose each job's batch size (else its requested batch)
    adapt_workers: bool = True  # choose each job's slot count (else its request or none)
    p: float | None = None  # the power-mean exponent of a variant (None: config.p)
    fairness: float = 0.0  # weight each job by rho_hat ** fairness (pollux-fair: 1)
    name: str = "pollux"
    placer: Placer = field(default_factory=Pack)
    uses_oracle: ClassVar[bool] = False
    _tables: dict[str, tuple[GoodputModel, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        apply_options(self)

    def _max_slots(self, job: JobView, total: int) -> int:
        """Most slots a job can use: its limits, and at a fixed batch at least
        a minimal micro-batch per worker."""
        limit = min(total, job.limits.max_useful_replicas())
        if not self.adapt_batch:
            limit = min(limit, fixed_batch(job) // job.limits.min_local_bsz)
        return max(limit, 1)

    def _goodput_table(self, job: JobView, limit: int, per_node: int) -> np.ndarray:
        """Goodput at 0..limit packed slots, cached until the job's model
        changes; only the counts a round can use (up to the growth cap and the
        fair share), not every count up to the cluster's size."""
        hit = self._tables.get(job.name)
        if hit is not None and hit[0] is job.model and len(hit[1]) > limit:
            return hit[1]
        r = np.arange(1, limit + 1)
        nodes = packed_nodes(r, per_node)
        good = best_goodput(job, nodes, r).goodput if self.adapt_batch else \
            fixed_batch_goodput(job, nodes, r, fixed_batch(job))
        table = np.concatenate([[0.0], good])
        self._tables[job.name] = (job.model, table)
        return table

    def _speedups(self, job: JobView, total: int, per_node: int,
                  fair: int) -> tuple[np.ndarray, float]:
        """Speedup at 0..top slots (NaN where the job may not run at that
        count) and the goodput at the fair share it is relative to (0: unknown)."""
        limit = self._max_slots(job, total)
        if self.adapt_workers:
            top = min(limit, growth_cap(job, total, start_slots(job, per_node,
                                                                self.config.start_node)))
        else:
            top = max(1, min(job.requested_replicas, limit))
        s = np.arange(top + 1) / fair
        base = 0.0
        if job.model is not None:
            table = self._goodput_table(job, max(top, min(fair, limit)), per_node)
            base = float(table[min(fair, limit)])
            if base > 0:
                s = table[: top + 1] / base
        if not self.adapt_workers:
            r = np.arange(top + 1)
            s = np.where((r == 0) | (r == top), s, np.nan)
        return s, base

    def _weight(self, job: JobView, fair_goodput: float, tau: float) -> float:
        """rho_hat ** fairness (see the module docstring); 1 for Pollux itself."""
        if self.fairness == 0:
            return 1.0
        tau = max(tau, 1.0)
        rate = fair_goodput / job.limits.init_batch_size  # progress per second at the share
        behind = job.progress / rate if rate > 0 and job.progress > 0 else 0.0
        return float(((job.age + tau) / (behind + tau)) ** self.fairness)

    def decide(self, snap: Snapshot) -> Decision:
        jobs = snap.jobs
        if not jobs:
            return {}
        total, per_node = snap.total_slots, snap.max_slots_per_node
        fair = max(1, math.ceil(total / len(jobs)))
        delay = self.config.restart_delay
        p = self.config.p if self.p is None else self.p
        rank = np.argsort(np.argsort([j.attained_service for j in jobs], kind="stable"))
        costs = []
        for job, rk in zip(jobs, rank, strict=True):
            s, fair_goodput = self._speedups(job, total, per_node, fair)
            weight = self._weight(job, fair_goodput, delay)
            # no delay at age 0 (a job just submitted, --restart-delay 0): nothing to lose
            factor = max(job.age - job.restarts * delay, 0.0) / (job.age + delay) \
                if job.age + delay > 0 else 1.0
            r = np.arange(len(s))
            s = np.where(r == job.replicas, s, s * factor)
            cost = job.weight * weight * power_cost(s, p)
            # Among jobs left without slots, prefer to serve the least-served:
            # a little more cost for leaving it out, whatever the sign of p.
            cost[0] += abs(cost[0]) * 1e-3 * (len(jobs) - rk) / len(jobs)
            costs.append(cost)
        counts = partitioned_allocation(costs, total)
        want = {j.name: c for j, c in zip(jobs, counts, strict=True) if c > 0}
        placed = self.placer.place(want, snap.nodes, {j.name: j.allocation for j in jobs})
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
            return int(job.limits.start_batch(replicas))
        nodes = sum(1 for a in alloc if a)
        choice = best_goodput(job, np.array([nodes]), np.array([replicas]))
        return int(choice.batch_size[0]) * replicas


register_variant("pollux-workers-only", Pollux, adapt_batch=False)
register_variant("pollux-batch-only", Pollux, adapt_workers=False)
register_variant("pollux-fair", Pollux, fairness=1.0)
for _p in (1.0, -0.5, -2.0, -8.0):
    register_variant(f"pollux-p{_p:+g}", Pollux, p=_p)
