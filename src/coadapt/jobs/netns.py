"""Running a process in another network namespace (an emulated node).

A worker of a job placed on emulated node i must run in that node's network
namespace, so its gloo traffic to a rank on another node crosses the node's
shaped link (``coadapt.backends.live.nodes``). The switch happens in the forked child
before exec (``setns``), like the core pinning in ``jobs.procs``; this module
only knows a namespace by its ``/proc/PID/ns/net`` path, not how it was made.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@dataclass(frozen=True)
class Endpoint:
    """Where one rank runs: a network namespace (``ns_path``) and the address
    its node is reached at on ``iface`` (gloo binds there)."""

    ns_path: str
    address: str
    iface: str = "eth0"


def enter_netns(ns_path: str) -> None:
    """Move the calling thread into the network namespace at ``ns_path``
    (OSError when it is gone or this process lacks CAP_SYS_ADMIN)."""
    if _LIBC is None:
        raise OSError("network namespaces need Linux")
    fd = os.open(ns_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _LIBC.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({ns_path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def free_port_in(ns_path: str) -> int:
    """A TCP port free a moment ago in namespace ``ns_path``: the rendezvous
    store of rank 0 binds it there, not in the caller's."""
    found: list[int | BaseException] = []

    def probe() -> None:  # a throwaway thread: setns changes only the calling thread
        try:
            enter_netns(ns_path)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("0.0.0.0", 0))
                found.append(int(s.getsockname()[1]))
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller)
            found.append(exc)

    th = threading.Thread(target=probe, name="netns-port")
    th.start()
    th.join()
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]
