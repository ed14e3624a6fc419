"""The comparison table printed after a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLUMNS = [
    ("policy", "policy", "{}"),
    ("completed", "done", "{}"),
    ("avg_jct", "avg JCT h", "{:.3f}"),
    ("p50_jct", "p50 h", "{:.3f}"),
    ("p99_jct", "p99 h", "{:.2f}"),
    ("makespan", "makespan h", "{:.2f}"),
    ("utilization", "util", "{:.2f}"),
    ("max_rho", "max rho", "{:.2f}"),
    ("unfair_frac", "rho>1.1", "{:.2f}"),
    ("jain_rho", "Jain", "{:.3f}"),
    ("decision_ms_median", "decide ms", "{:.2f}"),
    ("wall_s", "wall s", "{:.1f}"),
]
HOURS = {"avg_jct", "p50_jct", "p99_jct", "makespan"}


def format_table(rows: Sequence[dict[str, Any]], title: str = "") -> str:
    """Plain fixed-width table; times in hours (summaries keep seconds)."""
    cells = [[c[1] for c in COLUMNS]]
    for row in rows:
        line = []
        for key, _, fmt in COLUMNS:
            v = row.get(key)
            if v is None:
                line.append("-")
            else:
                line.append(fmt.format(v / 3600 if key in HOURS else v))
        cells.append(line)
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    out = [title] if title else []
    for i, r in enumerate(cells):
        out.append("  ".join(v.rjust(w) if j else v.ljust(w) for j, (v, w) in
                             enumerate(zip(r, widths, strict=True))))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
