"""Allocation of slots for a separable objective.

With the power mean at p = -1 (any p, in fact), Pollux's objective is a sum of
per-job terms, so the best slot counts come from a dynamic program over slots
(a min-plus convolution per job), exact and in milliseconds, instead of the
paper's genetic algorithm. Its cost grows as jobs x slots x choices; above
EXACT_CELLS (a round of about a thousand jobs on thousands of slots) a round
is partitioned as POP does (Narayanan et al., NSDI'21): the jobs are dealt
at random into k groups, each given 1/k of the slots, and each group is
solved exactly on its own, k times less work for a near-optimal answer.
"""

from __future__ import annotations

import numpy as np


def min_sum_allocation(costs: list[np.ndarray], capacity: int) -> list[int]:
    """Minimize sum_j costs[j][r_j] subject to sum_j r_j <= capacity.

    ``costs[j][r]`` is job j's cost at r slots (np.inf where not allowed);
    ``costs[j][0]`` must be finite so that a solution always exists.
    """
    best = np.full(capacity + 1, np.inf)
    best[0] = 0.0
    choices = []
    c = np.arange(capacity + 1)
    for cost in costs:
        k = np.arange(len(cost))
        prev = c[:, None] - k[None, :]
        cand = np.where(prev >= 0, best[np.clip(prev, 0, None)], np.inf) + cost[None, :]
        pick = np.argmin(cand, axis=1)
        best = cand[c, pick]
        choices.append(pick)
    used = int(np.argmin(best))
    out = [0] * len(costs)
    for j in range(len(costs) - 1, -1, -1):
        r = int(choices[j][used])
        out[j] = r
        used -= r
    return out


EXACT_CELLS = 400_000
"""Jobs x (slots + 1) up to which a round is solved exactly (the Pollux
study's 64 slots with any number of jobs stays exact)."""


def partitioned_allocation(costs: list[np.ndarray], capacity: int,
                           exact_cells: int = EXACT_CELLS, seed: int = 0) -> list[int]:
    """``min_sum_allocation``, exact while jobs x (capacity + 1) <= ``exact_cells``;
    above, POP's partition: k random groups of jobs, each solved exactly on
    its share of the capacity (the shares sum to ``capacity``)."""
    cells = len(costs) * (capacity + 1)
    if cells <= exact_cells or len(costs) < 2:
        return min_sum_allocation(costs, capacity)
    k = min(len(costs), -(-cells // exact_cells))
    groups = np.random.default_rng(seed).permutation(len(costs)) % k
    share = np.full(k, capacity // k) + (np.arange(k) < capacity % k)
    out = [0] * len(costs)
    for g in range(k):
        members = np.flatnonzero(groups == g)
        for j, r in zip(members, min_sum_allocation([costs[i] for i in members], int(share[g])),
                        strict=True):
            out[int(j)] = r
    return out
