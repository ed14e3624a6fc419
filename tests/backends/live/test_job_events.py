"""A live job's handling of its workers' events and of reassignments, without processes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from coadapt.backends.live.backend import LiveBackend, LiveSettings
from coadapt.backends.live.job import LaunchState, LiveJob
from coadapt.engine.record import JobRecord
from coadapt.policies.base import Assignment
from coadapt.runs.live.resume import ResumeState, restore_jobs
from coadapt.world.cluster import ClusterSpec
from coadapt.world.limits import declared_limits
from coadapt.world.workload import JobSpec


def _job(tmp_path: Path) -> tuple[LiveJob, LiveBackend]:
    backend = LiveBackend(tmp_path, ClusterSpec.parse("1x2"), LiveSettings(status=False),
                          cores=[0, 1])
    spec = JobSpec("mlp-0", 0.0, "mlp-mnist1d", 1, 32)
    limits = declared_limits({"mlp-mnist1d"})["mlp-mnist1d"]
    job = LiveJob(JobRecord.new(spec, limits, 0.0), backend.services, tmp_path / "jobs" / "mlp-0")
    job.dir.mkdir(parents=True)
    return job, backend


def _obs(step: int, **drop: object) -> dict:
    e = {"kind": "observation", "t": 0.1 * step, "run_step": step, "progress": float(step),
         "workers": 1, "local_bsz": 32, "accum_steps": 0, "batch_size": 32,
         "step_time": 0.01, "sync_time": 0.0, "grad_sqr": 1.0, "grad_var": 1.0}
    return {k: v for k, v in e.items() if k not in drop}


def test_a_worker_event_missing_a_field_is_skipped_not_fatal(tmp_path, caplog):
    job, backend = _job(tmp_path)
    job.launch = LaunchState(group=None, wall0=0.0, nodes=1, started_at=0.0)  # type: ignore[arg-type]
    backend.wall0 = 0.0
    lines = [_obs(1), _obs(2, progress=None), {"kind": "validation"}, _obs(3)]
    job.events_path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    with caplog.at_level(logging.WARNING):
        job._read_events(quiet=True)
    assert job.bad_events == 1
    assert job.record.progress == 3.0  # the events after the bad one still count
    assert job.validations == 1
    assert str(job.events_path) in caplog.text and "progress" in caplog.text


def test_reassigning_a_verifying_job_counts_no_restart(tmp_path):
    job, _ = _job(tmp_path)
    r = job.record
    r.set_allocation((1,))
    r.choose_batch(32)
    assert r.restarts == 0
    job.state = "verifying"
    assert job.apply(Assignment((2,), 64, adaptive=True), 5.0)
    assert r.restarts == 0 and r.allocation == (2,)
    assert job.state == "verifying"  # no relaunch of a finishing job


def test_resume_keeps_the_failure_count(tmp_path):
    job, backend = _job(tmp_path)
    spec = job.record.spec
    events = [{"kind": "header", "mode": "live", "t": 0.0},
              {"kind": "submit", "job": spec.name, "t": 0.0},
              {"kind": "allocate", "job": spec.name, "t": 0.0, "replicas": 1},
              {"kind": "fail", "job": spec.name, "t": 3.0, "failures": 1, "fatal": False},
              {"kind": "fail", "job": spec.name, "t": 6.0, "failures": 2, "fatal": False}]

    class Wl:
        jobs = [spec]

    state = ResumeState(tmp_path, events[0], events, Wl(), 6.0, 0.0)  # type: ignore[arg-type]
    limits = declared_limits({"mlp-mnist1d"})
    jobs, _ = restore_jobs(state, backend, limits)
    assert jobs[0].failures == 2
