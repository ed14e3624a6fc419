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

from coadapt.models.goodput import stacked_optimize
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
    fixed_batch,
    growth_cap,
    start_slots,
)
from coadapt.policies.goodput_tables import GoodputTables, Table
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
    tables: GoodputTables = field(init=False, repr=False)

    def __post_init__(self) -> None:
        apply_options(self)
        self.tables = GoodputTables(fixed=not self.adapt_batch)

    def _max_slots(self, job: JobView, total: int) -> int:
        """Most slots a job can use: its limits, and at a fixed batch at least
        a minimal micro-batch per worker."""
        limit = min(total, job.limits.max_useful_replicas())
        if not self.adapt_batch:
            limit = min(limit, fixed_batch(job) // job.limits.min_local_bsz)
        return max(limit, 1)

    def _top(self, job: JobView, limit: int, total: int, per_node: int) -> int:
        """The most slots this round may give: the growth cap, or the request."""
        if self.adapt_workers:
            return min(limit, growth_cap(job, total, start_slots(job, per_node,
                                                                 self.config.start_node)))
        return max(1, min(job.requested_replicas, limit))

    def _speedups(self, jobs: tuple[JobView, ...], tables: list[Table | None], top: np.ndarray,
                  at: np.ndarray, fair: int) -> tuple[np.ndarray, np.ndarray]:
        """Per job (rows) the speedup at 0..max(top) slots, NaN past its top or
        where it may not run, relative to its goodput at ``at`` (the fair share
        within its limit): slots / fair for a job with no model yet. And that
        goodput per job (0: unknown)."""
        r = np.arange(int(top.max()) + 1)
        s = np.tile(r / fair, (len(jobs), 1))
        base = np.zeros(len(jobs))
        have = [i for i, t in enumerate(tables) if t is not None]
        if have:  # every modeled job's row at once: its goodput over its own at the share
            base[have] = [tables[i].goodput[at[i]] for i in have]
            rows = [i for i in have if base[i] > 0]
            if rows:
                lens = top[rows] + 1
                owner = np.repeat(rows, lens)
                cols = np.arange(owner.size) - np.repeat(np.cumsum(lens) - lens, lens)
                s[owner, cols] = np.concatenate(
                    [tables[i].goodput[: top[i] + 1] for i in rows]) / base[owner]
        s[r[None, :] > top[:, None]] = np.nan
        if not self.adapt_workers:
            s = np.where((r[None, :] == 0) | (r[None, :] == top[:, None]), s, np.nan)
        return s, base

    def _weight(self, job: JobView, fair_goodput: float, tau: float) -> float:
        """rho_hat ** fairness (see the module docstring); 1 for Pollux itself."""
        if self.fairness == 0:
            return 1.0
        tau = max(tau, 1.0)
        rate = fair_goodput / job.limits.init_batch_size  # progress per second at the share
        behind = job.progress / rate if rate > 0 and job.progress > 0 else 0.0
        return float(((job.age + tau) / (behind + tau)) ** self.fairness)

    def costs(self, snap: Snapshot) -> tuple[np.ndarray, list[Table | None]]:
        """Jobs x slot counts: the cost whose sum the allocation minimizes (np.inf
        where a count is not allowed), and the jobs' goodput tables."""
        jobs = snap.jobs
        n, total, per_node = len(jobs), snap.total_slots, snap.max_slots_per_node
        fair = max(1, math.ceil(total / n))
        delay = self.config.restart_delay
        p = self.config.p if self.p is None else self.p
        limit = np.array([self._max_slots(j, total) for j in jobs])
        top = np.array([self._top(j, int(lim), total, per_node)
                        for j, lim in zip(jobs, limit, strict=True)])
        at = np.minimum(fair, limit)
        tables = self.tables.lookup(jobs, np.maximum(top, at), per_node)
        s, base = self._speedups(jobs, tables, top, at, fair)
        weight = np.array([j.weight * self._weight(j, float(b), delay)
                           for j, b in zip(jobs, base, strict=True)])
        age = np.array([j.age for j in jobs])
        restarts = np.array([j.restarts for j in jobs])
        with np.errstate(divide="ignore", invalid="ignore"):
            # no delay at age 0 (a job just submitted, --restart-delay 0): nothing to lose
            factor = np.where(age + delay > 0,
                              np.maximum(age - restarts * delay, 0.0) / (age + delay), 1.0)
        r = np.arange(s.shape[1])
        current = np.array([j.replicas for j in jobs])
        s = np.where(r[None, :] == current[:, None], s, s * factor[:, None])
        cost = weight[:, None] * power_cost(s, p)
        cost[r[None, :] > top[:, None]] = np.inf
        # Among jobs left without slots, prefer to serve the least-served:
        # a little more cost for leaving it out, whatever the sign of p.
        rank = np.argsort(np.argsort([j.attained_service for j in jobs], kind="stable"))
        cost[:, 0] += np.abs(cost[:, 0]) * 1e-3 * (n - rank) / n
        return cost, tables

    def decide(self, snap: Snapshot) -> Decision:
        jobs = snap.jobs
        if not jobs:
            return {}
        cost, tables = self.costs(snap)
        counts = partitioned_allocation(cost, snap.total_slots)
        want = {j.name: c for j, c in zip(jobs, counts, strict=True) if c > 0}
        # a job holding nothing has no place to keep: only the holders' are passed
        placed = self.placer.place(want, snap.nodes,
                                   {j.name: j.allocation for j in jobs if j.replicas})
        out: Decision = {}
        per_node = snap.max_slots_per_node
        chosen = []
        for job, table in zip(jobs, tables, strict=True):
            alloc = placed.get(job.name)
            if alloc is None:
                continue
            if alloc is job.allocation:
                replicas, spread = job.replicas, job.nodes_used
            else:
                replicas, spread = sum(alloc), len(alloc) - alloc.count(0)
            if not self.adapt_workers and replicas != want[job.name]:
                continue  # a gang that did not fit whole waits
            chosen.append((job, alloc, replicas, spread, table))
        for (job, alloc, *_), batch in zip(chosen, self._batches(chosen, per_node), strict=True):
            out[job.name] = Assignment(alloc, batch, adaptive=self.adapt_batch)
        return out

    def _batches(self, chosen: list[tuple[JobView, tuple[int, ...], int, int, Table | None]],
                 per_node: int) -> list[int]:
        """Each placed job's total batch: its requested one (``adapt_batch``
        off), the start batch without a model, else the goodput optimum of its
        allocation: its table's where packed as the table assumes, the others
        in one stacked evaluation."""
        out: list[int] = []
        misses: list[int] = []
        for i, (job, _, replicas, spread, table) in enumerate(chosen):
            if not self.adapt_batch:
                out.append(fixed_batch(job))
            elif job.model is None:
                out.append(int(job.limits.start_batch(replicas)))
            elif table is not None and replicas < len(table.local_batch) \
                    and spread == max(-(-replicas // per_node), 1):
                out.append(int(table.local_batch[replicas]) * replicas)
            else:
                out.append(0)
                misses.append(i)
        if misses:
            picked = [chosen[i] for i in misses]
            nodes = np.array([spread for *_, spread, _ in picked])
            replicas = np.array([r for _, _, r, _, _ in picked])
            best = stacked_optimize([j.model for j, *_ in picked], [j.limits for j, *_ in picked],
                                    np.arange(len(picked)), nodes, replicas)
            for i, b, r in zip(misses, best.batch_size, replicas, strict=True):
                out[i] = int(b) * int(r)
        return out


register_variant("pollux-workers-only", Pollux, adapt_batch=False)
register_variant("pollux-batch-only", Pollux, adapt_workers=False)
register_variant("pollux-fair", Pollux, fairness=1.0)
for _p in (1.0, -0.5, -2.0, -8.0):
    register_variant(f"pollux-p{_p:+g}", Pollux, p=_p)
