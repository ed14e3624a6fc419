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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from coadapt.world.cluster import Node

Placement = dict[str, tuple[int, ...]]


class Placer(Protocol):
    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        """Slots per node for the jobs in ``counts`` (job -> slots wanted), given
        each job's ``current`` allocation; a job may get fewer slots than it
        wants, or be left out, when they cannot be placed."""
        ...


@dataclass(frozen=True)
class Pack:
    """Pollux's placement (``pack``)."""

    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
              current: Mapping[str, tuple[int, ...]]) -> Placement:
        return pack(counts, tuple(n.slots for n in nodes), current)


@dataclass(frozen=True)
class SpreadMostFree:
    """Gang placement: jobs whose count is unchanged keep their nodes, then the
    others, in the order of ``counts``, take slots from the nodes with the most
    free slots (``spread_most_free``); a job that does not fit is left out."""

    def place(self, counts: Mapping[str, int], nodes: tuple[Node, ...],
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
    return tuple(int(x) for x in alloc)


def pack(counts: Mapping[str, int], slots_per_node: tuple[int, ...],
         current: Mapping[str, tuple[int, ...]]) -> Placement:
    """Place ``counts`` (job -> slots). Jobs whose count is unchanged keep
    their current nodes. A job may receive fewer slots than asked when the
    free slots are fragmented or the one-multi-node-job-per-node rule binds."""
    free = np.array(slots_per_node, dtype=int)
    capacity = free.copy()
    multi = np.zeros(len(free), dtype=bool)  # node already hosts a multi-node job
    out: Placement = {}
    for name, want in counts.items():
        cur = current.get(name)
        if want > 0 and cur is not None and sum(cur) == want and len(cur) == len(free):
            arr = np.array(cur)
            if np.all(arr <= free):
                free -= arr
                if np.count_nonzero(arr) > 1:
                    multi |= arr > 0
                out[name] = cur
    todo = sorted(((n, c) for n, c in counts.items() if c > 0 and n not in out),
                  key=lambda item: -item[1])
    for name, want in todo:
        alloc = _place_one(want, free, capacity, multi)
        if alloc is not None:
            out[name] = alloc
    return out


def _place_one(want: int, free: np.ndarray, capacity: np.ndarray,
               multi: np.ndarray) -> tuple[int, ...] | None:
    fits = np.flatnonzero(free >= want)
    alloc = np.zeros_like(free)
    if len(fits):
        # Best fit: the fullest node that still has room keeps big holes open.
        i = fits[np.argmin(free[fits] + 1e-3 * fits)]
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
    return tuple(int(x) for x in alloc)
