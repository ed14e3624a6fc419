"""``coadapt live`` writes its prediction before the first job starts, and
judges the run against it (a real job at its real target: about a minute)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coadapt.eventlog import read_events

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")


def test_prediction_is_on_disk_before_the_first_job_and_the_run_is_judged(tmp_path):
    wl = tmp_path / "one.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\nmlp-0,0,mlp-mnist1d,1,32\n")
    out = tmp_path / "live"
    res = subprocess.run([sys.executable, "-m", "coadapt.cli", "live", "--workload", str(wl),
                          "--policy", "fixed", "--cluster", "1x2", "--interval", "5",
                          "--calibration", "profiles", "--out", str(out), "--no-status"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    pred = out / "prediction" / "fixed" / "events.jsonl"
    pred_header = next(iter(read_events(pred)))
    assert pred_header["mode"] == "simulate" and pred_header["run_kind"] == "prediction"
    first_start = json.loads((out / "fixed" / "jobs" / "mlp-0" / "job.json").read_text())[
        "first_start_wall"]
    assert pred.stat().st_mtime < first_start  # written before any worker ran
    header = next(iter(read_events(out / "fixed" / "events.jsonl")))
    assert header["prediction"]["digest"] == hashlib.sha256(pred.read_bytes()).hexdigest()
    assert isinstance(header["calibration"]["about"], str) and header["calibration"]["about"]
    for kind in ("prediction", "sim-measured", "replay"):
        summary = json.loads((out / "compare" / kind / "sim_vs_live.json").read_text())
        assert summary["policies"][0]["matched"] == 1, kind
    assert (out / "sim-measured" / "fixed" / "events.jsonl").exists()
    assert (out / "drift.csv").exists()
    assert "PREDICTION" in res.stdout and "DRIFT" in res.stdout
