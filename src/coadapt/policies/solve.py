"""Exact allocation of slots for a separable objective.

With the power mean at p = -1 (any p, in fact), Pollux's objective is a sum of
per-job terms, so the best slot counts come from a dynamic program over slots
(a min-plus convolution per job), exact and in milliseconds, instead of the
paper's genetic algorithm.
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
