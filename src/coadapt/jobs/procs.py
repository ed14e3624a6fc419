"""Process plumbing so a worker group never leaves orphans.

Linux: each worker gets PR_SET_PDEATHSIG=SIGKILL in the forked child before exec
(no window where the parent can die unnoticed), and a watchdog thread that exits
if the parent pid changes (covers a parent that died before prctl, and other
platforms). SIGTERM is blocked across the exec so a stop request that arrives
before the worker installed its handler stays pending instead of killing it.
A worker can also be pinned to one CPU core (``os.sched_setaffinity`` in the
same pre-exec hook), so from interpreter start-up on it runs only on that core,
and join a cgroup there (an emulated node kind's CPU quota), so not one
instruction of it runs outside the quota.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from coadapt.jobs.netns import enter_netns

PR_SET_PDEATHSIG = 1


def set_pdeathsig(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent thread dies."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def can_pin() -> bool:
    """Whether this platform can pin a process to cores (Linux)."""
    return hasattr(os, "sched_setaffinity")


def join_cgroup(cgroup: str) -> None:
    """Move this process into the cgroup directory ``cgroup`` (v1 or v2: both
    have ``cgroup.procs``). Plain os calls: it runs in a forked child."""
    fd = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


def worker_preexec(core: int | None = None, netns: str | None = None,
                   cgroup: str | None = None) -> Callable[[], None]:
    """The Popen ``preexec_fn`` of a worker (runs in the forked child before exec):
    block SIGTERM across the exec, die with the parent, run only on ``core``,
    inside the network namespace ``netns`` (an emulated node) and the cgroup
    ``cgroup`` (its kind's CPU quota) when given."""

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        set_pdeathsig(signal.SIGKILL)
        if core is not None:
            os.sched_setaffinity(0, {core})
        if cgroup is not None:
            join_cgroup(cgroup)
        if netns is not None:
            enter_netns(netns)

    return preexec


def helper_preexec(cores: Collection[int] | None = None,
                   cgroup: str | None = None) -> Callable[[], None]:
    """The ``preexec_fn`` of a short helper of a job (the verifier): die with the
    parent, and stay on the job's ``cores`` (and in its ``cgroup``) so it does
    not disturb other jobs."""

    def preexec() -> None:
        set_pdeathsig(signal.SIGKILL)
        if cores:
            os.sched_setaffinity(0, set(cores))
        if cgroup is not None:
            join_cgroup(cgroup)

    return preexec


def start_parent_watchdog(parent_pid: int, interval: float = 0.5) -> threading.Thread:
    """Daemon thread: hard-exit this process once ``parent_pid`` is no longer our parent."""

    def watch() -> None:
        ev = threading.Event()
        while not ev.wait(interval):
            if os.getppid() != parent_pid:
                os._exit(70)

    if os.getppid() != parent_pid:
        os._exit(70)
    th = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    th.start()
    return th


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the rendezvous store binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    return raw[raw.rindex(")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None when it is gone:
    with the pid, an identity that survives pid reuse."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid``, or None when it is gone."""
    fields = _stat_fields(pid)
    return int(fields[1]) if fields is not None else None


def children_of(pid: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``pid``, from a /proc scan."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry.name))
    return sorted(out)
