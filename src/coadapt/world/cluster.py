"""The cluster: its nodes (each with its slots and a kind) and the network between them.

Node identity is kept end to end (an allocation is a slot count per node, in
node order), so a later kind of node can change how a job runs on it. Today
every node is of one kind, ``default``; kinds are parsed, printed and carried,
nothing more.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np


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
        if not 0 < self.bandwidth_gbps < math.inf or not 0 <= self.latency_us < math.inf:
            raise ValueError(f"network: bandwidth must be > 0 Gbit/s (--bandwidth) and latency "
                             f">= 0 us (--latency), both finite numbers "
                             f"(got {self.bandwidth_gbps}, {self.latency_us})")
        if not 0 <= self.overhead_us < math.inf or not 0 < self.efficiency <= 1.5:
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
MAX_NODES = 100_000
"""The most nodes a cluster may have (``--cluster``): beyond it, building a
placement or a round's snapshot takes longer than any run."""
MAX_SLOTS_PER_NODE = 1_024
"""The most slots one node may have."""
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


def allocation_matrix(allocs: Sequence[tuple[int, ...]], nodes: int) -> np.ndarray:
    """Allocations (each an entry per node) as the rows of an array, converted
    in C: a round at a thousand jobs on a thousand nodes has a million entries.
    Slot counts of 0-255 (every cluster here) take one byte each; anything else
    (a negative or non-integer entry from a faulty policy) is kept as given."""
    if not allocs:
        return np.zeros((0, nodes), dtype=np.int64)
    try:
        return np.frombuffer(b"".join(map(bytes, allocs)), dtype=np.uint8).reshape(-1, nodes)
    except (ValueError, TypeError):
        return np.array(allocs)


def as_array(alloc: tuple[int, ...]) -> np.ndarray:
    """One allocation as an array (read-only), converted as ``allocation_matrix`` does."""
    return allocation_matrix([alloc], len(alloc))[0]


def packed_placement(replicas: int, per_node: int) -> tuple[int, ...]:
    """``replicas`` packed onto full nodes of ``per_node`` slots (the placement a
    static job gets on an empty cluster), empty nodes left out."""
    full, rest = divmod(replicas, per_node)
    return (per_node,) * full + ((rest,) if rest else ())


class NodeSlots:
    """Slot arithmetic over ``nodes``, shared by the cluster and the policies' snapshot.
    The derived figures are computed once per object (``nodes`` never changes):
    a policy reads them per job, and at thousands of nodes each is a walk."""

    nodes: tuple[Node, ...]

    @functools.cached_property
    def slots_per_node(self) -> tuple[int, ...]:
        return tuple(n.slots for n in self.nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @functools.cached_property
    def total_slots(self) -> int:
        return sum(n.slots for n in self.nodes)

    @functools.cached_property
    def max_slots_per_node(self) -> int:
        """The most slots one node has: what a job packed on one node can get."""
        return max(n.slots for n in self.nodes)

    @functools.cached_property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of node present, in node order."""
        return tuple(dict.fromkeys(n.kind for n in self.nodes))

    def of_kind(self, kind: str) -> tuple[Node, ...]:
        """The nodes of ``kind``, in node order."""
        return tuple(n for n in self.nodes if n.kind == kind)

    def slots_of_kind(self, kind: str) -> int:
        return sum(n.slots for n in self.nodes if n.kind == kind)

    @property
    def max_job_slots(self) -> int:
        """The most slots one job can hold: a job runs on one kind at a time, so
        the largest kind's (on a cluster of one kind, all of them)."""
        return max(self.slots_of_kind(k) for k in self.kinds)

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
        if len(nodes) > MAX_NODES:
            raise ValueError(f"a cluster of {len(nodes)} nodes; at most {MAX_NODES:,}")
        for i, n in enumerate(nodes):
            if (n.index != i or not 1 <= n.slots <= MAX_SLOTS_PER_NODE
                    or not re.fullmatch(_KIND, n.kind)):
                raise ValueError(f"cluster node {i}: {n} (nodes are indexed 0.. in order, "
                                 f"have 1 to {MAX_SLOTS_PER_NODE} slots and a kind that is a name)")

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
        shown = text if len(text) <= 80 else text[:77] + "..."
        nodes: list[Node] = []
        for part in text.split(","):
            m = _GROUP.fullmatch(part)
            if m is None:
                raise ValueError(f"--cluster {shown!r}: expected NODESxSLOTS (e.g. 16x4) or a "
                                 "list like 4,4,2, each optionally :KIND (e.g. 4x2:fast,4x2)")
            count = _bounded(shown, m.group(1), MAX_NODES, "nodes") if m.group(1) is not None else 1
            per = _bounded(shown, m.group(2), MAX_SLOTS_PER_NODE, "slots per node")
            if count < 1 or per < 1:
                raise ValueError(f"--cluster {shown!r}: nodes and slots must be >= 1"
                                 if m.group(1) is not None else
                                 f"--cluster {shown!r}: every node needs at least 1 slot")
            if len(nodes) + count > MAX_NODES:
                raise ValueError(f"--cluster {shown!r}: {len(nodes) + count:,} nodes or more; "
                                 f"at most {MAX_NODES:,}")
            nodes += nodes_of([per] * count, m.group(3) or DEFAULT_KIND, start=len(nodes))
        return cls(tuple(nodes), net)


def _bounded(text: str, digits: str, most: int, what: str) -> int:
    """A count of ``--cluster``, refused above ``most`` (before any list is built)."""
    if len(digits.lstrip("0")) > len(str(most)) or int(digits) > most:
        raise ValueError(f"--cluster {text!r}: {digits[:20]}{'...' if len(digits) > 20 else ''} "
                         f"{what}; at most {most:,}")
    return int(digits)
