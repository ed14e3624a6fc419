"""Scratch folders that a killed process cannot leave behind for good.

Each is named ``PREFIX<pid>-<random>`` in the system's temp folder, so the next
start can tell whose it is: :func:`remove_stale` deletes those whose process is
gone (a worker killed with SIGKILL never runs its cleanup).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

OLD_AFTER_S = 3600.0
"""A scratch folder of the old unnamed kind counts as stale after an hour untouched."""


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary folder tagged with this process's pid, removed at the end."""
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as tmp:
        yield Path(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(prefix: str, root: Path | None = None) -> list[Path]:
    """Delete the ``prefix`` scratch folders in ``root`` (the temp folder) whose
    process is gone, and untagged ones untouched for an hour; the removed paths."""
    root = Path(root or tempfile.gettempdir())
    tagged = re.compile(re.escape(prefix) + r"(\d+)-")
    removed = []
    for path in root.glob(prefix + "*"):
        m = tagged.match(path.name)
        try:
            stale = (not _alive(int(m.group(1))) if m
                     else time.time() - path.stat().st_mtime > OLD_AFTER_S)
        except OSError:
            continue
        if stale and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
