"""Fixtures shared by the live-run tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs.live.test_live_runs import REPO, TINY


@pytest.fixture
def live():
    """Start ``coadapt live`` as a user would. A run the test leaves running
    (it failed or timed out) is stopped at teardown: SIGTERM, which stops
    every child, then SIGKILL; a failing test leaves no orphans."""
    started: list[subprocess.Popen] = []

    def start(wl: Path, out: Path, *extra: str, policy: str = "pollux") -> subprocess.Popen:
        cmd = [sys.executable, "-m", "coadapt.cli", "live", "--workload", str(wl), "--policy",
               policy, "--cluster", "1x2", "--interval", "3", "--out", str(out), "--no-compare",
               "--calibration", "profiles", "--no-status", *TINY, *extra]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
