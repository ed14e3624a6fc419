"""What a scheduler can estimate about a job from its own fitted model.

Shared by the model-based policies so that they read a job's observations the
same way: throughput at its requested batch, best goodput per slot count, and
how far it may grow beyond what it has been seen to run at.
"""

from __future__ import annotations

import heapq

import numpy as np

from coadapt.models.batching import split_batch
from coadapt.policies.base import JobView


def packed_nodes(replicas: np.ndarray, per_node: int) -> np.ndarray:
    """Nodes used when R slots are packed onto as few nodes as possible."""
    return np.maximum(np.ceil(np.asarray(replicas) / per_node), 1)


def growth_cap(job: JobView, total_slots: int, start: int = 1) -> int:
    """Most slots worth giving: ``start`` to a job that has never run, then at
    most twice what it has run at (its throughput beyond that is an
    extrapolation), within its declared limits."""
    seen = job.max_observed_replicas
    cap = min(2 * seen if seen else max(start, 1), total_slots,
              job.limits.max_useful_replicas())
    return max(cap, 1)


def start_slots(job: JobView, per_node: int, start_node: bool) -> int:
    """What a job that has never run may start on (``PolicyConfig.start_node``)."""
    return max(per_node, job.requested_replicas) if start_node else 1


def fixed_batch_throughput(job: JobView, replicas: np.ndarray, per_node: int) -> np.ndarray:
    """Samples/s at the requested batch on packed placements; proportional to
    R (relative units) for a job that has not reported any step yet."""
    r = np.asarray(replicas, dtype=float)
    if job.model is None:
        return r
    m, s = split_batch(job.requested_batch, r, job.limits)
    return job.model.throughput(packed_nodes(r, per_node), r, m, s)


def fixed_batch(job: JobView) -> int:
    """The job's requested batch within its declared limits."""
    lim = job.limits
    return int(min(max(job.requested_batch, lim.min_local_bsz), lim.max_batch_size))


def fixed_batch_goodput(job: JobView, nodes: np.ndarray, replicas: np.ndarray,
                        batch: int) -> np.ndarray:
    """Goodput per allocation shape when the job runs total batch ``batch``."""
    assert job.model is not None
    m, s = split_batch(batch, replicas, job.limits)
    return job.model.goodput(nodes, replicas, m, s)


def best_goodput(job: JobView, nodes: np.ndarray, replicas: np.ndarray):
    """Best goodput and its (micro-batch, accumulation) per allocation shape."""
    assert job.model is not None
    return job.model.optimize(nodes, replicas, job.limits)


def _best_step(v: np.ndarray, r: int, budget: int, lookahead: bool) -> tuple[float, int]:
    """Largest value gain per slot from r, over steps of 1 slot (or any size
    with ``lookahead``, which sees past plateaus of a non-concave curve)."""
    top = min(len(v) - 1, r + (budget if lookahead else 1))
    if top <= r:
        return 0.0, 0
    k = np.arange(1, top - r + 1)
    rate = (v[r + 1 : top + 1] - v[r]) / k
    i = int(np.argmax(rate))
    return float(rate[i]), int(k[i])


def greedy_marginal(values: list[np.ndarray], budget: int, lookahead: bool = False) -> list[int]:
    """One slot to each job in order while slots last, then further slots to
    the job whose value rises most per slot (``values[j][r]`` = value at r)."""
    counts = [0] * len(values)
    for j, v in enumerate(values):
        if budget == 0:
            break
        if len(v) > 1:
            counts[j] = 1
            budget -= 1
    heap: list[tuple[float, int, int]] = []
    for j, v in enumerate(values):
        if counts[j]:
            rate, k = _best_step(v, 1, budget, lookahead)
            if k:
                heap.append((-rate, j, k))
    heapq.heapify(heap)
    while budget > 0 and heap:
        neg, j, k = heapq.heappop(heap)
        if -neg <= 0:
            break
        if k > budget:  # the step no longer fits: re-evaluate within what is left
            rate, k = _best_step(values[j], counts[j], budget, lookahead)
            if k:
                heapq.heappush(heap, (-rate, j, k))
            continue
        counts[j] += k
        budget -= k
        rate, k = _best_step(values[j], counts[j], budget, lookahead)
        if k:
            heapq.heappush(heap, (-rate, j, k))
    return counts
