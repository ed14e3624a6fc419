"""Slots are real cores: which cores a live cluster uses and who holds them.

A cluster of N nodes x S slots maps node i to S cores of this machine (its
usable cores, ``os.sched_getaffinity``). A job's workers are pinned to the
cores it holds; it claims them only when their previous holder's processes
have exited, so two jobs never share a core.
"""

from __future__ import annotations

import os

from coadapt.world.cluster import ClusterSpec


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check_cluster(cluster: ClusterSpec, cores: list[int] | None = None) -> None:
    """ValueError when the cluster needs more cores than this machine has."""
    cores = usable_cores() if cores is None else cores
    if cluster.total_slots > len(cores):
        raise ValueError(
            f"--cluster {cluster}: needs {cluster.total_slots} cores, this machine has "
            f"{len(cores)} usable ({','.join(map(str, cores))}); live slots are real cores, "
            "use a smaller cluster (e.g. 1x2) or 'coadapt simulate' for larger ones")


class CorePool:
    def __init__(self, cluster: ClusterSpec, cores: list[int] | None = None) -> None:
        cores = usable_cores() if cores is None else cores
        check_cluster(cluster, cores)
        self.nodes: list[list[int]] = []
        i = 0
        for slots in cluster.slots_per_node:
            self.nodes.append(cores[i:i + slots])
            i += slots
        self.owner: dict[int, str] = {}

    def claim(self, job: str, allocation: tuple[int, ...]) -> tuple[int, ...] | None:
        """Cores for ``allocation`` (slots per node), or None while any node
        lacks free cores; all or nothing."""
        picked: list[int] = []
        for node, want in zip(self.nodes, allocation, strict=True):
            free = [c for c in node if c not in self.owner]
            if len(free) < want:
                return None
            picked.extend(free[:want])
        for c in picked:
            self.owner[c] = job
        return tuple(picked)

    def node_of(self, core: int) -> int:
        """The node whose slot ``core`` is."""
        return next(i for i, node in enumerate(self.nodes) if core in node)

    def release(self, job: str) -> None:
        for c in [c for c, who in self.owner.items() if who == job]:
            del self.owner[c]

    def held(self, job: str) -> tuple[int, ...]:
        return tuple(sorted(c for c, who in self.owner.items() if who == job))
