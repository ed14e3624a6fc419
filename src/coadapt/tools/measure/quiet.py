"""How busy the machine is with *other* work, measured around each timing run.

A step-time median is only as good as the machine was quiet while it was
taken. The kernel's per-CPU accounting (``/proc/stat``) gives the CPU-seconds
everybody used during a run; ``os.times()`` gives what this process and its
reaped children (the worker group) used. The difference, divided by the run's
wall time, is how many cores other processes (and the hypervisor, via
``steal``) took on average: ``others_cores``. It is recorded per run, used to
leave contended runs out of medians, and a bounded wait for quiet precedes
each run.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSnapshot:
    """Machine-wide busy CPU-seconds and this process tree's CPU-seconds, at one instant."""

    wall: float
    busy: float | None  # None where /proc/stat is unavailable
    ours: float

    @classmethod
    def take(cls) -> CpuSnapshot:
        t = os.times()
        ours = t.user + t.system + t.children_user + t.children_system
        return cls(time.monotonic(), _busy_seconds(), ours)


def _busy_seconds() -> float | None:
    """user+nice+system+irq+softirq+steal over all CPUs, in seconds."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    v = [int(x) for x in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
    return (user + nice + system + irq + softirq + steal) / _HZ


def others_cores(before: CpuSnapshot, after: CpuSnapshot) -> float | None:
    """Average number of cores used by other processes between two snapshots."""
    if before.busy is None or after.busy is None:
        return None
    wall = max(after.wall - before.wall, 1e-3)
    foreign = (after.busy - before.busy) - (after.ours - before.ours)
    return max(foreign / wall, 0.0)


def wait_for_quiet(threshold: float = 0.5, max_wait: float = 20.0,
                   sample: float = 1.0) -> float | None:
    """Wait (at most ``max_wait`` s) until others use < ``threshold`` cores; return last load."""
    deadline = time.monotonic() + max_wait
    while True:
        a = CpuSnapshot.take()
        time.sleep(sample)
        load = others_cores(a, CpuSnapshot.take())
        if load is None or load < threshold or time.monotonic() >= deadline:
            return load
        log.debug("machine busy (others use %.2f cores); waiting", load)
