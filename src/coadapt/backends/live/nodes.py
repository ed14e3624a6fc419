"""Emulated nodes on one machine: network namespaces joined by a switch, each
node's link shaped to the cluster's bandwidth.

Node i is a network namespace with ``eth0`` at 10.213.0.(i+1)/24, a veth link
to a bridge (a non-blocking switch) in a namespace of its own. Both directions
of each link are shaped with ``tbf`` (a node's egress on its ``eth0``, its
ingress on the switch's port), so a ring all-reduce between nodes crosses a
real TCP stack at the set rate. ``netem`` is not available, so no latency is
added: latency is whatever the path has, measured by ``coadapt netbench``.

Nothing leaks: every namespace is held by a small holder process (``unshare
--net``) that dies with its parent (PDEATHSIG) or on ``close()``; a namespace
vanishes with its last process, and its veth ends with it. No link is ever
created in the caller's namespace and no namespace is named, so there is
nothing else to remove. ``coadapt net cleanup`` kills holders that an earlier
run left (their command line carries ``HOLDER_MARK``).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from coadapt.jobs.netns import Endpoint
from coadapt.jobs.procs import children_of, parent_of, pid_alive, set_pdeathsig

log = logging.getLogger(__name__)

SUBNET = "10.213.0"  # used only inside the namespaces made here
IFACE = "eth0"
HOLDER_MARK = "coadapt-netns-holder"
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
TOOLS = ("unshare", "nsenter", "ip", "tc")
_HOLDER = ("import os, signal, sys\n"
           "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
           "signal.signal(signal.SIGALRM, lambda *a: None)\n"
           "ppid = os.getppid()\n"
           "while os.getppid() == ppid:\n"
           "    signal.alarm(1); signal.pause()\n")


class NetworkUnavailable(RuntimeError):
    """This process cannot make emulated nodes; the message says what is missing."""


def missing_capability() -> str | None:
    """What stops this process from making emulated nodes, or None."""
    if not sys.platform.startswith("linux"):
        return "emulated nodes need Linux network namespaces"
    lacking = [t for t in TOOLS if shutil.which(t) is None]
    if lacking:
        return f"missing tools: {', '.join(lacking)} (Debian: apt install iproute2 util-linux)"
    try:
        caps = int(next(line.split()[1] for line in Path("/proc/self/status").read_text()
                        .splitlines() if line.startswith("CapEff:")), 16)
    except (OSError, StopIteration, ValueError):
        return "cannot read this process's capabilities from /proc/self/status"
    need = [name for bit, name in ((CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
            if not caps >> bit & 1]
    if need:
        return (f"this process lacks {' and '.join(need)} (network namespaces, links and tc "
                "need them): run as root, or without --network emulated")
    return None


def require_capability() -> None:
    reason = missing_capability()
    if reason is not None:
        raise NetworkUnavailable(reason)


def tbf_args(gbps: float) -> list[str]:
    """A token bucket at ``gbps``: burst >= 64 KiB (a GSO segment) and >= 1 ms
    of traffic; a 50 ms queue, so TCP sees a real bottleneck, not drops."""
    rate = int(gbps * 1e9)
    burst = max(64 * 1024, rate // 8 // 1000)
    return ["tbf", "rate", f"{rate}bit", "burst", str(burst), "latency", "50ms"]


@dataclass(frozen=True)
class Node:
    index: int
    pid: int  # the holder of its namespace

    @property
    def ns_path(self) -> str:
        return f"/proc/{self.pid}/ns/net"

    @property
    def address(self) -> str:
        return f"{SUBNET}.{self.index + 1}"

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.ns_path, self.address, IFACE)


class EmulatedNodes:
    """``count`` nodes behind one switch; ``bandwidth_gbps`` None leaves links
    unshaped. A context manager: leaving it (normally or by an exception)
    removes everything. The thread that enters must outlive the nodes (the
    holders' PDEATHSIG fires when it exits)."""

    def __init__(self, count: int, bandwidth_gbps: float | None = None) -> None:
        if count < 1:
            raise ValueError(f"emulated nodes: need at least 1 node (got {count})")
        if bandwidth_gbps is not None and not bandwidth_gbps > 0:
            raise ValueError(f"emulated nodes: bandwidth must be > 0 Gbit/s (got {bandwidth_gbps})")
        self.count = count
        self.bandwidth_gbps = bandwidth_gbps
        self.nodes: list[Node] = []
        self._switch: subprocess.Popen[bytes] | None = None
        self._holders: list[subprocess.Popen[bytes]] = []

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> EmulatedNodes:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> EmulatedNodes:
        require_capability()
        try:
            self._switch = self._hold()
            for i in range(self.count):
                self._holders.append(self._hold())
                self.nodes.append(Node(i, self._holders[-1].pid))
            self._wire()
            self.shape(self.bandwidth_gbps)
        except BaseException:
            self.close()
            raise
        log.info("emulated %d nodes (%s), holders %s", self.count, self.describe(),
                 [h.pid for h in self._holders])
        return self

    def close(self) -> None:
        """Kill every holder (and so every namespace and link); idempotent."""
        procs = [*self._holders, *([self._switch] if self._switch is not None else [])]
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("netns holder %d not reaped 5 s after SIGKILL", p.pid)
        self._holders, self._switch, self.nodes = [], None, []

    def describe(self) -> str:
        bw = "unshaped" if self.bandwidth_gbps is None else f"{self.bandwidth_gbps:g} Gbit/s"
        return f"emulated, {bw} per node link"

    # ------------------------------------------------------------ links
    def shape(self, bandwidth_gbps: float | None) -> None:
        """Set every node link to ``bandwidth_gbps`` both ways (None: unshaped)."""
        assert self._switch is not None
        for node in self.nodes:
            for pid, dev in ((node.pid, IFACE), (self._switch.pid, f"p{node.index}")):
                if bandwidth_gbps is None:
                    self._ip(pid, ["tc", "qdisc", "del", "dev", dev, "root"], check=False)
                else:
                    self._ip(pid, ["tc", "qdisc", "replace", "dev", dev, "root",
                                   *tbf_args(bandwidth_gbps)])
        self.bandwidth_gbps = bandwidth_gbps

    def qdiscs(self) -> dict[str, str]:
        """What ``tc`` reports on each node's link (for the record and tests)."""
        return {f"node{n.index}": self._ip(n.pid, ["tc", "qdisc", "show", "dev", IFACE]).strip()
                for n in self.nodes}

    def _wire(self) -> None:
        assert self._switch is not None
        sw = self._switch.pid
        self._ip(sw, ["ip", "link", "add", "br0", "type", "bridge"])
        self._ip(sw, ["ip", "link", "set", "br0", "up"])
        for node in self.nodes:
            i = node.index
            self._ip(sw, ["ip", "link", "add", f"p{i}", "type", "veth", "peer", "name", f"n{i}"])
            self._ip(sw, ["ip", "link", "set", f"n{i}", "netns", str(node.pid)])
            self._ip(sw, ["ip", "link", "set", f"p{i}", "master", "br0", "up"])
            self._ip(node.pid, ["ip", "link", "set", f"n{i}", "name", IFACE])
            self._ip(node.pid, ["ip", "addr", "add", f"{node.address}/24", "dev", IFACE])
            self._ip(node.pid, ["ip", "link", "set", IFACE, "up"])
            self._ip(node.pid, ["ip", "link", "set", "lo", "up"])

    @staticmethod
    def _ip(pid: int, argv: list[str], check: bool = True) -> str:
        res = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", *argv],
                             capture_output=True, text=True, check=False)
        if check and res.returncode != 0:
            raise NetworkUnavailable(f"{' '.join(argv)} (in the namespace of pid {pid}) failed: "
                                     f"{res.stderr.strip() or res.returncode}")
        return res.stdout

    @staticmethod
    def _hold() -> subprocess.Popen[bytes]:
        """A holder process in a new network namespace, dying with this thread."""
        own = os.readlink("/proc/self/ns/net")
        p = subprocess.Popen(["unshare", "--net", "--", sys.executable, "-c", _HOLDER, HOLDER_MARK],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, preexec_fn=lambda: set_pdeathsig(signal.SIGKILL),
                             start_new_session=True)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if p.poll() is not None:
                err = p.stderr.read().decode().strip() if p.stderr else ""
                raise NetworkUnavailable(f"unshare --net failed: {err or p.returncode}")
            try:
                if os.readlink(f"/proc/{p.pid}/ns/net") != own:
                    return p
            except OSError:
                pass
            time.sleep(0.005)
        p.kill()
        p.wait()
        raise NetworkUnavailable("unshare --net: no new namespace after 10 s")


def leftover_holders() -> list[int]:
    """Holder processes of emulated nodes whose run is gone (or still going)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if HOLDER_MARK.encode() in argv and pid_alive(int(entry.name)):
            out.append(int(entry.name))
    return sorted(out)


def cleanup(include_running: bool = False) -> list[int]:
    """Kill holders left by runs that died without their PDEATHSIG (e.g. a
    holder re-parented by a subreaper); with ``include_running`` also those of
    runs still going. Returns the pids killed."""
    killed = []
    for pid in leftover_holders():
        parent = parent_of(pid)
        if parent is None:
            continue
        orphan = parent == 1 or not pid_alive(parent)
        if orphan or include_running:
            for child in children_of(pid):
                os.kill(child, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed
