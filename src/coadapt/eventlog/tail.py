"""Read a JSON-lines file that another process is still appending to."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EventTail:
    """New complete lines since the last read, parsed.

    Keeps a byte offset; a last line without its newline (a write in progress)
    stays buffered until it is complete. A malformed complete line is logged
    and skipped: a worker's log is its own, one bad line must not stop a run.
    """

    def __init__(self, path: str | Path, offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        out = []
        for raw in lines:
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
            except json.JSONDecodeError:
                log.warning("%s: skipped a malformed event line %r", self.path, raw[:80])
                continue
            if isinstance(event, dict):
                out.append(event)
        return out
