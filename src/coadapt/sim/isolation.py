"""Isolated run time: the yardstick of finish-time fairness.

T_iso(k) is how long a job of this type takes alone on k slots packed onto as
few nodes as possible, at the best batch size for that share in every epoch,
from the profile (ground truth: this is the experimenter's yardstick, never
shown to a policy). It goes into the event log header so that fairness is
computed from the log alone.
"""

from __future__ import annotations

import numpy as np

from coadapt.models.batching import JobLimits, split_batch, step_with_accum
from coadapt.models.goodput import gain
from coadapt.policies.estimates import packed_placement
from coadapt.profiling.profile import AppProfile


def isolated_times(profile: AppProfile, limits: JobLimits, max_slots: int, per_node: int,
                   restart_delay: float, candidates: int = 24) -> list[float]:
    """T_iso for k = 1..max_slots (seconds), one startup delay included."""
    p = profile
    epochs = p.completion_epoch(p.init_batch_size) + 1
    dprog = np.diff(p.epoch_progress[: epochs + 1])
    out = []
    for k in range(1, max_slots + 1):
        k_eff = min(k, limits.max_useful_replicas())
        lo = max(limits.init_batch_size, limits.min_local_bsz * k_eff)
        batches = np.unique(np.geomspace(lo, max(lo, limits.max_batch_size), candidates).round())
        micro, accum = split_batch(batches, k_eff, limits)
        placement = packed_placement(k_eff, per_node)
        times = []
        for m, s in zip(micro, accum, strict=True):
            step, sync = p.throughput(placement, int(m))
            times.append(step_with_accum(step, sync, s))
        times = np.array(times)
        real = k_eff * micro * (accum + 1)
        sqr, var = p.grad_stats_grid(real.astype(float))
        rate = gain(sqr[: len(dprog)], var[: len(dprog)], real / limits.init_batch_size) / times
        out.append(float(restart_delay + np.sum(dprog / rate.max(axis=1))))
    return out
