"""A run owns its output folder: claimed after its input is checked, locked
while it writes, never mixed with another run's results.

The rule is the same in every command that writes a folder (simulate,
experiment, live, netbench, compare): an empty or new OUT is taken; one that
holds results is refused unless ``--force`` (replace it whole) or ``--resume``
(finish it, where the command can); a folder of files coadapt did not write is
never deleted, even with ``--force``. Results are built in ``OUT/.partial/NAME``
and renamed into place when complete (:func:`staged`), so a killed run leaves
complete policies beside clearly unfinished ones, never a half-written one in
their place.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coadapt.util.atomic import fsync_dir
from coadapt.util.lock import LOCK_FILE, own_folder

PARTIAL = ".partial"
"""Where unfinished results are built: ``OUT/.partial/NAME``."""
MARKERS = (LOCK_FILE, "config.toml", "live.json", "experiment.json", "cells.jsonl", "comparison.csv",
           "report.md", "results.csv", "netbench.csv", "network.json", "events.jsonl", PARTIAL)
"""Files that only a coadapt run leaves: a folder with one of them (or with a
``*/events.jsonl``) is coadapt's, which ``--force`` may replace."""


class FolderHeld(ValueError):
    """OUT holds another run's results (or files coadapt did not write)."""


@dataclass(frozen=True)
class Ownership:
    """How a command may treat an OUT that holds results: ``force`` replaces
    them whole, ``resume`` keeps them for the command to finish."""

    force: bool = False
    resume: bool = False

    @classmethod
    def of(cls, args: object) -> Ownership:
        return cls(bool(getattr(args, "force", False)), bool(getattr(args, "resume", False)))


def check_out_path(out: Path) -> None:
    """ValueError when ``out`` cannot be a folder (it or a parent is a file):
    found before anything is computed, not as a traceback at the end."""
    for part in [out, *out.parents]:
        if part.exists() and not part.is_dir():
            what = "is a file" if part == out else f"is under {part}, which is a file"
            raise ValueError(f"--out {out}: {what}, not a folder; choose another --out")


def check_out_file(path: Path, flag: str = "--out") -> None:
    """ValueError when ``path`` cannot be written as a file (it is a folder, or
    under a file): checked before minutes of measuring, not after."""
    if path.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give the file to write, e.g. "
                         f"{path / 'calibration.json'}")
    for part in path.parents:
        if part.exists() and not part.is_dir():
            raise ValueError(f"{flag} {path}: is under {part}, which is a file")


def held_results(out: Path) -> list[str]:
    """The entries of ``out`` other than its lock file: what a run there would mix with."""
    if not out.is_dir():
        return []
    return sorted(p.name for p in out.iterdir() if p.name != LOCK_FILE)


def is_coadapt_folder(out: Path) -> bool:
    """Whether ``out`` was written by coadapt (see MARKERS)."""
    return any((out / m).exists() for m in MARKERS) or any(out.glob("*/events.jsonl*"))


@contextmanager
def claim(out: Path, command: str, ownership: Ownership = Ownership(), *,
          resumable: bool = True) -> Iterator[Path]:
    """Lock ``out`` (created if missing) for ``command`` and make sure it holds
    no other run's results: empty, or ``--resume`` (kept), or ``--force``
    (everything but the lock removed first). FolderBusy (a ValueError) when
    another process holds it; FolderHeld when it holds results. Call it after
    every option and input file has been checked: a refused run leaves OUT as
    it found it."""
    check_out_path(out)
    if ownership.force and ownership.resume:
        raise ValueError("--force and --resume: choose one (--force replaces OUT, --resume "
                         "finishes the run in it)")
    if ownership.resume and not resumable:
        raise ValueError(f"--resume: 'coadapt {command}' cannot resume; use --force to replace "
                         "OUT or choose another --out")
    held = held_results(out)
    if held and not is_coadapt_folder(out):  # checked before our lock file would mark it
        raise FolderHeld(f"--out {out}: holds files coadapt did not write ({_shown(held)}); "
                         "nothing was changed, and neither --force nor --resume touches "
                         "them: choose another --out")
    with own_folder(out, command):
        held = held_results(out)
        if held and not ownership.resume:
            _replace(out, held, command, ownership.force)
        yield out


def _shown(held: list[str]) -> str:
    return ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")


def _replace(out: Path, held: list[str], command: str, force: bool) -> None:
    shown = _shown(held)
    if not force:
        again = "--resume to finish it, " if command in RESUMABLE else ""
        raise FolderHeld(f"--out {out}: holds an earlier run's results ({shown}); nothing was "
                         f"changed. Add --force to replace them, {again}or choose another --out")
    for name in held:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    fsync_dir(out)


RESUMABLE = frozenset({"simulate", "experiment", "live"})
"""The commands whose --resume finishes a run left in OUT."""


@contextmanager
def staged(final: Path) -> Iterator[Path]:
    """A folder to build ``final`` in (``final.parent/.partial/final.name``,
    emptied first), renamed to ``final`` when the block ends without an error
    (an older ``final`` is replaced); after an error or a kill it stays under
    ``.partial`` for ``report`` to name as unfinished."""
    tmp = final.parent / PARTIAL / final.name
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    yield tmp
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    fsync_dir(final.parent)
    if not any(tmp.parent.iterdir()):
        tmp.parent.rmdir()


def unfinished(out: Path) -> list[str]:
    """The names of results a killed or failed run left unfinished in ``out``."""
    part = out / PARTIAL
    return sorted(p.name for p in part.iterdir() if p.is_dir()) if part.is_dir() else []
