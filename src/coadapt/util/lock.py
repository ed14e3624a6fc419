"""One run owns its output folder: an exclusive ``flock`` on ``OUT/.coadapt.lock``.

A second run into the same OUT is refused at once, naming the holder; the lock
goes with the process (the kernel drops it even after SIGKILL), so a killed run
never leaves OUT locked.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".coadapt.lock"


class FolderBusy(ValueError):
    """OUT is held by another running command."""


@contextmanager
def own_folder(out: Path, command: str) -> Iterator[Path]:
    """Hold ``out`` (created if missing) for the duration; FolderBusy when
    another process holds it."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(path)
            raise FolderBusy(f"--out {out}: in use by {holder}; wait for it to end or choose "
                             "another --out (nothing was written)") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "command": command,
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        yield out
    finally:
        os.close(fd)  # releases the lock


def _holder(path: Path, patience: float = 1.0) -> str:
    """The holder's name; it writes it just after taking the lock, so a refused
    run waits up to ``patience`` seconds for it before saying "another run"."""
    deadline = time.monotonic() + patience
    while True:
        try:
            doc = json.loads(path.read_text() or "{}")
            return f"'coadapt {doc['command']}' (pid {doc['pid']}, since {doc['since']})"
        except (OSError, ValueError, KeyError):
            if time.monotonic() >= deadline:
                return "another coadapt run"
            time.sleep(0.02)
