"""Continue an interrupted live run from its event log and job folders.

The experiment clock resumes where the log ended, so the downtime counts in
no JCT. Every job that had been submitted is rebuilt from the log (restarts,
attained service, completion) and from its own worker events (observations,
progress, validations, last checkpoint); its next launch resumes from that
checkpoint. Jobs not yet submitted arrive at their submit times as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coadapt.backends.live.job import LiveJob
from coadapt.engine.record import JobRecord
from coadapt.eventlog import read_events
from coadapt.models.batching import JobLimits
from coadapt.util.paths import inside
from coadapt.world.workload import Workload


class ResumeError(ValueError):
    """The folder holds no run that can be continued."""


@dataclass(frozen=True)
class ResumeState:
    out_dir: Path
    header: dict[str, Any]
    events: list[dict[str, Any]]
    workload: Workload
    t_end: float
    wall_end: float


def load_resume(out_dir: Path, workload: Workload) -> ResumeState:
    path = out_dir / "events.jsonl"
    if not path.exists():
        raise ResumeError(f"{path}: no event log to resume")
    events = list(read_events(path))
    if not events or events[0]["kind"] != "header" or events[0].get("mode") != "live":
        raise ResumeError(f"{path}:1: not the log of a live run")
    ends = [e for e in events if e["kind"] == "end"]
    if ends and not ends[-1].get("interrupted"):
        raise ResumeError(f"{path}: this run finished; nothing to resume")
    t_end = max(e["t"] for e in events)
    wall_end = ends[-1].get("wall_end") if ends else None
    return ResumeState(out_dir, events[0], events, workload, t_end,
                       float(wall_end) if wall_end else path.stat().st_mtime)


def restore_jobs(state: ResumeState, backend: Any,
                 limits: Mapping[str, JobLimits]) -> tuple[list[LiveJob], list[str]]:
    """LiveJobs for every job submitted before the interruption, and the names
    of those the log still shows holding slots (a run that died without its
    ``end``: their processes are gone, so they hold nothing now)."""
    specs = {s.name: s for s in state.workload.jobs}
    held: dict[str, tuple[float, int]] = {}
    jobs: dict[str, LiveJob] = {}
    for e in state.events:
        name, kind = e.get("job"), e["kind"]
        if kind == "submit":
            spec = specs.get(name)
            if spec is None:
                raise ResumeError(f"{state.out_dir / 'events.jsonl'}: job {name!r} was submitted "
                                  f"but workload {state.workload.name} has no such job")
            if "adjusted_replicas" in e:  # the engine ran it at what the cluster could hold
                spec = replace(spec, num_replicas=int(e["adjusted_replicas"]))
            rec = JobRecord.new(spec, limits[spec.application], e["t"])
            jobs[name] = LiveJob(rec, backend.services, inside(state.out_dir / "jobs", name))
        elif kind == "allocate" and name in jobs:
            rec = jobs[name].record
            t0, r = held.get(name, (e["t"], 0))
            rec.attained += (e["t"] - t0) * r
            held[name] = (e["t"], e["replicas"])
            if e["replicas"]:
                rec.restarts += 1
        elif kind == "complete" and name in jobs:
            jobs[name].record.completed_at = e["t"]
            jobs[name].state = "done"
        elif kind == "fail" and name in jobs:
            if e.get("fatal"):
                jobs[name].state = "failed"
            else:  # retries are counted across the interruption, not reset by it
                jobs[name].failures = max(jobs[name].failures, int(e.get("failures", 0)))
    for job in jobs.values():
        job.record.last_t = state.t_end
        job.replay()
        backend.adopt(job)
    holding = [n for n, (_, r) in held.items() if r and jobs[n].state not in ("done", "failed")]
    return list(jobs.values()), holding
