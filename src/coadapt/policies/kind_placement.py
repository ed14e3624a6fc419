"""Placing configurations (kind, nodes, slots) on the nodes of a mixed cluster.

The kind-aware policies choose a configuration per job: a kind of node, how
many nodes and how many slots. Where exactly those slots are is a separate,
replaceable step (as ``placement.Placer`` is for slot counts), which a
``ConfigPlacer`` does: every allocation it returns uses nodes of the chosen
kind only, since a job runs on one kind at a time. Two strategies:
``WholeNodes`` (Sia's: multi-node configurations on whole free nodes,
single-node ones best fit) and ``FirstFit`` (Gavel's: a gang takes free slots
node by node in node order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from coadapt.policies.base import JobView, Snapshot
from coadapt.policies.placement import Placement
from coadapt.world.cluster import Node, as_array


@dataclass(frozen=True, order=True)
class Config:
    """A job's configuration: ``slots`` slots on ``nodes`` nodes of ``kind``
    (``nodes`` 0: as many as the placement needs, for a gang scheduler)."""

    kind: str
    nodes: int
    slots: int


def config_of(allocation: tuple[int, ...], nodes: tuple[Node, ...]) -> Config | None:
    """The configuration an allocation realizes (None: no slots, or it spans
    kinds, which no policy here produces)."""
    used = np.flatnonzero(as_array(allocation)[: len(nodes)]) if allocation else ()
    kinds = {nodes[i].kind for i in used}
    if len(kinds) != 1:
        return None
    return Config(kinds.pop(), len(used), sum(allocation))


class ConfigPlacer(Protocol):
    def place(self, configs: Mapping[str, Config], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        """Slots per node for the jobs in ``configs``, on their kinds only,
        given each job's ``current`` allocation; a job that cannot be placed
        as configured is left out."""
        ...


def place_jobs(placer: ConfigPlacer, configs: Mapping[str, Config],
               snap: Snapshot) -> list[tuple[JobView, tuple[int, ...], Config]]:
    """The jobs ``placer`` could place as configured, in snapshot order, each
    with its allocation and configuration (the others wait this round)."""
    placed = placer.place(configs, snap.nodes, {j.name: j.allocation for j in snap.jobs})
    return [(j, placed[j.name], configs[j.name]) for j in snap.jobs if j.name in placed]


def _keep_unchanged(configs: Mapping[str, Config], nodes: tuple[Node, ...],
                    current: Mapping[str, tuple[int, ...]], free: np.ndarray) -> Placement:
    """Jobs whose configuration is unchanged keep their nodes (no restart)."""
    out: Placement = {}
    for name, cfg in configs.items():
        cur = current.get(name)
        if cur is None or len(cur) != len(nodes):
            continue
        now = config_of(cur, nodes)
        if now is None or (now.kind, now.slots) != (cfg.kind, cfg.slots) \
                or cfg.nodes not in (0, now.nodes):
            continue
        arr = as_array(cur)
        if np.all(arr <= free):
            free -= arr
            out[name] = tuple(cur)
    return out


@dataclass(frozen=True)
class WholeNodes:
    """Sia's placement: unchanged configurations keep their nodes; then, larger
    first, a multi-node configuration takes whole free nodes of its kind
    (largest first) and a single-node one the fullest node of its kind that
    still has room (best fit, keeping whole nodes free for the multi-node
    ones)."""

    def place(self, configs: Mapping[str, Config], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        free = np.array([n.slots for n in nodes], dtype=int)
        cap = free.copy()
        kind = np.array([n.kind for n in nodes])
        mine_of = {k: kind == k for k in {c.kind for c in configs.values()}}
        out = _keep_unchanged(configs, nodes, current, free)
        todo = sorted((c.nodes > 1, c.slots, name) for name, c in configs.items()
                      if name not in out and c.slots > 0)
        for _, _, name in reversed(todo):
            cfg = configs[name]
            mine = mine_of[cfg.kind]
            alloc = np.zeros_like(free)
            if cfg.nodes > 1:
                whole = np.flatnonzero(mine & (free == cap))
                whole = whole[np.argsort(-cap[whole], kind="stable")][: cfg.nodes]
                if len(whole) < cfg.nodes or cap[whole].sum() < cfg.slots:
                    continue
                left = cfg.slots
                for i in whole:
                    alloc[i] = min(cap[i], left)
                    left -= alloc[i]
            else:
                fits = np.flatnonzero(mine & (free >= cfg.slots))
                if not len(fits):
                    continue
                alloc[fits[np.argmin(free[fits])]] = cfg.slots
            free -= alloc
            out[name] = tuple(alloc.tolist())
        return out


@dataclass(frozen=True)
class FirstFit:
    """Gavel's placement: unchanged configurations keep their slots; then,
    larger gangs first, a gang takes free slots of its kind node by node in
    node order (as Gavel assigns worker ids server by server)."""

    def place(self, configs: Mapping[str, Config], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        free = np.array([n.slots for n in nodes], dtype=int)
        mine_of = {k: np.array([n.kind == k for n in nodes]) for k in
                   {c.kind for c in configs.values()}}
        out = _keep_unchanged(configs, nodes, current, free)
        todo = sorted(((c.slots, name) for name, c in configs.items()
                       if name not in out and c.slots > 0), key=lambda t: -t[0])
        for want, name in todo:
            mine = mine_of[configs[name].kind]
            if free[mine].sum() < want:
                continue
            alloc = np.zeros_like(free)
            left = want
            for i in np.flatnonzero(mine):
                alloc[i] = min(int(free[i]), left)
                left -= alloc[i]
                if left == 0:
                    break
            free -= alloc
            out[name] = tuple(alloc.tolist())
        return out
