"""The engine's horizon: a run that cannot finish stops, logs its unfinished jobs
failed and ends; requests above the cluster are adjusted and counted, requests
outside the job type's limits refused."""

from __future__ import annotations

import time

import pytest
from toyprofile import make_toy

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import HORIZON_UNKNOWN, Engine, default_horizon
from coadapt.eventlog import EventLog, read_events
from coadapt.metrics import job_table, summarize
from coadapt.policies import PolicyConfig, make_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec, Workload, WorkloadError
from coadapt.world.world import World


def run_to(tmp_path, jobs, horizon=None, policy="fixed", cluster="2x4"):
    """Run ``jobs`` on the toy world; the events, and the engine's result."""
    spec = ClusterSpec.parse(cluster)
    world = World.build({"toy": make_toy()}, spec)
    wl = Workload("t", tmp_path / "w.csv", tuple(jobs))
    path = tmp_path / f"{policy}.jsonl"
    with EventLog(path) as log:
        log.header(mode="simulate", policy=policy, total_slots=spec.total_slots)
        eng = Engine(wl, world.limits, ModeledBackend(world, 30.0),
                     make_policy(policy, PolicyConfig()), spec, log, interval=60.0,
                     restart_delay=30.0, horizon=horizon)
        result = eng.run()
        log.emit(eng.env.now, "end", None, wall_s=0.0)
    return list(read_events(path)), result, eng


def test_a_job_submitted_after_the_horizon_fails_unsubmitted_and_the_log_ends(tmp_path):
    events, result, eng = run_to(tmp_path, [JobSpec("now", 0.0, "toy", 1, 32),
                                            JobSpec("late", 1e9, "toy", 1, 32)], horizon=5000.0)
    assert result.horizon_reached and eng.env.now == pytest.approx(5000.0)
    fails = {e["job"]: e for e in events if e["kind"] == "fail"}
    assert set(fails) == {"late"} and fails["late"]["submitted"] is False
    assert "horizon (5000 s)" in fails["late"]["reason"] and fails["late"]["fatal"]
    assert events[-1]["kind"] == "end"
    s = summarize(events)
    assert (s["jobs"], s["completed"], s["failed"], s["horizon_reached"]) == (2, 1, 1, True)


def test_a_running_job_past_the_horizon_is_stopped_and_counted_failed(tmp_path):
    events, result, _ = run_to(tmp_path, [JobSpec("slow", 0.0, "toy", 1, 32)], horizon=100.0)
    assert result.horizon_reached and result.jobs[0].record.completed_at is None
    last_alloc = [e for e in events if e["kind"] == "allocate"][-1]
    assert last_alloc["replicas"] == 0 and last_alloc["reason"] == "horizon"
    fail = next(e for e in events if e["kind"] == "fail")
    assert fail["job"] == "slow" and fail["horizon"] == 100.0 and "submitted" not in fail
    assert not [e for e in events if e["kind"] in ("complete", "round") and e["t"] > 100.0]
    s = summarize(events)
    assert (s["completed"], s["failed"], s["avg_jct"]) == (0, 1, None)
    assert job_table(events)["jct"].to_list() == [None]


def test_a_run_that_finishes_never_sees_its_horizon(tmp_path):
    events, result, eng = run_to(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)])
    assert not result.horizon_reached and eng.horizon == HORIZON_UNKNOWN
    assert not [e for e in events if e["kind"] == "fail"]
    s = summarize(events)
    assert (s["failed"], s["horizon_reached"], s["adjusted_requests"]) == (0, False, 0)


def test_a_far_arrival_skips_the_empty_rounds_instead_of_logging_them(tmp_path):
    t0 = time.perf_counter()
    events, result, _ = run_to(tmp_path, [JobSpec("a", 0.0, "toy", 1, 32),
                                          JobSpec("b", 3e8, "toy", 1, 32)])  # ~10 years on
    assert time.perf_counter() - t0 < 10
    assert all(j.record.completed_at is not None for j in result.jobs)
    assert sum(e["kind"] == "round" for e in events) < 3 * 1000  # not 5 million
    assert summarize(events)["completed"] == 2


def test_default_horizon_is_a_generous_multiple():
    wl = Workload("t", None, (JobSpec("a", 0.0, "toy", 1, 32), JobSpec("b", 100.0, "toy", 1, 32)))
    assert default_horizon(wl, 50.0) == 20 * 150.0 + 86400
    assert default_horizon(wl) == default_horizon(wl, float("inf")) == 20 * 100.0 + 30 * 86400


@pytest.mark.parametrize("horizon", [0.0, -1.0, float("nan"), float("inf")])
def test_a_bad_horizon_is_refused(tmp_path, horizon):
    with pytest.raises(ValueError, match="--horizon"):
        run_to(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)], horizon=horizon)


def test_replicas_above_the_cluster_are_adjusted_logged_and_counted(tmp_path, caplog):
    events, result, _ = run_to(tmp_path, [JobSpec("big", 0.0, "toy", 9, 64)], policy="fixed")
    sub = next(e for e in events if e["kind"] == "submit")
    assert (sub["requested_replicas"], sub["adjusted_replicas"]) == (9, 8)
    assert "asks 9 replicas" in sub["adjusted"]
    assert result.jobs[0].record.completed_at is not None
    assert summarize(events)["adjusted_requests"] == 1
    assert "adjusted down to 8: big (9)" in caplog.text


@pytest.mark.parametrize("job,msg", [
    (JobSpec("huge", 0.0, "toy", 1, 10**12, line=7), r"w.csv:7: field 'batch_size' is 1000000000000 "
                                                      r"for job huge; job type toy declares"),
    (JobSpec("tiny", 0.0, "toy", 1, 4, line=3), r"w.csv:3: field 'batch_size' is 4 for job tiny"),
    (JobSpec("wide", 0.0, "toy", 17, 64, line=2), r"w.csv:2: field 'num_replicas' is 17 for job "
                                                   r"wide; job type toy declares at most 16"),
])
def test_requests_outside_the_job_types_limits_are_refused(tmp_path, job, msg):
    with pytest.raises(WorkloadError, match=msg):
        run_to(tmp_path, [job])
