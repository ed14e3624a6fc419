"""Placing slot counts on nodes: one replaceable step after a policy's choice.

A policy decides how many slots each job gets; a ``Placer`` decides on which
nodes (scheduling separated from placement, as in Blox). Each policy names its
default placer as its ``placer`` attribute, so a user can swap it. Two
strategies, both used by several policies: ``SpreadMostFree`` is the gang
placement of Tiresias/Optimus (take the node with the most free slots first);
``Pack`` is Pollux's: keep unchanged jobs where they are, put a job on one node
when it fits (best fit), and let at most one multi-node job use any node
(interference avoidance).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from coadapt.world.cluster import Node, allocation_matrix

Placement = dict[str, tuple[int, ...]]


class Placer(Protocol):
    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        """Slots per node for the jobs in ``counts`` (job -> slots wanted), given
        each job's ``current`` allocation; a job may get fewer slots than it
        wants, or be left out, when they cannot be placed."""
        ...


def by_kind(place, counts: Mapping[str, int], nodes: tuple[Node, ...],
            current: Mapping[str, tuple[int, ...]],
            kinds: tuple[str, ...] | None = None) -> Placement:
    """Run ``place(counts, nodes, current)`` once per kind of node, so that a
    job runs on one kind at a time (as in Sia). First fit: a running job stays
    on its kind while it fits there; another goes to the kind with the most
    slots not yet promised that fits it whole (else the one with the most).
    On one kind this is ``place`` itself, unchanged. ``kinds``: the nodes'
    kinds in order of appearance, when the caller knows them."""
    kinds = tuple(dict.fromkeys(n.kind for n in nodes)) if kinds is None else kinds
    if len(kinds) == 1:
        return place(counts, nodes, current)
    idx = {k: [i for i, n in enumerate(nodes) if n.kind == k] for k in kinds}
    room = {k: sum(nodes[i].slots for i in idx[k]) for k in kinds}
    chosen: dict[str, str] = {}
    for name, want in counts.items():
        cur = current.get(name)
        used = {nodes[i].kind for i, a in enumerate(cur or ()) if a}
        if want > 0 and len(used) == 1 and room[k := used.pop()] >= want:
            chosen[name], room[k] = k, room[k] - want
    for name, want in counts.items():
        if want > 0 and name not in chosen:
            fits = [k for k in kinds if room[k] >= want] or list(kinds)
            k = max(fits, key=lambda k: room[k])
            chosen[name], room[k] = k, room[k] - want
    out: Placement = {}
    for k in kinds:
        sub = tuple(nodes[i] for i in idx[k])
        mine = {n: c for n, c in counts.items() if chosen.get(n) == k}
        cur = {n: tuple(a[i] for i in idx[k]) for n, a in current.items()
               if n in mine and len(a) == len(nodes)
               and not any(a[i] for i in range(len(nodes)) if nodes[i].kind != k)}
        for name, alloc in place(mine, sub, cur).items():
            full = [0] * len(nodes)
            for i, a in zip(idx[k], alloc, strict=True):
                full[i] = a
            out[name] = tuple(full)
    return out


@dataclass
class RowCache:
    """Allocations as array rows, kept per job while its allocation is the same
    tuple (held here, so the identity is sound): a round at a thousand jobs on a
    thousand nodes converts only the allocations that changed, not a million
    entries."""

    _rows: dict[str, tuple[tuple[int, ...], np.ndarray]] = field(default_factory=dict)

    def matrix(self, names: list[str], allocs: list[tuple[int, ...]], nodes: int) -> np.ndarray:
        held = self._rows
        miss = [k for k, (n, a) in enumerate(zip(names, allocs, strict=True))
                if (h := held.get(n)) is None or h[0] is not a]
        if not miss:
            out = np.stack([held[n][1] for n in names]) if names else allocation_matrix([], nodes)
        elif len(miss) == len(allocs):
            out = allocation_matrix(allocs, nodes)
        else:
            fresh = allocation_matrix([allocs[k] for k in miss], nodes)
            hit = np.ones(len(allocs), dtype=bool)
            hit[miss] = False
            idx = np.flatnonzero(hit).tolist()
            kept = [held[names[k]][1] for k in idx]
            out = np.empty((len(allocs), nodes), dtype=np.result_type(fresh, *kept))
            out[idx], out[miss] = kept, fresh
        return self._store(names, allocs, out)

    def _store(self, names: list[str], allocs: list[tuple[int, ...]],
               out: np.ndarray) -> np.ndarray:
        self._rows = {n: (a, row) for n, a, row in zip(names, allocs, out, strict=True)}
        return out


@dataclass
class NodeFacts:
    """The kinds and slots of a cluster's nodes, kept while the placer is
    handed the same tuple of nodes (held here: the identity is sound). A
    policy that places several times a round (fixed tries each waiting job)
    reads a thousand nodes once, not per call."""

    _last: tuple | None = None

    def of(self, nodes: tuple[Node, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        if self._last is None or self._last[0] is not nodes:
            self._last = (nodes, tuple(dict.fromkeys(n.kind for n in nodes)),
                          tuple(n.slots for n in nodes))
        return self._last[1], self._last[2]


@dataclass(frozen=True)
class Pack:
    """Pollux's placement (``pack``), one kind of node per job."""

    rows: RowCache = field(default_factory=RowCache, compare=False, repr=False)
    facts: NodeFacts = field(default_factory=NodeFacts, compare=False, repr=False)

    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        kinds, slots = self.facts.of(nodes)

        def one(c: Mapping[str, int], ns: tuple[Node, ...],
                cur: Mapping[str, tuple[int, ...]]) -> Placement:
            return pack(c, slots if ns is nodes else tuple(n.slots for n in ns), cur, self.rows)

        return by_kind(one, counts, nodes, current, kinds)


@dataclass(frozen=True)
class SpreadMostFree:
    """Gang placement: jobs whose count is unchanged keep their nodes, then the
    others, in the order of ``counts``, take slots from the nodes with the most
    free slots (``spread_most_free``); a job that does not fit is left out."""

    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        return by_kind(self._place, counts, nodes, current)

    @staticmethod
    def _place(counts: Mapping[str, int], nodes: tuple[Node, ...],
               current: Mapping[str, tuple[int, ...]]) -> Placement:
        free = np.array([n.slots for n in nodes], dtype=int)
        out: Placement = {}
        for name, want in counts.items():
            cur = current.get(name)
            if want > 0 and cur is not None and sum(cur) == want:
                free -= np.array(cur)
                out[name] = cur
        for name, want in counts.items():
            if want > 0 and name not in out:
                alloc = spread_most_free(want, free)
                if alloc is not None:
                    out[name] = alloc
        return out


def spread_most_free(count: int, free: np.ndarray) -> tuple[int, ...] | None:
    """Take slots from the node with the most free slots first (lowest index on
    ties); updates ``free`` in place. None if the cluster lacks ``count`` slots."""
    if count > free.sum():
        return None
    alloc = np.zeros_like(free)
    left = count
    while left > 0:
        i = int(np.argmax(free))
        take = min(int(free[i]), left)
        alloc[i] += take
        free[i] -= take
        left -= take
    return tuple(alloc.tolist())


def pack(counts: Mapping[str, int], slots_per_node: tuple[int, ...],
         current: Mapping[str, tuple[int, ...]], rows_of: RowCache | None = None) -> Placement:
    """Place ``counts`` (job -> slots). Jobs whose count is unchanged keep
    their current nodes. A job may receive fewer slots than asked when the
    free slots are fragmented or the one-multi-node-job-per-node rule binds."""
    free = np.array(slots_per_node, dtype=int)
    capacity = free.copy()
    multi = np.zeros(len(free), dtype=bool)  # node already hosts a multi-node job
    out: Placement = {}
    keep = [(name, cur, want) for name, want in counts.items()
            if want > 0 and (cur := current.get(name)) is not None and len(cur) == len(free)]
    allocs = [cur for _, cur, _ in keep]
    rows = (allocation_matrix(allocs, len(free)) if rows_of is None
            else rows_of.matrix([name for name, *_ in keep], allocs, len(free)))
    same = rows.sum(axis=1) == np.array([want for *_, want in keep], dtype=int)
    keep = [(name, cur) for (name, cur, _), s in zip(keep, same, strict=True) if s]
    rows = rows[same]
    spread = np.count_nonzero(rows, axis=1) > 1
    held = rows.sum(axis=0, dtype=free.dtype)
    if np.all(held <= free):  # all fit: as the one-by-one check would find
        free -= held
        multi |= (rows[spread] > 0).any(axis=0)
        out.update(keep)
    else:
        for (name, cur), arr, many in zip(keep, rows, spread, strict=True):
            if np.all(arr <= free):
                free -= arr
                if many:
                    multi |= arr > 0
                out[name] = cur
    todo = sorted(((n, c) for n, c in counts.items() if c > 0 and n not in out),
                  key=lambda item: -item[1])
    fit = _BestFit(free)
    for name, want in todo:
        alloc = fit.take(want)
        if alloc is None:
            alloc = _place_one(want, free, capacity, multi)
            fit.changed()
        if alloc is not None:
            out[name] = alloc
    return out


class _BestFit:
    """The single-node best fit of ``_place_one`` (the fullest node with room,
    the lowest index on ties) without a pass over every node per job: the
    nodes by free slots, each level a heap of node indices, stale entries
    dropped when met. ``free`` is shared with ``_place_one``."""

    def __init__(self, free: np.ndarray) -> None:
        self.free = free
        self.now = free.tolist()
        self.levels: list[list[int]] = [np.flatnonzero(free == v).tolist()
                                        for v in range(int(free.max(initial=0)) + 1)]

    def take(self, want: int) -> tuple[int, ...] | None:
        """Place ``want`` slots on one node, or None when no node has room."""
        now = self.now
        for v in range(want, len(self.levels)):
            heap = self.levels[v]
            while heap and now[heap[0]] != v:
                heapq.heappop(heap)
            if heap:
                i = heapq.heappop(heap)
                now[i] = left = v - want
                self.free[i] = left
                heapq.heappush(self.levels[left], i)
                return (0,) * i + (want,) + (0,) * (len(now) - i - 1)
        return None

    def changed(self) -> None:
        """``free`` changed elsewhere (a multi-node placement): re-file those nodes."""
        fresh = self.free.tolist()
        for i in np.flatnonzero(self.free != np.array(self.now)).tolist():
            heapq.heappush(self.levels[fresh[i]], i)
        self.now = fresh


def _place_one(want: int, free: np.ndarray, capacity: np.ndarray,
               multi: np.ndarray) -> tuple[int, ...] | None:
    fits = np.flatnonzero(free >= want)
    alloc = np.zeros_like(free)
    if len(fits):
        # Best fit: the fullest node that still has room keeps big holes open.
        i = fits[np.argmin(free[fits])]  # the first such node on ties
        alloc[i] = want
    else:
        usable = np.flatnonzero((free > 0) & ~multi)
        if free[usable].sum() >= want and len(usable) > 1:
            # Whole empty nodes first, then the emptiest remaining ones.
            order = usable[np.lexsort((usable, -free[usable], free[usable] != capacity[usable]))]
            left = want
            for i in order:
                take = min(int(free[i]), left)
                alloc[i] = take
                left -= take
                if left == 0:
                    break
        elif free.max() > 0:
            # Cannot spread under the one-multi-node-job rule: take the
            # largest hole on a single node instead of nothing.
            i = int(np.argmax(free))
            alloc[i] = free[i]
    if alloc.sum() == 0:
        return None
    free -= alloc
    if np.count_nonzero(alloc) > 1:
        multi |= alloc > 0
    return tuple(alloc.tolist())
