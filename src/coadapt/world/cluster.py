"""The cluster: its nodes (each with its slots and a kind) and the network between them.

Node identity is kept end to end (an allocation is a slot count per node, in
node order), so a later kind of node can change how a job runs on it. Today
every node is of one kind, ``default``; kinds are parsed, printed and carried,
nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby


@dataclass(frozen=True)
class Network:
    """The links between nodes of a simulated CPU cluster, for a ring all-reduce.

    Declared (the default): 2 (K-1) hops of ``latency_us`` and 2 (K-1)/K of
    the gradient through ``bandwidth_gbps`` per link (the ring's bottleneck is
    the slowest link, the network). Measured (``source`` names the network
    calibration, ``world.profiles.network``): the same form fitted to real gloo
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


DEFAULT_KIND = "default"
_KIND = r"[A-Za-z][A-Za-z0-9_.-]*"
_GROUP = re.compile(rf"(?:(\d+)x)?(\d+)(?::({_KIND}))?")


@dataclass(frozen=True)
class Node:
    """One node: its position in every allocation, its slots and its kind."""

    index: int
    slots: int
    kind: str = DEFAULT_KIND


def nodes_of(slots: Iterable[int], kind: str = DEFAULT_KIND, start: int = 0) -> tuple[Node, ...]:
    """Nodes of one ``kind`` with these slot counts, indexed from ``start``."""
    return tuple(Node(start + i, int(s), kind) for i, s in enumerate(slots))


def packed_placement(replicas: int, per_node: int) -> tuple[int, ...]:
    """``replicas`` packed onto full nodes of ``per_node`` slots (the placement a
    static job gets on an empty cluster), empty nodes left out."""
    full, rest = divmod(replicas, per_node)
    return (per_node,) * full + ((rest,) if rest else ())


class NodeSlots:
    """Slot arithmetic over ``nodes``, shared by the cluster and the policies' snapshot."""

    nodes: tuple[Node, ...]

    @property
    def slots_per_node(self) -> tuple[int, ...]:
        return tuple(n.slots for n in self.nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def total_slots(self) -> int:
        return sum(n.slots for n in self.nodes)

    @property
    def max_slots_per_node(self) -> int:
        """The most slots one node has: what a job packed on one node can get."""
        return max(n.slots for n in self.nodes)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of node present, in node order."""
        return tuple(dict.fromkeys(n.kind for n in self.nodes))

    def of_kind(self, kind: str) -> tuple[Node, ...]:
        """The nodes of ``kind``, in node order."""
        return tuple(n for n in self.nodes if n.kind == kind)

    def slots_of_kind(self, kind: str) -> int:
        return sum(n.slots for n in self.nodes if n.kind == kind)

    def kind_of(self, allocation: tuple[int, ...]) -> str | None:
        """The kind of the nodes an allocation uses (None: no slots); a job runs
        on one kind at a time, so a mixed allocation is an error."""
        used = {n.kind for n, a in zip(self.nodes, allocation, strict=False) if a}
        if len(used) > 1:
            raise ValueError(f"allocation {allocation} spans kinds {sorted(used)}; "
                             "a job runs on one kind at a time")
        return used.pop() if used else None


@dataclass(frozen=True)
class ClusterSpec(NodeSlots):
    """The nodes and the network between them.

    ``nodes`` may also be given as plain slot counts (``ClusterSpec((4, 4, 2))``),
    which makes nodes of the default kind: the constructor of old."""

    nodes: tuple[Node, ...]
    network: Network = field(default_factory=Network)

    def __post_init__(self) -> None:
        nodes = tuple(n if isinstance(n, Node) else Node(i, int(n))
                      for i, n in enumerate(self.nodes))
        object.__setattr__(self, "nodes", nodes)
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        for i, n in enumerate(nodes):
            if n.index != i or n.slots < 1 or not re.fullmatch(_KIND, n.kind):
                raise ValueError(f"cluster node {i}: {n} (nodes are indexed 0.. in order, "
                                 "have >= 1 slot and a kind that is a name)")

    def __str__(self) -> str:
        """``8x2`` or ``4,4,2`` as ever; with a kind other than the default, groups
        of equal consecutive nodes such as ``4x2:native,4x2:legacy``."""
        if self.kinds == (DEFAULT_KIND,):
            per = set(self.slots_per_node)
            if len(per) == 1:
                return f"{self.num_nodes}x{per.pop()}"
            return ",".join(map(str, self.slots_per_node))
        groups = groupby(self.nodes, key=lambda n: (n.slots, n.kind))
        return ",".join(f"{len(list(same))}x{slots}" + ("" if kind == DEFAULT_KIND else f":{kind}")
                        for (slots, kind), same in groups)

    @classmethod
    def parse(cls, text: str, network: Network | None = None) -> ClusterSpec:
        """``16x4`` (16 nodes of 4 slots), ``4,4,2`` (slots per node), or groups
        of either with an optional kind each: ``4x2:native,4x2:legacy``,
        ``2x4:fast`` (no kind: ``default``)."""
        net = network or Network()
        text = text.strip()
        nodes: list[Node] = []
        for part in text.split(","):
            m = _GROUP.fullmatch(part)
            if m is None:
                raise ValueError(f"--cluster {text!r}: expected NODESxSLOTS (e.g. 16x4) or a "
                                 "list like 4,4,2, each optionally :KIND (e.g. 4x2:fast,4x2)")
            count = int(m.group(1)) if m.group(1) is not None else 1
            per = int(m.group(2))
            if count < 1 or per < 1:
                raise ValueError(f"--cluster {text!r}: nodes and slots must be >= 1"
                                 if m.group(1) is not None else
                                 f"--cluster {text!r}: every node needs at least 1 slot")
            nodes += nodes_of([per] * count, m.group(3) or DEFAULT_KIND, start=len(nodes))
        return cls(tuple(nodes), net)
