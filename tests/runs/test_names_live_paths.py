"""Defence in depth behind the name rule: every path a live run derives from a
job name resolves inside OUT, or nothing is written (a workload built in
memory, or a log edited by hand, never passes the reader)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coadapt.backends.live.backend import LiveBackend, LiveSettings
from coadapt.runs.live.resume import ResumeError, ResumeState, restore_jobs
from coadapt.runs.live.speed import observed_speed
from coadapt.util.paths import inside
from coadapt.world.cluster import ClusterSpec
from coadapt.world.limits import declared_limits
from coadapt.world.workload import JobSpec, Workload

APP = "mlp-mnist1d"
ESCAPES = ["../../../x", "/tmp/x", "..", "a/../../x"]


def test_inside_keeps_the_joined_path_and_refuses_escapes(tmp_path):
    assert inside(tmp_path / "jobs", "a") == tmp_path / "jobs" / "a"  # joined, not resolved
    rel = Path("out-rel")
    assert inside(rel / "jobs", "a", "b") == rel / "jobs" / "a" / "b"
    assert inside(tmp_path) == tmp_path
    for bad in [*ESCAPES, ".", "a/.."]:
        with pytest.raises(ValueError, match=r"not below .*; refusing to write there"):
            inside(tmp_path / "jobs", bad)


def test_inside_follows_symbolic_links(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "jobs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="elsewhere/a, not below"):
        inside(tmp_path / "out", "jobs", "a")


@pytest.mark.parametrize("name", ESCAPES)
def test_the_live_backend_makes_no_job_folder_outside_out(tmp_path, name):
    out = tmp_path / "out"
    backend = LiveBackend(out, ClusterSpec.parse("1x2"), LiveSettings(status=False), cores=[0, 1])
    limits = declared_limits({APP})[APP]
    with pytest.raises(ValueError, match="not below"):
        backend.create(JobSpec(name, 0.0, APP, 1, 32), limits, 0.0)
    assert not backend.jobs and not (tmp_path / "x").exists()


def test_resume_refuses_a_logged_name_that_leaves_out(tmp_path):
    bad = JobSpec("../x", 0.0, APP, 1, 32)
    wl = Workload("w", None, (bad,))
    events = [{"t": 0.0, "kind": "header", "mode": "live"},
              {"t": 1.0, "kind": "submit", "job": "../x"}]
    state = ResumeState(tmp_path, events[0], events, wl, 1.0, 0.0)
    backend = LiveBackend(tmp_path, ClusterSpec.parse("1x2"), LiveSettings(status=False),
                          cores=[0, 1])
    with pytest.raises(ValueError, match="not below"):
        restore_jobs(state, backend, declared_limits({APP}))


def test_resume_refuses_a_logged_job_the_workload_lacks(tmp_path):
    wl = Workload("w", None, (JobSpec("a", 0.0, APP, 1, 32),))
    events = [{"t": 0.0, "kind": "header", "mode": "live"},
              {"t": 1.0, "kind": "submit", "job": "other"}]
    backend = LiveBackend(tmp_path, ClusterSpec.parse("1x2"), LiveSettings(status=False),
                          cores=[0, 1])
    with pytest.raises(ResumeError, match="job 'other' was submitted but workload w has no"):
        restore_jobs(ResumeState(tmp_path, events[0], events, wl, 1.0, 0.0), backend,
                     declared_limits({APP}))


def test_the_speed_reader_reads_nothing_outside_the_run(tmp_path):
    (tmp_path / "jobs").mkdir()
    with pytest.raises(ValueError, match="not below"):
        observed_speed(tmp_path, {}, {"../../etc": APP})
    assert observed_speed(tmp_path, {}, {"fine": APP}) == {}
