"""A small stderr progress bar for long work: profiling, simulations (no extra dependency).

Profiling takes minutes to tens of minutes, so the user needs to see which cell
is running, how far along it is and when it will end. Work is counted in
*units* whose expected cost may differ (a run to target costs more than a
timing cell), so the ETA extrapolates from units done per second rather than
from cells done.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO


def format_seconds(seconds: float) -> str:
    """``75.2 -> '1:15'``, ``3725 -> '1:02:05'``; unknown (nan/inf) -> ``'--:--'``."""
    if not seconds == seconds or seconds in (float("inf"), float("-inf")) or seconds < 0:
        return "--:--"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass
class ProgressBar:
    """``timing [####......] 3/12 cells  25.0%  0:41 elapsed  ETA 2:03  cifar w=2 m=64``.

    ``total`` is the expected cost in any unit and ``items`` the number of
    cells, shown as ``i/N``. With ``timed=True`` the total is a time budget in
    seconds and the bar shows elapsed time against it (for phases whose runs
    differ too much in cost for a per-run ETA to mean anything).

    On a terminal the bar redraws in place (``\\r``); otherwise (logs, CI) it
    writes one line per update at most every ``min_interval`` seconds, so a
    redirected stderr stays readable.
    """

    total: float
    items: int = 0
    label: str = ""
    unit: str = "cells"
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    width: int = 24
    min_interval: float = 5.0
    enabled: bool = True
    timed: bool = False
    done: float = 0.0
    count: int = 0
    _start: float = field(default_factory=time.monotonic)
    _last_draw: float = -1e9
    _last_line: str = ""
    _note: str = ""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def eta(self) -> float:
        """Seconds left, extrapolated from the units done so far (nan before any)."""
        if self.timed:
            return max(self.total - self.elapsed, 0.0)
        if self.done <= 0:
            return float("nan")
        rate = self.done / max(self.elapsed, 1e-9)
        return max(self.total - self.done, 0.0) / rate

    def render(self) -> str:
        done = min(self.elapsed, self.total) if self.timed else self.done
        frac = min(done / self.total, 1.0) if self.total > 0 else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        head = f"{self.label} " if self.label else ""
        of = f"/{self.items}" if self.items else ""
        return (
            f"{head}[{bar}] {self.count}{of} {self.unit} {frac * 100:5.1f}%  "
            f"{format_seconds(self.elapsed)} elapsed  ETA {format_seconds(self.eta())}"
            + (f"  {self._note}" if self._note else "")
        )

    def note(self, text: str) -> None:
        """Show what is running now (redrawn immediately on a terminal)."""
        self._note = text
        self._draw(force=self._isatty())

    def advance(self, units: float = 1.0, note: str | None = None) -> None:
        """Mark ``units`` of work done (one finished cell, by default)."""
        self.done = min(self.elapsed, self.total) if self.timed else self.done + units
        self.count += 1
        if note is not None:
            self._note = note
        self._draw(force=self.done >= self.total)

    def close(self) -> None:
        self._draw(force=True)
        if self.enabled and self._isatty():
            self.stream.write("\n")
            self.stream.flush()

    def _isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        tty = self._isatty()
        if not force and not tty and now - self._last_draw < self.min_interval:
            return
        line = self.render()
        if not tty and line == self._last_line:
            return
        self._last_draw, self._last_line = now, line
        if tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def __enter__(self) -> ProgressBar:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
