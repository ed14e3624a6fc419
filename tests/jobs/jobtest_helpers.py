"""Helpers for the job tests: real worker groups at tiny settings (few steps, low
targets) on the small MLP job, and waits for events to appear."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coadapt.eventlog import read_events

if TYPE_CHECKING:
    from coadapt.jobs.group import Group

JOB = "mlp-mnist1d"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def events_of(path: Path, kind: str | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [e for e in read_events(path) if kind is None or e["kind"] == kind]


def wait_for(pred: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def supervise_until(group: Group, pred: Callable[[], bool], timeout: float = 60.0,
                    what: str = "condition") -> None:
    """``wait_for`` that also polls the group (as a scheduler would), and fails at
    once, with the result, if the launch ends before ``pred`` holds."""

    def check() -> bool:
        res = group.poll()
        if pred():
            return True
        if res is not None:
            raise AssertionError(f"the group ended ({res}) before {what}")
        return False

    wait_for(check, timeout, what)


def worker_log(ckpt: Path, rank: int) -> str:
    path = ckpt / "logs" / f"worker-{rank}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def cli(*args: str, **kw: Any) -> subprocess.Popen[bytes]:
    """Start ``python -m coadapt.jobs ...`` (the same handlers as ``coadapt job``)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "coadapt.jobs", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
