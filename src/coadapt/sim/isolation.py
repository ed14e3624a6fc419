"""Isolated run time: the yardstick of finish-time fairness.

T_iso(k) is how long a job of this type takes alone on k slots packed onto as
few nodes as possible, at the best batch size for that share in every epoch,
from the profile (ground truth: this is the experimenter's yardstick, never
shown to a policy). It goes into the event log header so that fairness is
computed from the log alone.
"""

from __future__ import annotations

import numpy as np

from coadapt.models.goodput import gain, split_batch
from coadapt.policies.estimates import packed_placement
from coadapt.profiling.profile import AppProfile


def isolated_times(profile: AppProfile, max_slots: int, per_node: int,
                   restart_delay: float, candidates: int = 24) -> list[float]:
    """T_iso for k = 1..max_slots (seconds), one startup delay included."""
    p = profile
    epochs = p.completion_epoch(p.init_batch_size) + 1
    dprog = np.diff(p.epoch_progress[: epochs + 1])
    out = []
    for k in range(1, max_slots + 1):
        k_eff = min(k, p.max_replicas, p.max_batch_size // p.min_local_bsz)
        lo = max(p.init_batch_size, p.min_local_bsz * k_eff)
        batches = np.unique(np.geomspace(lo, max(lo, p.max_batch_size), candidates).round())
        micro, accum = split_batch(batches, k_eff, p.max_local_bsz, p.init_batch_size,
                                   p.max_batch_size)
        placement = packed_placement(k_eff, per_node)
        times = []
        for m, s in zip(micro, accum, strict=True):
            step, sync = p.throughput(placement, int(m))
            times.append(step + s * (step - sync))
        times = np.array(times)
        real = k_eff * micro * (accum + 1)
        sqr, var = p.grad_stats_grid(real.astype(float))
        rate = gain(sqr[: len(dprog)], var[: len(dprog)], real / p.init_batch_size) / times
        out.append(float(restart_delay + np.sum(dprog / rate.max(axis=1))))
    return out
