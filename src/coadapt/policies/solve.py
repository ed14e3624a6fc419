"""Allocation of slots for a separable objective.

With the power mean at p = -1 (any p, in fact), Pollux's objective is a sum of
per-job terms, so the best slot counts come from a dynamic program over slots
(a min-plus convolution per job), exact and in milliseconds, instead of the
paper's genetic algorithm. Its cost grows as jobs x slots x choices; above
EXACT_CELLS (a round of about a thousand jobs on thousands of slots) a round
is partitioned as POP does (Narayanan et al., NSDI'21): the jobs are dealt
at random into k groups, each given 1/k of the slots, and each group is
solved exactly on its own, k times less work for a near-optimal answer. Where
every job's best count fits at once (the slots outnumber what the jobs may
take), each job simply takes its best: exact, and no program at all. The
groups are solved in lockstep (one array operation per job position for all
groups at once), so a round costs jobs/k Python steps, not jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Costs = np.ndarray | Sequence[np.ndarray]
"""Per job, its cost at 0, 1, 2, ... slots: a list of arrays (any lengths) or a
jobs x choices matrix (np.inf where a count is not allowed or past the end)."""


def cost_matrix(costs: Costs) -> np.ndarray:
    """``costs`` as a jobs x choices matrix, short rows padded with np.inf."""
    if isinstance(costs, np.ndarray) and costs.ndim == 2:
        return costs
    width = max((len(c) for c in costs), default=1)
    out = np.full((len(costs), width), np.inf)
    for j, c in enumerate(costs):
        out[j, : len(c)] = c
    return out


def _solve_groups(cost: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Independent problems in lockstep: ``cost`` is groups x jobs x choices
    (a group's missing jobs padded with cost [0, inf, ...]), ``capacity`` one
    per group; the slot counts, groups x jobs. Within a group this is the
    exact min-plus DP: best[c] = least cost of the jobs so far on c slots."""
    groups, jobs, k = cost.shape
    top = int(capacity.max())
    c = np.arange(top + 1)
    best = np.full((groups, top + 1), np.inf)
    best[:, 0] = 0.0
    choices = np.zeros((jobs, groups, top + 1), dtype=np.int32)
    finite = np.isfinite(cost).any(axis=0)  # jobs x choices, over the groups
    widths = (k - 1 - np.argmax(finite[:, ::-1], axis=1)).tolist()  # most slots a job may take
    shifts: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    reach = 0  # slots the jobs so far can use: best[:, reach + 1:] is still inf
    for j, width in enumerate(widths):
        end = min(top, reach + width) + 1
        hit = shifts.get((end, width))
        if hit is None:
            prev = np.arange(end)[:, None] - np.arange(width + 1)[None, :]
            hit = shifts[(end, width)] = (prev < 0, np.clip(prev, 0, None))
        below, source = hit
        cand = best[:, source] + cost[:, j, None, : width + 1]
        cand[:, below] = np.inf
        pick = np.argmin(cand, axis=2)  # the fewest slots among equal costs
        choices[j, :, :end] = pick
        best[:, :end] = cand.min(axis=2)
        reach = end - 1
    best[c[None, :] > capacity[:, None]] = np.inf
    used = np.argmin(best, axis=1)
    out = np.zeros((groups, jobs), dtype=int)
    g = np.arange(groups)
    for j in range(jobs - 1, -1, -1):
        r = choices[j, g, used]
        out[:, j] = r
        used = used - r
    return out


def min_sum_allocation(costs: Costs, capacity: int) -> list[int]:
    """Minimize sum_j costs[j][r_j] subject to sum_j r_j <= capacity.

    ``costs[j][r]`` is job j's cost at r slots (np.inf where not allowed);
    ``costs[j][0]`` must be finite so that a solution always exists.
    """
    m = cost_matrix(costs)
    if not len(m):
        return []
    return _solve_groups(m[None], np.array([capacity]))[0].tolist()


EXACT_CELLS = 100_000
"""Jobs x (slots + 1) up to which a round is solved exactly (the Pollux
study's 64 slots stays exact up to 1,500 jobs a round); beyond, POP."""


def partitioned_allocation(costs: Costs, capacity: int,
                           exact_cells: int = EXACT_CELLS, seed: int = 0) -> list[int]:
    """``min_sum_allocation``, exact while jobs x (capacity + 1) <= ``exact_cells``;
    above, POP's partition: k random groups of jobs, each solved exactly on
    its share of the capacity (the shares sum to ``capacity``)."""
    m = cost_matrix(costs)
    n = len(m)
    cells = n * (capacity + 1)
    finite = np.isfinite(m)
    if n and int(np.sum(m.shape[1] - 1 - np.argmax(finite[:, ::-1], axis=1))) <= capacity:
        return np.argmin(m, axis=1).tolist()  # every job's best count fits at once: exact
    if cells <= exact_cells or n < 2:
        return min_sum_allocation(m, capacity)
    k = min(n, -(-cells // exact_cells))
    groups = np.random.default_rng(seed).permutation(n) % k
    share = np.full(k, capacity // k) + (np.arange(k) < capacity % k)
    order = np.argsort(groups, kind="stable")  # each group's members in index order
    size = np.bincount(groups, minlength=k)
    slot = np.arange(n) - np.repeat(np.cumsum(size) - size, size)  # position within its group
    stacked = np.full((k, int(size.max()), m.shape[1]), np.inf)
    stacked[:, :, 0] = 0.0  # padding: a job that takes nothing and costs nothing
    stacked[groups[order], slot] = m[order]
    counts = _solve_groups(stacked, share)
    out = np.zeros(n, dtype=int)
    out[order] = counts[groups[order], slot]
    return out.tolist()
