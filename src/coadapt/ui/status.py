"""The live status table: one row per job, refreshed in place.

On a terminal the table is redrawn over itself about once a second; into a
file or pipe (CI, ``tee``) a full table is written every ``every`` seconds so
that the log stays readable. ETAs use the profile's progress-to-target as a
rough yardstick, marked ``~``: they are for people, not for the scheduler.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from coadapt.ui.progress import format_seconds

COLUMNS = ("job", "state", "workers", "batch", "progress", "metric", "ETA")


@dataclass
class StatusTable:
    title: str = ""
    expected_progress: Mapping[str, float] = field(default_factory=dict)  # per job type
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    every: float = 30.0  # seconds between tables when not on a terminal
    min_interval: float = 1.0
    enabled: bool = True
    _drawn: int = 0
    _last: float = -1e9

    def _tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def render(self, now: float, rows: Sequence[dict[str, Any]]) -> list[str]:
        cells = [list(COLUMNS)]
        for r in rows:
            expected = self.expected_progress.get(r["type"])
            eta = "-"
            if r["state"] == "done":
                eta = "done"
            elif expected and r.get("rate"):
                eta = "~" + format_seconds(max(expected - r["progress"], 0.0) / r["rate"])
            prog = f"{r['progress']:.0f}"
            if expected:
                prog += f" ({min(r['progress'] / expected, 1.0) * 100:.0f}%)"
            metric = "-" if r.get("metric") is None else f"{r['metric']:.3f}"
            cells.append([r["job"], r["state"], str(r["workers"] or "-"),
                          str(r["batch"] or "-"), prog, metric, eta])
        widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
        lines = [f"{self.title}  t={format_seconds(now)}  "
                 f"done {sum(r['state'] == 'done' for r in rows)}/{len(rows)}"]
        for c in cells:
            lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                                   for i, (v, w) in enumerate(zip(c, widths, strict=True))))
        return lines

    def update(self, now: float, rows: Sequence[dict[str, Any]], force: bool = False) -> None:
        if not self.enabled:
            return
        tty = self._tty()
        wall = time.monotonic()
        if not force and wall - self._last < (self.min_interval if tty else self.every):
            return
        self._last = wall
        lines = self.render(now, rows)
        if tty:
            out = (f"\x1b[{self._drawn}F" if self._drawn else "") + "".join(
                "\x1b[2K" + line + "\n" for line in lines)
            self._drawn = len(lines)
        else:
            out = "\n".join(lines) + "\n"
        self.stream.write(out)
        self.stream.flush()
