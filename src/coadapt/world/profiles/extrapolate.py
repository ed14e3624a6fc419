"""Extend training curves that stopped before their target.

A profiling run to target is time-boxed; a large-batch or slow job may be cut
short. Its measured rows stay as they are; the metric is then extrapolated
along log(progress) from the last rows (a fit that learning curves follow well
over short ranges), rows are added at the table's own progress spacing until
the target is reached, and the gradient statistics are held at their last
values. Extrapolated rows are an estimate and are counted in
``AppProfile.extrapolated_rows`` so reports can say so.
"""

from __future__ import annotations

import numpy as np

COLUMNS = ("progress", "iteration", "metric", "grad_sqr", "grad_var")


def rows_to_target(progress: np.ndarray, metric: np.ndarray, target: float,
                   higher_is_better: bool, max_factor: float = 20.0) -> int:
    """Rows (at the table's spacing) until the fitted curve reaches ``target``;
    0 if the table already reaches it, capped at ``max_factor`` x its length."""
    sign = 1.0 if higher_is_better else -1.0
    if np.any(sign * (metric - target) >= 0):
        return 0
    n = len(progress)
    cap = int(max_factor * n)
    if n < 2:
        return cap
    tail = slice(max(0, n - 5), n)
    slope, icept = np.polyfit(np.log(progress[tail]), metric[tail], 1)
    if sign * slope <= 0:
        return cap
    p_target = float(np.exp((target - icept) / slope))
    step = progress[-1] / n
    return int(min(cap, max(1, np.ceil((p_target - progress[-1]) / step))))


def extend(table: dict[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
    """Append ``rows`` extrapolated rows to a table of equal-length columns."""
    n = len(table["progress"])
    if rows <= 0:
        return table
    k = np.arange(1, rows + 1)
    p, it, m = table["progress"], table["iteration"], table["metric"]
    step_p, step_it = p[-1] / n, it[-1] / n
    new_p = p[-1] + step_p * k
    if n >= 2:
        tail = slice(max(0, n - 5), n)
        slope, icept = np.polyfit(np.log(p[tail]), m[tail], 1)
        new_m = icept + slope * np.log(new_p)
    else:
        new_m = np.full(rows, m[-1])
    out = {"progress": np.concatenate([p, new_p]),
           "iteration": np.concatenate([it, it[-1] + step_it * k]),
           "metric": np.concatenate([m, new_m])}
    for col in ("grad_sqr", "grad_var"):
        out[col] = np.concatenate([table[col], np.full(rows, table[col][-1])])
    return out
