"""The comparison table printed after a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLUMNS = [
    ("policy", "policy", "{}"),
    ("completed", "done", "{}"),
    ("avg_jct", "avg JCT {u}", "{:.3f}"),
    ("p50_jct", "p50 {u}", "{:.3f}"),
    ("p99_jct", "p99 {u}", "{:.2f}"),
    ("makespan", "makespan {u}", "{:.2f}"),
    ("utilization", "util", "{:.2f}"),
    ("max_rho", "max rho", "{:.2f}"),
    ("unfair_frac", "rho>1.1", "{:.2f}"),
    ("jain_rho", "Jain", "{:.3f}"),
    ("decision_ms_median", "decide ms", "{:.2f}"),
    ("wall_s", "wall s", "{:.1f}"),
]
TIMES = {"avg_jct", "p50_jct", "p99_jct", "makespan"}


def format_table(rows: Sequence[dict[str, Any]], title: str = "") -> str:
    """Plain fixed-width table; times in hours, or minutes for short runs
    (summaries keep seconds)."""
    spans = [r.get("makespan") or 0.0 for r in rows]
    unit, scale = ("h", 3600.0) if max(spans, default=0.0) >= 4 * 3600 else ("min", 60.0)
    cells = [[c[1].format(u=unit) for c in COLUMNS]]
    for row in rows:
        line = []
        for key, _, fmt in COLUMNS:
            v = row.get(key)
            if v is None:
                line.append("-")
            else:
                line.append(fmt.format(v / scale if key in TIMES else v))
        cells.append(line)
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    out = [title] if title else []
    for i, r in enumerate(cells):
        out.append("  ".join(v.rjust(w) if j else v.ljust(w) for j, (v, w) in
                             enumerate(zip(r, widths, strict=True))))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
