"""Synthetic views of jobs on a cluster with two kinds of node, shared by the
tests of the kind-aware policies (Sia, Gavel, their estimates)."""

from __future__ import annotations

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import GoodputModel, GradParams, PerfParams
from coadapt.policies import JobView, Snapshot
from coadapt.world.cluster import nodes_of

LIMITS = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                   max_replicas=16)
LINEAR = PerfParams(0.02, 0.001, 0.002, 1e-8, 0.001, 1e-8, 1.0)  # scales almost linearly
MODEL = GoodputModel(LINEAR, GradParams(1.0, 1.0), 32)
# kind a: 2 nodes x 4 slots, kind b: 2 nodes x 4 slots (nodes 2 and 3)
NODES = nodes_of((4, 4), "a") + nodes_of((4, 4), "b", start=2)


def view(name, *, alloc=(0, 0, 0, 0), seen=0, req=1, batch=64, kind=None, models=None,
         age=1000.0, restarts=0, app="toy", weight=1.0, limits=LIMITS, restoring=False):
    models = dict(models or {})
    return JobView(name=name, application=app, submit_time=0.0, age=age, attained_service=0.0,
                   restarts=restarts, allocation=tuple(alloc), batch_size=batch,
                   requested_replicas=req, requested_batch=batch, limits=limits,
                   max_observed_replicas=seen, progress=0.0,
                   model=models.get(kind) if kind is not None else None, kind=kind,
                   models=models, weight=weight, restoring=restoring)


def snap(jobs, nodes=NODES, speeds=None, t=600.0):
    """``speeds``: kind -> one worker's samples/s for the job type ``toy``."""
    return Snapshot(t, nodes, tuple(jobs), 30.0, 60.0,
                    kind_speed={"toy": speeds} if speeds else {})


def kinds_used(alloc, nodes=NODES):
    return {n.kind for n, a in zip(nodes, alloc, strict=True) if a}
