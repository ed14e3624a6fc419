"""Each job's goodput per packed slot count, for all of a round's jobs at once.

A model-based policy asks, per job, for its goodput at 1..n slots packed onto
as few nodes as possible (and the batch that reaches it). Evaluated job by job
that is a thousand small numpy calls a round at a thousand jobs; here the
jobs whose model changed are evaluated in one stacked call
(``models.goodput.stacked_optimize``) and the others reuse their table, kept
while their fitted model is the same object and long enough. The figures are
those of ``GoodputModel.optimize`` on each job alone, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from coadapt.models.goodput import GoodputModel, stacked_optimize
from coadapt.policies.base import JobView
from coadapt.policies.estimates import fixed_batch, fixed_batch_goodput, packed_nodes


@dataclass(frozen=True)
class Table:
    """A job's goodput at 0..n packed slots (0 at none) and, per count, the
    per-replica batch (micro-batch x micro-steps) of that optimum."""

    model: GoodputModel
    per_node: int
    goodput: np.ndarray
    local_batch: np.ndarray


@dataclass
class GoodputTables:
    """The tables of the jobs a policy sees, reused across rounds."""

    fixed: bool = False
    """At the job's requested batch (``estimates.fixed_batch``) instead of the best."""
    _held: dict[str, Table] = field(default_factory=dict)

    def lookup(self, jobs: Sequence[JobView], counts: np.ndarray,
               per_node: int) -> list[Table | None]:
        """Per job, a table covering 0..counts[i] slots (None for a job with
        no model yet). Jobs no longer shown are forgotten."""
        held, fresh = self._held, {}
        out: list[Table | None] = []
        todo: list[int] = []
        for i, job in enumerate(jobs):
            t = held.get(job.name)
            if job.model is None:
                out.append(None)
                continue
            if t is None or t.model is not job.model or t.per_node != per_node \
                    or len(t.goodput) <= counts[i]:
                todo.append(i)
            out.append(t)
        if todo:
            for i, t in zip(todo, self._compute([jobs[i] for i in todo], counts[todo], per_node),
                            strict=True):
                out[i] = t
        for job, t in zip(jobs, out, strict=True):
            if t is not None:
                fresh[job.name] = t
        self._held = fresh
        return out

    def _compute(self, jobs: list[JobView], counts: np.ndarray, per_node: int) -> list[Table]:
        counts = np.asarray(counts, dtype=int)
        owner = np.repeat(np.arange(len(jobs)), counts)
        r = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts) + 1
        nodes = packed_nodes(r, per_node)
        cuts = np.cumsum(counts)[:-1]
        if self.fixed:  # one job at a time: its batch is fixed, so no optimum to stack
            good = np.concatenate([fixed_batch_goodput(j, n, k, fixed_batch(j)) for j, n, k in
                                   zip(jobs, np.split(nodes, cuts), np.split(r, cuts), strict=True)]
                                  ) if owner.size else np.zeros(0)
            local = np.zeros_like(good, dtype=int)
        else:
            best = stacked_optimize([j.model for j in jobs], [j.limits for j in jobs],
                                    owner, nodes, r)
            good, local = best.goodput, best.batch_size
        return [Table(j.model, per_node, np.concatenate([[0.0], g]), np.concatenate([[0], b]))
                for j, g, b in zip(jobs, np.split(good, cuts), np.split(local, cuts), strict=True)]
