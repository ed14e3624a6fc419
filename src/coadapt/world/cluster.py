"""Cluster shape (nodes x slots per node) and the network between its nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Network:
    """The links between nodes of a simulated CPU cluster, for a ring all-reduce.

    Declared (the default): 2 (K-1) hops of ``latency_us`` and 2 (K-1)/K of
    the gradient through ``bandwidth_gbps`` per link (the ring's bottleneck is
    the slowest link, the network). Measured (``source`` names the network
    calibration, ``profiles.network``): the same form fitted to real gloo
    all-reduces between emulated nodes, with a per-all-reduce ``overhead_us``
    and an ``efficiency`` (achieved / nominal bandwidth); its times include
    gloo's own work on the hosts, so the simulator adds none on top.
    """

    bandwidth_gbps: float = 10.0
    latency_us: float = 50.0
    overhead_us: float = 0.0
    efficiency: float = 1.0
    source: str = "declared"

    def __post_init__(self) -> None:
        if not self.bandwidth_gbps > 0 or not self.latency_us >= 0:
            raise ValueError(f"network: bandwidth must be > 0 Gbit/s and latency >= 0 us "
                             f"(got {self.bandwidth_gbps}, {self.latency_us})")
        if not self.overhead_us >= 0 or not 0 < self.efficiency <= 1.5:
            raise ValueError(f"network: overhead must be >= 0 us and efficiency in (0, 1.5] "
                             f"(got {self.overhead_us}, {self.efficiency})")

    @property
    def measured(self) -> bool:
        return self.source != "declared"

    def allreduce(self, grad_bytes: float, replicas: int) -> float:
        """Seconds on the wire for one ring all-reduce over ``replicas``."""
        k = replicas
        if k <= 1:
            return 0.0
        volume = 2.0 * (k - 1) / k * grad_bytes
        return ((self.overhead_us + 2.0 * (k - 1) * self.latency_us) * 1e-6
                + volume * 8.0 / (self.efficiency * self.bandwidth_gbps * 1e9))

    def __str__(self) -> str:
        if not self.measured:
            return f"{self.bandwidth_gbps:g} Gbit/s, {self.latency_us:g} us"
        return (f"{self.bandwidth_gbps:g} Gbit/s measured ({self.source}: "
                f"{self.efficiency:.2f} of nominal, {self.latency_us:.0f} us/hop, "
                f"{self.overhead_us:.0f} us/all-reduce)")


@dataclass(frozen=True)
class ClusterSpec:
    slots_per_node: tuple[int, ...]
    network: Network = field(default_factory=Network)

    @property
    def total_slots(self) -> int:
        return sum(self.slots_per_node)

    @property
    def num_nodes(self) -> int:
        return len(self.slots_per_node)

    def __str__(self) -> str:
        per = set(self.slots_per_node)
        if len(per) == 1:
            return f"{self.num_nodes}x{per.pop()}"
        return ",".join(map(str, self.slots_per_node))

    @classmethod
    def parse(cls, text: str, network: Network | None = None) -> ClusterSpec:
        """``16x4`` (16 nodes of 4 slots) or ``4,4,2`` (slots per node)."""
        net = network or Network()
        text = text.strip()
        m = re.fullmatch(r"(\d+)x(\d+)", text)
        if m:
            nodes, per = int(m.group(1)), int(m.group(2))
            if nodes < 1 or per < 1:
                raise ValueError(f"--cluster {text!r}: nodes and slots must be >= 1")
            return cls((per,) * nodes, net)
        if re.fullmatch(r"\d+(,\d+)*", text):
            slots = tuple(int(x) for x in text.split(","))
            if min(slots) < 1:
                raise ValueError(f"--cluster {text!r}: every node needs at least 1 slot")
            return cls(slots, net)
        raise ValueError(f"--cluster {text!r}: expected NODESxSLOTS (e.g. 16x4) or a list like 4,4,2")
