"""Emulated nodes: real namespaces, links and tc, and nothing left behind.

These need CAP_NET_ADMIN (root); without it they skip with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coadapt.backends.live import nodes as nodes_mod
from coadapt.backends.live.nodes import EmulatedNodes, NetworkUnavailable, leftover_holders, tbf_args
from coadapt.jobs.netns import enter_netns, free_port_in
from coadapt.jobs.procs import pid_alive

REASON = nodes_mod.missing_capability()
needs_net = pytest.mark.skipif(REASON is not None, reason=f"emulated nodes: {REASON}")
REPO = Path(__file__).resolve().parents[3]


def links_here() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def test_tbf_burst_covers_a_segment_and_a_millisecond():
    args = tbf_args(0.1)
    assert args[:3] == ["tbf", "rate", "100000000bit"]
    assert int(args[4]) == 64 * 1024
    assert int(tbf_args(10)[4]) == 10 * 10**9 // 8 // 1000


def test_missing_tools_and_capabilities_are_named(monkeypatch):
    monkeypatch.setattr(nodes_mod.shutil, "which", lambda t: None if t == "tc" else "/bin/x")
    assert "missing tools: tc" in nodes_mod.missing_capability()
    monkeypatch.setattr(nodes_mod.shutil, "which", lambda t: "/bin/x")
    monkeypatch.setattr(nodes_mod, "Path", lambda p: _Status("CapEff:\t0000000000000000\n"))
    reason = nodes_mod.missing_capability()
    assert "CAP_NET_ADMIN" in reason and "run as root" in reason
    with pytest.raises(NetworkUnavailable, match="CAP_NET_ADMIN"):
        nodes_mod.require_capability()


class _Status:
    def __init__(self, text: str) -> None:
        self.text = text

    def read_text(self) -> str:
        return self.text


@needs_net
def test_nodes_are_linked_shaped_and_gone_after_close():
    before = links_here()
    with EmulatedNodes(3, 0.5) as net:
        holders = [n.pid for n in net.nodes]
        assert set(holders) <= set(leftover_holders())
        q = net.qdiscs()
        assert all("tbf" in v and "500Mbit" in v for v in q.values()), q
        # A TCP connection from node 0 to node 2's address, through the switch.
        port = free_port_in(net.nodes[2].ns_path)
        server = subprocess.Popen(
            ["nsenter", f"--net={net.nodes[2].ns_path}", sys.executable, "-c", textwrap.dedent(f"""
                import socket
                s = socket.create_server(("{net.nodes[2].address}", {port}))
                c, _ = s.accept(); c.sendall(b"hello"); c.close()""")])
        got = _connect_from(net.nodes[0].ns_path, net.nodes[2].address, port)
        server.wait(timeout=10)
        assert got == b"hello"
        net.shape(None)
        assert all("tbf" not in v for v in net.qdiscs().values())
        assert links_here() == before  # nothing was made in this namespace
    time.sleep(0.1)
    assert not any(pid_alive(p) for p in holders)
    assert links_here() == before


def _connect_from(ns_path: str, address: str, port: int) -> bytes:
    import socket
    import threading

    out: list[bytes] = []

    def go() -> None:
        enter_netns(ns_path)
        for _ in range(50):
            try:
                with socket.create_connection((address, port), timeout=2) as s:
                    out.append(s.recv(16))
                    return
            except OSError:
                time.sleep(0.05)

    th = threading.Thread(target=go)
    th.start()
    th.join()
    return out[0] if out else b""


@needs_net
def test_holders_die_with_a_killed_parent():
    code = ("import sys, time\nfrom coadapt.backends.live.nodes import EmulatedNodes\n"
            "n = EmulatedNodes(2, 1.0).start()\n"
            "print(' '.join(str(x.pid) for x in n.nodes), flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=REPO)
    pids = [int(x) for x in proc.stdout.readline().split()]
    assert pids and all(pid_alive(p) for p in pids)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(pid_alive(p) for p in pids)
    assert not set(pids) & set(leftover_holders())


@needs_net
def test_a_gloo_allreduce_across_nodes_is_paced_by_the_link(tmp_path):
    from coadapt.tools.netbench.bench import BenchPlan, fit_table, run_netbench

    # 0.1 Gbps, not 0.2: at 0.2 the ranks' CPU use here was 0.36-0.45 of the cores,
    # too near CPU_BOUND_UTIL (0.5) to be stable; at 0.1 it was 0.13-0.18.
    plan = BenchPlan(ks=(2,), bandwidths=(0.1,), sizes=(("4MiB", 4 * 2**20),), reps=3)
    points = run_netbench(plan, tmp_path)
    (row,) = points.to_dicts()
    wire = 4 * 2**20 * 8 / 0.1e9  # one ring hop each way at K=2: 336 ms
    assert 0.9 * wire < row["median_s"] < 1.6 * wire
    assert not row["cpu_bound"]
    _, table = fit_table(points, 50.0)
    assert table["declared_err"][0] == pytest.approx((table["declared_s"][0] - row["median_s"])
                                                     / row["median_s"])
