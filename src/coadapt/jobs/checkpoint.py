"""Atomic checkpoint files: a crash at any point leaves either the old or the new file.

Layout of a checkpoint directory:
- ``ckpt.pt``    training state (torch.save of tensors and plain values only, so
                 it loads with ``weights_only=True``);
- ``job.json``   job identity and the wall-clock time of its first start, written
                 by the group parent, read by workers so event times are continuous;
- ``status.json`` how the last run of the group ended (written by rank 0);
- ``logs/``      one log file per worker rank.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

CKPT_FILE = "ckpt.pt"
JOB_FILE = "job.json"
STATUS_FILE = "status.json"
TMP_PREFIX = ".tmp-"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, rename over ``path``,
    fsync the directory. The temp file is removed if anything fails."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_save(obj: Any, path: str | Path) -> int:
    """torch.save ``obj`` atomically; serialised fully in memory first, so a
    serialisation error never touches the disk. Returns the size in bytes."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    atomic_write_bytes(path, data)
    return len(data)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def read_json(path: str | Path) -> dict[str, Any] | None:
    path = Path(path)
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def load_checkpoint(ckpt_dir: str | Path) -> dict[str, Any] | None:
    """The training state in ``ckpt_dir``, or None when there is none yet."""
    path = Path(ckpt_dir) / CKPT_FILE
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=True)


def remove_stale_temps(ckpt_dir: str | Path) -> list[Path]:
    """Delete temp files left by a process killed mid-write (never read anyway)."""
    gone = []
    for p in Path(ckpt_dir).glob(TMP_PREFIX + "*"):
        p.unlink(missing_ok=True)
        gone.append(p)
    return gone
