"""Atomic checkpoint files: a crash at any point leaves either the old or the new file.

Layout of a checkpoint directory:
- ``ckpt.pt``    training state (torch.save of tensors and plain values only, so
                 it loads with ``weights_only=True``);
- ``job.json``   job identity and the wall-clock time of its first start, written
                 by the group parent, read by workers so event times are continuous;
- ``status.json`` how the last run of the group ended (written by rank 0);
- ``control.json`` the batch size the scheduler wants the running launch to
                 switch to (written by the group parent, polled by rank 0 every
                 step; see ``ControlFile``);
- ``logs/``      one log file per worker rank.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import torch

from coadapt.util.atomic import TMP_PREFIX, atomic_write_bytes

CKPT_FILE = "ckpt.pt"
JOB_FILE = "job.json"
STATUS_FILE = "status.json"
CONTROL_FILE = "control.json"


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


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read back (cut short, or not ours)."""


def load_checkpoint(ckpt_dir: str | Path) -> dict[str, Any] | None:
    """The training state in ``ckpt_dir``, or None when there is none yet;
    CheckpointError naming the file when it is not a readable checkpoint
    (checkpoints are written atomically, so only a file changed by hand or
    another program gets here)."""
    path = Path(ckpt_dir) / CKPT_FILE
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError...
        text = str(exc)
        why = ("cut short: its zip archive has no end" if "central directory" in text
               else "cut short" if isinstance(exc, EOFError)
               else f"not a torch checkpoint of plain tensors ({type(exc).__name__})")
        raise CheckpointError(f"{path}: not a readable checkpoint, {why}; it was changed or "
                              "written by another program: rerun the job") from exc
    if not isinstance(state, dict) or "job_type" not in state:
        raise CheckpointError(f"{path}: not a coadapt checkpoint (no field 'job_type')")
    return state


def remove_stale_temps(ckpt_dir: str | Path) -> list[Path]:
    """Delete temp files left by a process killed mid-write (never read anyway)."""
    gone = []
    for p in Path(ckpt_dir).glob(TMP_PREFIX + "*"):
        p.unlink(missing_ok=True)
        gone.append(p)
    return gone


def write_control(ckpt_dir: str | Path, *, batch_size: int, seq: int, launch: int) -> None:
    """Ask launch ``launch`` of the job in ``ckpt_dir`` to run ``batch_size`` from its
    next step boundary on. Atomic, so a reader never sees half a request."""
    atomic_write_json(Path(ckpt_dir) / CONTROL_FILE,
                      {"batch_size": int(batch_size), "seq": int(seq), "launch": int(launch)})


class ControlFile:
    """A cheap per-step view of ``control.json``: one ``os.stat`` per ``poll()``,
    and a re-read only when the file's identity (inode, mtime, size) changed.
    Every write is an atomic rename, so a new inode marks every new request even
    when the clock's granularity hides the mtime change."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.value: dict[str, Any] | None = None
        self._key: tuple[int, int, int] | None = None

    def poll(self) -> bool:
        """True when the file changed since the last poll; ``value`` is then its
        content (None when the file is missing or unreadable)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            key = None
        else:
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key == self._key:
            return False
        self._key = key
        self.value = None
        if key is not None:
            try:
                value = read_json(self.path)
            except (OSError, ValueError):
                value = None  # replaced or removed between stat and open: next poll sees it
            self.value = value if isinstance(value, dict) else None
        return True
