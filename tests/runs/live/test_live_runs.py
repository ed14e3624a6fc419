"""Live runs with real worker processes (tiny targets so each takes seconds).

Every test drives ``coadapt live`` as a user would (a subprocess, so that
signals reach it as they would from a terminal) and checks the event log, the
job folders and the process table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coadapt.eventlog import read_events
from coadapt.jobs.procs import pid_alive

REPO = Path(__file__).resolve().parents[3]
TINY = ["--target", "mlp-mnist1d=0.45", "--target", "cnn-mnist1d=0.6",
        "--eval-every", "mlp-mnist1d=20", "--eval-every", "cnn-mnist1d=20"]

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")


def workload(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\n" + "\n".join(rows) + "\n")
    return path


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def worker_pids(job_dir: Path) -> list[int]:
    pids = []
    for e in read_events(job_dir / "events.jsonl"):
        if e["kind"] in ("start", "restart"):
            pids.extend(e["pids"])
    return pids


def wait_for(pred, timeout: float = 60.0, what: str = "condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def progress_of(job_dir: Path) -> float:
    path = job_dir / "events.jsonl"
    if not path.exists():
        return 0.0
    obs = [e for e in read_events(path) if e["kind"] == "observation"]
    return obs[-1]["progress"] if obs else 0.0


def test_jobs_complete_verified_on_their_own_cores(tmp_path, live):
    wl = workload(tmp_path, ["a,0,mlp-mnist1d,1,32", "b,1,cnn-mnist1d,1,32",
                             "c,2,mlp-mnist1d,2,64"])
    code, out, err = finish(live(wl, tmp_path / "out"))
    assert code == 0, err
    assert "LIVE:" in out
    run = tmp_path / "out" / "pollux"
    events = list(read_events(run / "events.jsonl"))
    assert events[0]["mode"] == "live" and events[-1]["kind"] == "end"
    assert not events[-1]["interrupted"]
    done = [e for e in events if e["kind"] == "complete"]
    assert sorted(e["job"] for e in done) == ["a", "b", "c"]
    assert all(e["verified"] is True and e["simulated"] is False for e in done)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["completed"] == 3 and summary["simulated"] is False
    for name in "abc":
        d = run / "jobs" / name
        assert (d / "ckpt.pt").exists() and (d / "logs" / "worker-0.log").exists()
        # every launch was pinned to cores of the 1x2 cluster's node
        starts = [e for e in read_events(d / "events.jsonl") if e["kind"] in ("start", "restart")]
        assert starts and all(set(e["cores"]) <= set(events[0]["cores"]) for e in starts)
    assert all(e["used_slots"] <= 2 for e in events if e["kind"] == "round")
    assert all(not pid_alive(p) for n in "abc" for p in worker_pids(run / "jobs" / n))


def test_a_killed_worker_is_relaunched_from_its_checkpoint(tmp_path, live):
    wl = workload(tmp_path, ["k,0,cnn-mnist1d,2,64"])
    proc = live(wl, tmp_path / "out", policy="fixed")
    job = tmp_path / "out" / "fixed" / "jobs" / "k"
    wait_for(lambda: progress_of(job) > 70, what="progress past a checkpoint")
    victim = worker_pids(job)[-1]
    os.kill(victim, signal.SIGKILL)
    code, _, err = finish(proc)
    assert code == 0, err
    events = list(read_events(tmp_path / "out" / "fixed" / "events.jsonl"))
    kinds = [e["kind"] for e in events if e.get("job") == "k"]
    assert kinds.index("fail") < kinds.index("resume") < kinds.index("complete")
    fail = next(e for e in events if e["kind"] == "fail")
    assert not fail["fatal"]
    resume = next(e for e in events if e["kind"] == "resume")
    assert resume["lost_progress"] <= 20.0 + 2.0  # at most one validation interval (+ a step)
    assert next(e for e in events if e["kind"] == "complete")["verified"] is True
    assert not pid_alive(victim)


def test_ctrl_c_checkpoints_stops_everything_and_resume_finishes(tmp_path, live):
    wl = workload(tmp_path, ["x,0,cnn-mnist1d,1,32", "y,0,cnn-mnist1d,1,32",
                             "z,30,mlp-mnist1d,1,32"])
    out = tmp_path / "out"
    proc = live(wl, out, policy="fixed")
    run = out / "fixed"
    wait_for(lambda: min(progress_of(run / "jobs" / j) for j in "xy") > 30, what="progress")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc, timeout=90)
    assert code == 130, err
    events = list(read_events(run / "events.jsonl"))  # reads back
    assert events[-1]["kind"] == "end" and events[-1]["interrupted"] is True
    pids = [p for j in "xy" for p in worker_pids(run / "jobs" / j)]
    assert pids and not any(pid_alive(p) for p in pids)
    for j in "xy":  # each group checkpointed on the way out
        ck = [e for e in read_events(run / "jobs" / j / "events.jsonl") if e["kind"] == "checkpoint"]
        assert ck[-1]["reason"] == "preempted"
    t_cut = events[-1]["t"]
    time.sleep(3.0)
    resumed = subprocess.run([sys.executable, "-m", "coadapt.cli", "live", "--out", str(out), "--resume",
                              "--no-compare", "--no-status"], cwd=REPO, capture_output=True,
                             text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    events = list(read_events(run / "events.jsonl"))
    res = next(e for e in events if e["kind"] == "resume" and e["job"] is None)
    assert res["t"] == pytest.approx(t_cut) and res["downtime_s"] >= 3.0
    done = {e["job"]: e for e in events if e["kind"] == "complete"}
    assert set(done) == {"x", "y", "z"} and all(e["verified"] for e in done.values())
    # The downtime is in no JCT: the clock went on from where the log stopped.
    assert max(e["t"] for e in events) < events[-1]["wall_s"] + t_cut + 1.0
    assert done["z"]["jct"] < 60


def test_second_signal_kills_at_once(tmp_path, live):
    wl = workload(tmp_path, ["s,0,cnn-mnist1d,2,64"])
    proc = live(wl, tmp_path / "out", policy="fixed")
    job = tmp_path / "out" / "fixed" / "jobs" / "s"
    wait_for(lambda: progress_of(job) > 5, what="progress")
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    code, _, _ = finish(proc, timeout=30)
    assert code == 130
    events = list(read_events(tmp_path / "out" / "fixed" / "events.jsonl"))
    assert events[-1]["kind"] == "end" and events[-1]["interrupted"]
    assert not any(pid_alive(p) for p in worker_pids(job))
