"""A dependency-free progress bar on stderr (redraws only on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import IO


class ProgressBar:
    """``bar.update(done)``; shows done/total, elapsed and an ETA."""

    def __init__(self, total: int, label: str = "", stream: IO[str] | None = None,
                 width: int = 28, min_interval: float = 0.1) -> None:
        self.total, self.label, self.width = max(total, 1), label, width
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self._last = 0.0
        self._min_interval = min_interval
        self.done = 0
        self.note = ""

    def update(self, done: int, note: str = "") -> None:
        self.done, self.note = done, note
        now = time.monotonic()
        if self.tty and (now - self._last >= self._min_interval or done >= self.total):
            self._last = now
            self.stream.write("\r" + self.render(now) + "\x1b[K")
            self.stream.flush()

    def render(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.width)
        elapsed = now - self.start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * filled + "-" * (self.width - filled)
        eta_s = f"{eta:5.0f}s" if eta == eta else "    ?"
        return (f"{self.label} [{bar}] {self.done}/{self.total} "
                f"{elapsed:5.0f}s eta {eta_s} {self.note}").rstrip()

    def close(self) -> None:
        """Leave a final line (also on non-terminals, so logs show the result)."""
        self.stream.write(("\r" if self.tty else "") + self.render() + "\x1b[K\n"
                          if self.tty else self.render() + "\n")
        self.stream.flush()
