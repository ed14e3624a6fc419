"""A small synthetic job type whose ground truth the tests know by hand."""

from __future__ import annotations

import polars as pl

from coadapt.models.batching import JobLimits
from coadapt.world.profiles.profile import AppProfile


def toy_step(nodes: int, replicas: int, m: float) -> tuple[float, float]:
    """Ground-truth step/sync time of the toy job type."""
    sync = 0.0 if replicas == 1 else (0.02 if nodes > 1 else 0.005) + 0.001 * (replicas - 2)
    return 0.01 + 0.001 * m + sync, sync


def make_toy(name: str = "toy", epochs: int = 10, grad_var: float = 4.0) -> AppProfile:
    rows = []
    for placement in ("1", "2", "4", "11", "22", "44"):
        n, r = len(placement), sum(map(int, placement))
        for m in (8, 16, 32, 64):
            st, sy = toy_step(n, r, m)
            rows.append({"placement": placement, "local_bsz": m, "step_time": st,
                         "sync_time": sy})
    validation = {}
    for batch in (32, 128, 512):
        validation[batch] = pl.DataFrame({
            "progress": [100.0 * (e + 1) for e in range(epochs)],
            "iteration": [100.0 * (e + 1) * 32 / batch * 2 for e in range(epochs)],
            "metric": [0.5 + 0.04 * e for e in range(epochs)],
            "grad_sqr": [1.0] * epochs,
            "grad_var": [grad_var] * epochs,
        })
    return AppProfile(name=name, limits=JobLimits(init_batch_size=32, max_batch_size=512,
                                                  min_local_bsz=8, max_local_bsz=64, max_replicas=16),
                      placements=pl.DataFrame(rows),
                      scalability=None, validation=validation, completion_epochs=epochs,
                      source="toy")
