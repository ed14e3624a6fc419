"""Job limits, the one batch splitter and the one accumulated step time.

Sim, live jobs, policies and the workload generator must agree on how a total
batch M runs on R replicas, or a live job runs a different batch from the one
the simulator charged (they once disagreed: 5 workers at 72 ran 70 live and 75
simulated). Everything that turns (M, R) into (micro-batch, accumulation
steps) calls ``split_batch``; everything that times an accumulating step calls
``step_with_accum``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JobLimits:
    """What a job type declares it accepts: M0, batch and micro-batch bounds,
    and how many replicas it can use."""

    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    max_replicas: int

    def max_useful_replicas(self) -> int:
        """Replicas beyond this cannot each get a minimal micro-batch."""
        return max(1, min(self.max_replicas, self.max_batch_size // self.min_local_bsz))

    def start_batch(self, replicas):
        """The batch of a job with no model yet on ``replicas`` workers (int or
        array): M0, or a minimal micro-batch per worker when that is larger."""
        return np.maximum(self.init_batch_size, self.min_local_bsz * np.asarray(replicas))


@dataclass(frozen=True)
class LimitArrays:
    """Several jobs' ``JobLimits`` as arrays, one entry per row of a stacked
    evaluation; ``split_batch`` and the goodput optimum read them elementwise
    as they read one job's."""

    init_batch_size: np.ndarray
    max_batch_size: np.ndarray
    min_local_bsz: np.ndarray
    max_local_bsz: np.ndarray

    @classmethod
    def of(cls, limits: Sequence[JobLimits], rows: np.ndarray) -> LimitArrays:
        """Row i holds ``limits[rows[i]]``."""
        table = np.array([(lim.init_batch_size, lim.max_batch_size, lim.min_local_bsz,
                           lim.max_local_bsz) for lim in limits], dtype=np.int64)[rows]
        return cls(*table.T)


def split_batch(batch_size, replicas, limits: JobLimits | LimitArrays) -> tuple[np.ndarray, np.ndarray]:
    """(micro-batch, accumulation steps) that run total batch M on R replicas.

    The fewest accumulation steps that keep the micro-batch within
    ``max_local_bsz``; one replica above M0 always takes at least two
    micro-batches (so the gradient noise is estimated from independent
    micro-batches, as AdaptDL does), when both can be of legal size. The
    micro-batch is rounded up (as AdaptDL does) but never so far that the
    batch exceeds ``max_batch_size``. Vectorized over both arguments.
    """
    batch = np.asarray(batch_size, dtype=float)
    r = np.asarray(replicas, dtype=float)
    local = np.ceil(batch / r - 1e-8)
    accum = np.ceil(local / limits.max_local_bsz - 1e-8) - 1
    two = (r == 1) & (batch > limits.init_batch_size) & (batch >= 2 * limits.min_local_bsz)
    accum = np.where(two, np.maximum(accum, 1), accum)
    micro = np.ceil(local / (accum + 1) - 1e-8)
    micro = np.minimum(micro, np.floor(limits.max_batch_size / (r * (accum + 1))))
    return np.maximum(micro, 1).astype(int), accum.astype(int)


@functools.lru_cache(maxsize=65536)
def split_one(batch_size: int, replicas: int, limits: JobLimits) -> tuple[int, int]:
    """``split_batch`` of one (M, R) as ints, memoized: every job asks it at
    every epoch boundary, for the few batches it runs."""
    micro, accum = split_batch(batch_size, replicas, limits)
    return int(micro), int(accum)


def step_with_accum(step, sync, accum):
    """Seconds of one optimizer step with ``accum`` extra micro-batches, from
    the time of one synchronizing step and its all-reduce part: the compute
    (step - sync) repeats, the all-reduce does not."""
    return step + accum * (step - sync)
