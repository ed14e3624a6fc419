"""Faults of a live run: its executor killed outright (SIGKILL: no handler
runs), and a second live run into the same folder. Nothing may be left
running, the log must read back, the rerun must be refused, and --resume must
finish every job, verified."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from coadapt.eventlog import read_events
from coadapt.jobs.procs import pid_alive
from tests.runs.live.test_live_runs import (
    REPO,
    finish,
    progress_of,
    pytestmark,  # noqa: F401  (the same 2-core requirement)
    wait_for,
    worker_pids,
    workload,
)


def test_killed_executor_leaves_nothing_running_and_resume_finishes(tmp_path, live):
    wl = workload(tmp_path, ["x,0,cnn-mnist1d,1,32", "y,0,mlp-mnist1d,1,32"])
    out = tmp_path / "out"
    proc = live(wl, out, policy="fixed")
    run = out / "fixed"
    wait_for(lambda: min(progress_of(run / "jobs" / j) for j in "xy") > 20, what="progress")
    second = live(wl, out, policy="fixed")  # the same folder while the first runs
    code, _, err = finish(second, timeout=60)
    assert code == 2 and "in use by 'coadapt live'" in err, err
    pids = [p for j in "xy" for p in worker_pids(run / "jobs" / j)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=15,
             what="the workers to die with their executor")
    events = list(read_events(run / "events.jsonl"))  # reads back, with no end
    assert events[0]["kind"] == "header" and not any(e["kind"] == "end" for e in events)
    rerun = subprocess.run([sys.executable, "-m", "coadapt.cli", "live", "--workload", str(wl),
                            "--policy", "fixed", "--cluster", "1x2", "--out", str(out),
                            "--calibration", "profiles", "--no-compare", "--no-status"],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 2 and "--resume" in rerun.stderr, rerun.stderr
    time.sleep(1.0)
    resumed = subprocess.run([sys.executable, "-m", "coadapt.cli", "live", "--out", str(out),
                              "--resume", "--no-compare", "--no-status"], cwd=REPO,
                             capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    events = list(read_events(run / "events.jsonl"))
    done = {e["job"]: e for e in events if e["kind"] == "complete"}
    assert set(done) == {"x", "y"} and all(e["verified"] for e in done.values())
    assert sum(1 for e in events if e["kind"] == "header") == 1
    assert not any(pid_alive(p) for j in "xy" for p in worker_pids(run / "jobs" / j))
