"""Live runs on emulated nodes (2x1, a namespace per node, shaped links):
ranks meet across namespaces, events say so, and nothing is left after a
normal end or a SIGKILL of the executor. Need CAP_NET_ADMIN (root)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_live_runs import TINY, wait_for, worker_pids, workload

from coadapt.backends.live.nodes import leftover_holders, missing_capability
from coadapt.eventlog import read_events
from coadapt.jobs.procs import pid_alive

REPO = Path(__file__).resolve().parents[3]
REASON = missing_capability()
pytestmark = [pytest.mark.skipif(REASON is not None, reason=f"emulated nodes: {REASON}"),
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")]


def live_emulated(wl: Path, out: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "coadapt.cli", "live", "--workload", str(wl), "--policy",
           "fixed", "--cluster", "2x1", "--network", "emulated", "--bandwidth", "1",
           "--interval", "3", "--out", str(out), "--no-compare", "--calibration", "profiles",
           "--no-status", *TINY, *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_job_across_two_emulated_nodes_runs_and_leaves_nothing(tmp_path):
    wl = workload(tmp_path, ["a,0,mlp-mnist1d,2,64"])
    before = set(leftover_holders())
    proc = live_emulated(wl, tmp_path / "out")
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert "measuring the emulated network first" in out
    spec = json.loads((tmp_path / "out" / "live.json").read_text())
    assert spec["network"] == "emulated" and spec["net_calibration"].endswith("network.json")
    job = tmp_path / "out" / "fixed" / "jobs" / "a"
    (start,) = [e for e in read_events(job / "events.jsonl") if e["kind"] == "start"]
    assert start["network"] == "emulated" and start["bandwidth_gbps"] == 1.0
    assert len(set(start["addresses"])) == 2  # one rank per node
    (header,) = [e for e in read_events(tmp_path / "out" / "fixed" / "events.jsonl")
                 if e["kind"] == "header"]
    assert "netcal" in header["network"] and "tbf" in json.dumps(header["live"]["qdiscs"])
    assert not any(pid_alive(p) for p in worker_pids(job))
    assert set(leftover_holders()) <= before


def test_sigkill_of_the_executor_leaves_no_process_or_namespace(tmp_path):
    cal = tmp_path / "network.json"
    cal.write_text(json.dumps({"format": 1, "kind": "network-calibration", "date": "t",
                               "machine": {}, "fits": [{
                                   "bandwidth_gbps": 1.0, "overhead_us": 0.0, "latency_us": 0.0,
                                   "effective_gbps": 0.93, "points": 7, "rel_rmse": 0.05,
                                   "max_rel_err": 0.1, "se_overhead_us": 0.0,
                                   "se_latency_us": 0.0, "se_effective_gbps": 0.01}]}))
    wl = workload(tmp_path, ["a,0,mlp-mnist1d,2,64"])
    before = set(leftover_holders())
    proc = live_emulated(wl, tmp_path / "out", "--target", "mlp-mnist1d=0.99",
                         "--net-calibration", str(cal))
    job = tmp_path / "out" / "fixed" / "jobs" / "a"
    pids = wait_for(lambda: (job / "events.jsonl").exists() and worker_pids(job), 120,
                    "the job's workers")
    holders = wait_for(lambda: sorted(set(leftover_holders()) - before), 10, "holders")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(pid_alive(p) for p in [*pids, *holders]):
        time.sleep(0.1)
    assert not any(pid_alive(p) for p in pids)
    assert not any(pid_alive(p) for p in holders)
