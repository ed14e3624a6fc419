"""Each job's goodput per packed slot count, for all of a round's jobs at once.

A model-based policy asks, per job, for its goodput at 1..n slots packed onto
as few nodes as possible (and the batch that reaches it). Evaluated job by job
that is a thousand small numpy calls a round at a thousand jobs; here the
jobs whose model changed are evaluated in one stacked call
and the others reuse their table, kept while their fitted model is the same
object and long enough. A refit model mostly changes its gradient statistics
only, so the parts that do not depend on them are kept apart: the candidate
batches per job type and slot count (the same for every job of a type), and
each job's throughput over them while its perf params are equal. What is left
per round is the efficiency and the pick. The figures are those of
``GoodputModel.optimize`` on each job alone, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import (
    BatchGrid,
    GoodputModel,
    PerfParams,
    batch_grid,
    grid_throughput,
    pick_batches,
)
from coadapt.policies.base import JobView
from coadapt.policies.estimates import fixed_batch, fixed_batch_goodput, packed_nodes


class Table(NamedTuple):
    """A job's goodput at 0..n packed slots (0 at none) and, per count, the
    per-replica batch (micro-batch x micro-steps) of that optimum. (A named
    tuple: a thousand are made a round, at a fifth of a frozen dataclass's cost.)"""

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
    _grids: dict[tuple[JobLimits, int], BatchGrid] = field(default_factory=dict)
    """Per (job limits, slots per node), the candidates at 1..R packed slots."""
    _speed: dict[str, tuple[PerfParams, JobLimits, int, np.ndarray]] = field(default_factory=dict)
    """Per job, its perf params, limits, slots per node and throughput over its grid."""

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
        self._speed = {n: v for n, v in self._speed.items() if n in fresh}
        return out

    def _compute(self, jobs: list[JobView], counts: np.ndarray, per_node: int) -> list[Table]:
        counts = np.asarray(counts, dtype=int)
        owner = np.repeat(np.arange(len(jobs)), counts)
        r = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts) + 1
        if self.fixed:  # one job at a time: its batch is fixed, so no optimum to stack
            nodes = packed_nodes(r, per_node)
            cuts = np.cumsum(counts)[:-1]
            good = np.concatenate([fixed_batch_goodput(j, n, k, fixed_batch(j)) for j, n, k in
                                   zip(jobs, np.split(nodes, cuts), np.split(r, cuts), strict=True)]
                                  ) if owner.size else np.zeros(0)
            local = np.zeros_like(good, dtype=int)
        else:
            grid, cols = self._columns(jobs, counts, per_node)
            g = grid.columns(cols[owner] + r - 1)
            models = [j.model for j in jobs]
            best = pick_batches(g, self._throughput(jobs, counts, per_node, g),
                                np.array([m.grad.sqr for m in models])[owner],
                                np.array([m.grad.var for m in models])[owner],
                                np.array([m.init_batch_size for m in models])[owner])
            good, local = best.goodput, best.batch_size
        # each table is 0 at no slots, then the job's run of allocations
        at = owner + np.arange(owner.size) + 1
        gp, lb = np.zeros(owner.size + len(jobs)), np.zeros(owner.size + len(jobs), dtype=int)
        gp[at], lb[at] = good, local
        ends = np.cumsum(counts + 1).tolist()
        # copies, not views: a kept table must not keep this round's arrays alive
        return [Table(j.model, per_node, gp[e - c - 1:e].copy(), lb[e - c - 1:e].copy())
                for j, c, e in zip(jobs, counts.tolist(), ends, strict=True)]

    def _columns(self, jobs: list[JobView], counts: np.ndarray,
                 per_node: int) -> tuple[BatchGrid, np.ndarray]:
        """One grid holding every job type's candidates at 1..R slots (R the
        most any job of the type asks), and per job where its type's begin."""
        need: dict[JobLimits, int] = {}
        for j, c in zip(jobs, counts.tolist(), strict=True):
            need[j.limits] = max(need.get(j.limits, 0), c)
        start, parts = {}, []
        for lim, c in need.items():
            g = self._grids.get((lim, per_node))
            if g is None or g.nodes.size < c:
                k = np.arange(1, max(c, 2 * (0 if g is None else g.nodes.size)) + 1)
                g = self._grids[(lim, per_node)] = batch_grid(lim, packed_nodes(k, per_node), k)
            start[lim] = sum(p.nodes.size for p in parts)
            parts.append(g)
        grid = parts[0] if len(parts) == 1 else BatchGrid(
            *(np.concatenate([getattr(p, f) for p in parts], axis=-1)
              for f in ("nodes", "replicas", "micro", "accum", "total", "valid")))
        return grid, np.array([start[j.limits] for j in jobs], dtype=int)

    def _throughput(self, jobs: list[JobView], counts: np.ndarray, per_node: int,
                    g: BatchGrid) -> np.ndarray:
        """Every candidate's throughput (the columns of ``g``, job by job),
        computed for the jobs whose perf params changed and kept for the rest."""
        ends = np.cumsum(counts)
        todo = []
        for i, (j, c) in enumerate(zip(jobs, counts.tolist(), strict=True)):
            kept = self._speed.get(j.name)
            if kept is None or kept[0] != j.model.perf or kept[1] != j.limits \
                    or kept[2] != per_node or kept[3].shape[1] < c:
                todo.append(i)
        if todo:
            cols = np.concatenate([np.arange(ends[i] - counts[i], ends[i]) for i in todo])
            owner = np.repeat(np.arange(len(todo)), counts[todo])
            perf = np.array([jobs[i].model.perf.as_array() for i in todo]).T[:, owner]
            fresh = grid_throughput(perf, g.columns(cols))
            at = np.concatenate([[0], np.cumsum(counts[todo])]).tolist()
            for k, i in enumerate(todo):
                self._speed[jobs[i].name] = (jobs[i].model.perf, jobs[i].limits, per_node,
                                             fresh[:, at[k]:at[k + 1]].copy())
        return np.concatenate([self._speed[j.name][3][:, :c]
                               for j, c in zip(jobs, counts.tolist(), strict=True)], axis=1)
