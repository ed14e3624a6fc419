"""Finish-time fairness yardstick T_iso, per Themis, through the same engine.

T_iso of a job is how long it takes when it runs alone, under the same
policy and engine (rounds, the start rule, restarts, the batch sizes it would
run at, validations and verification), on a cluster of its equal share:
floor(slots / N) slots packed onto nodes of the cluster's size, N the
time-averaged number of jobs in the system during its life (or its request,
when that is larger). It is submitted
at the same offset within a round as it really was, so it waits for its first
round as long. A job alone on an empty cluster thus scores rho = 1.

N is known only after the run, so the yardstick is computed then, from the
log, and appended to it as ``fairness`` events; metrics read them like any
other event. The isolated runs are simulated, for sim and live logs alike
(the experimenter's yardstick, never shown to a policy), with exact
reports: no ``--observation-noise``, so the yardstick stays clean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from coadapt.data.cluster import ClusterSpec
from coadapt.data.workload import JobSpec, Workload
from coadapt.engine.loop import Engine
from coadapt.engine.run import RunSettings
from coadapt.eventlog import EventLog, read_events
from coadapt.metrics import job_table
from coadapt.models.batching import JobLimits
from coadapt.policies import Policy
from coadapt.policies.estimates import packed_placement

Backend = Callable[[], Any]  # a fresh modeled backend per isolated run


def share_cluster(cluster: ClusterSpec, share: int) -> ClusterSpec:
    """``share`` slots packed onto nodes the size of the cluster's largest."""
    per = max(cluster.slots_per_node)
    return ClusterSpec(packed_placement(min(share, cluster.total_slots), per), cluster.network)


def isolated_jct(spec: JobSpec, share: int, settings: RunSettings,
                 limits: Mapping[str, JobLimits], make_backend: Backend,
                 make_policy: Callable[[], Policy]) -> float:
    """Seconds from submission to completion of ``spec`` alone on its share."""
    offset = math.fmod(spec.submit_time, settings.interval)
    alone = JobSpec(spec.name, offset, spec.application, spec.num_replicas, spec.batch_size)
    wl = Workload(f"iso-{spec.name}", None, (alone,))
    backend = make_backend()
    if getattr(backend, "observation_noise", 0.0):
        raise ValueError("isolated runs (T_iso) need exact reports: build their backend "
                         "without --observation-noise")
    with EventLog(None, stream=_Null()) as log:
        engine = Engine(wl, limits, backend, make_policy(), share_cluster(
            settings.cluster, share), log, interval=settings.interval,
                        restart_delay=settings.restart_delay)
        result = engine.run()
    done = result.jobs[0].record.completed_at
    assert done is not None
    return done - offset


def fairness_events(events: list[dict[str, Any]], workload: Workload, settings: RunSettings,
                    limits: Mapping[str, JobLimits], make_backend: Backend,
                    make_policy: Callable[[], Policy]) -> list[dict[str, Any]]:
    """``fairness`` event fields (job, share, n_avg, t_iso) for every completed job;
    isolated runs of equal (type, request, share, offset) are run once."""
    specs = {s.name: s for s in workload.jobs}
    slots = settings.cluster.total_slots
    cache: dict[tuple, float] = {}
    out = []
    for row in job_table(events).iter_rows(named=True):
        if row["jct"] is None or row["n_avg"] is None or row["job"] not in specs:
            continue
        spec = specs[row["job"]]
        # A request larger than the share runs on its request: a policy that
        # runs jobs only at their request (tiresias) could not run it on less.
        share = max(1, int(slots // max(row["n_avg"], 1.0)), min(spec.num_replicas, slots))
        key = (spec.application, spec.num_replicas, spec.batch_size, share,
               round(math.fmod(spec.submit_time, settings.interval), 6))
        if key not in cache:
            cache[key] = isolated_jct(spec, share, settings, limits, make_backend, make_policy)
        out.append({"job": spec.name, "share": share, "n_avg": row["n_avg"],
                    "t_iso": cache[key]})
    return out


def append_fairness(log: EventLog, events_path: Path, now: float, workload: Workload,
                    settings: RunSettings, limits: Mapping[str, JobLimits],
                    make_backend: Backend, make_policy: Callable[[], Policy]) -> None:
    """Append a ``fairness`` event per completed job to the run's own log."""
    events = list(read_events(events_path))
    for f in fairness_events(events, workload, settings, limits, make_backend, make_policy):
        log.emit(now, "fairness", f["job"], share=f["share"], n_avg=f["n_avg"],
                 t_iso=f["t_iso"])


class _Null:
    """A text stream that discards (isolated runs need no log)."""

    def write(self, _s: str) -> int:
        return 0

    def flush(self) -> None:
        pass
