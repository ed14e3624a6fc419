"""Gavel (Narayanan et al., OSDI 2020), heterogeneity-aware, as the Sia study ran it.

Gavel schedules rigid jobs (their requested slots and batch, never adapted)
on several kinds of node in two steps, following the Sia artifact
(``sia-simulator/gavel.py`` with ``max_sum_throughput_perf``):

1. **Time fractions**: an LP over x[j, k], the fraction of time job j should
   run on kind k: maximize sum_j sum_k T[j, k] x[j, k], subject to
   sum_k x[j, k] <= 1 per job, sum_j size[j, k] x[j, k] <= slots of kind k,
   0 <= x <= 1. T[j, k] is the job's optimizer steps per second on kind k at
   its requested size and batch (``kind_estimates``: its own model, projected
   by the bootstrap ratio, or the bootstrap alone), raw as the artifact uses
   it (its ``scale`` normalization is computed but unused), where the
   artifact reads T from the profiles (an oracle). size[j, k] is its requested
   slots, capped at its limits and at the kind's slots, so that no job waits
   forever for a kind too small for it (the artifact gives such a pair
   T = 0.1 and never runs it there; in the Sia study no request exceeds a
   type's GPUs).
2. **Rounds**: per job and kind, the time received so far (starting at half a
   round, as Gavel seeds it) over the time that kind handed out; priority =
   x[j, k] / that fraction (x * 1e9 before any). The (job, kind) pairs are
   taken by descending priority (then x): a job not yet scheduled whose gang
   fits in the kind's slots left runs there this round, which is credited to
   it. Pairs with x = 0 still fill what is left, as in the artifact. A
   ``ConfigPlacer`` (``FirstFit``: kept where unchanged, else node by node)
   places the gangs on nodes of their kind.

Finish-time fairness, Gavel's other objective, is the variant
``gavel-ftf-oracle`` (``gavel_ftf.py``): the same rounds over another LP, which
needs each job's remaining steps, so it is an oracle baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.optimize

from coadapt.policies.base import (
    Assignment,
    Decision,
    JobView,
    PolicyConfig,
    Snapshot,
    register,
)
from coadapt.policies.estimates import fixed_batch, packed_nodes
from coadapt.policies.kind_estimates import job_speeds, on_kind, throughput_on
from coadapt.policies.kind_placement import Config, ConfigPlacer, FirstFit, place_jobs

_NEW = 1e9  # Gavel's priority factor for a pair that has received no time yet


@dataclass(frozen=True)
class Plan:
    """The LP's inputs and answer for one round (rows: jobs, columns: kinds)."""

    kinds: tuple[str, ...]
    sizes: np.ndarray  # slots of each job's gang per kind
    throughput: np.ndarray  # optimizer steps/s per job and kind
    fractions: np.ndarray  # x[j, k]


def max_throughput(snap: Snapshot, sizes: np.ndarray, tput: np.ndarray,
                   floor: np.ndarray | None = None) -> np.ndarray | None:
    """The time fractions x[j, k] that maximize sum T x within one unit of time
    per job and the slots of each kind; with ``floor``, only those that give
    job j at least floor[j] steps/s (None: no such x)."""
    m, n = tput.shape
    if m == 0:
        return np.zeros((0, n))
    per_job = np.kron(np.eye(m), np.ones(n))  # sum_k x[j, k] <= 1
    per_kind = np.zeros((n, m * n))  # sum_j size x[j, k] <= slots of k
    for k in range(n):
        per_kind[k, k::n] = sizes[:, k]
    a_ub = [per_job, per_kind]
    b_ub = [np.ones(m), [snap.slots_of_kind(k) for k in snap.kinds]]
    if floor is not None:  # -sum_k T[j, k] x[j, k] <= -floor[j]
        a_ub.append(-per_job * tput.ravel())
        b_ub.append(-floor)
    res = scipy.optimize.linprog(-tput.ravel(), A_ub=np.vstack(a_ub),
                                 b_ub=np.concatenate(b_ub), bounds=(0, 1), method="highs")
    if res.x is None:
        return None
    return np.clip(np.round(res.x, 5), 0.0, 1.0).reshape(m, n)


def gang_size(job: JobView, kind_slots: int) -> int:
    """Requested slots, within the job's limits and the kind's slots."""
    return max(1, min(job.requested_replicas, job.limits.max_useful_replicas(), kind_slots))


@register
@dataclass
class Gavel:
    config: PolicyConfig
    name: str = "gavel"
    placer: ConfigPlacer = field(default_factory=FirstFit)
    uses_oracle: ClassVar[bool] = False
    _received: dict[str, dict[str, float]] = field(default_factory=dict)
    _handed_out: dict[str, float] = field(default_factory=dict)

    def plan(self, snap: Snapshot) -> Plan:
        """Throughputs and the max-sum-throughput time fractions."""
        kinds = snap.kinds
        jobs = snap.jobs
        sizes = np.ones((len(jobs), len(kinds)), dtype=int)
        tput = np.zeros((len(jobs), len(kinds)))
        for j, job in enumerate(jobs):
            speeds = job_speeds(snap, job)
            batch = fixed_batch(job)
            for k, kind in enumerate(kinds):
                mine = snap.of_kind(kind)
                size = gang_size(job, sum(n.slots for n in mine))
                per_node = max(n.slots for n in mine)
                r = np.array([size])
                est = on_kind(job, kind, speeds)
                sizes[j, k] = size
                tput[j, k] = float(throughput_on(job, est, packed_nodes(r, per_node), r,
                                                 batch)[0]) / batch
        return Plan(kinds, sizes, tput, self.fractions(snap, sizes, tput))

    def fractions(self, snap: Snapshot, sizes: np.ndarray, tput: np.ndarray) -> np.ndarray:
        """Max-sum-throughput: the time fractions x[j, k] of the LP above."""
        x = max_throughput(snap, sizes, tput)
        if x is None:
            raise RuntimeError("gavel: the LP found no solution")
        return x

    def _priorities(self, snap: Snapshot, plan: Plan) -> np.ndarray:
        """x / fraction of the kind's time received, per job and kind."""
        half = snap.interval / 2
        for job in snap.jobs:
            if job.name not in self._received:
                self._received[job.name] = {}
            got = self._received[job.name]
            for kind in plan.kinds:
                if kind not in got:
                    got[kind] = half
                    self._handed_out[kind] = self._handed_out.get(kind, 0.0) + half
        prio = np.zeros_like(plan.fractions)
        for j, job in enumerate(snap.jobs):
            for k, kind in enumerate(plan.kinds):
                total = self._handed_out[kind]
                share = self._received[job.name][kind] / total if total > 0 else 0.0
                x = plan.fractions[j, k]
                prio[j, k] = x / share if x > 0 and share > 0 else x * _NEW
        return prio

    def decide(self, snap: Snapshot) -> Decision:
        live = {j.name for j in snap.jobs}
        for gone in [n for n in self._received if n not in live]:
            del self._received[gone]
        if not snap.jobs:
            return {}
        plan = self.plan(snap)
        prio = self._priorities(snap, plan)
        left = {k: snap.slots_of_kind(k) for k in plan.kinds}
        pairs = [(j, k) for k in range(len(plan.kinds)) for j in range(len(snap.jobs))]
        pairs.sort(key=lambda jk: (-prio[jk], -plan.fractions[jk]))
        configs: dict[str, Config] = {}
        for j, k in pairs:
            job, kind = snap.jobs[j], plan.kinds[k]
            size = int(plan.sizes[j, k])
            if job.name in configs or size > left[kind]:
                continue
            left[kind] -= size
            configs[job.name] = Config(kind, 0, size)
        out: Decision = {}
        for job, alloc, cfg in place_jobs(self.placer, configs, snap):
            kind = cfg.kind
            self._received[job.name][kind] += snap.interval
            self._handed_out[kind] += snap.interval
            out[job.name] = Assignment(alloc, fixed_batch(job), adaptive=False)
        return out
