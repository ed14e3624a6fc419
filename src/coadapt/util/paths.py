"""Paths built from input: one rule for names, and a check that a path stays inside its root.

A job name becomes a folder (``OUT/jobs/NAME``) in live runs, so a name is
one safe path component; :func:`inside` is the defence in depth behind that
rule: whatever a path is built from, it must resolve below its root (OUT),
or nothing is written.
"""

from __future__ import annotations

import re
from pathlib import Path

NAME_MAX = 128
"""The longest job name (a path component; file systems allow 255 bytes)."""
_NAME = re.compile(r"[A-Za-z0-9._-]+")
NAME_RULE = f"letters, digits, '.', '_' and '-' only, at most {NAME_MAX} characters, not '.' or '..'"
"""The rule in words, for error messages."""


def name_problem(name: str) -> str | None:
    """Why ``name`` is not one safe path component (None: it is)."""
    if not name:
        return "is empty"
    if len(name) > NAME_MAX:
        return f"has {len(name)} characters; at most {NAME_MAX}"
    if name in (".", ".."):
        return f"is {name!r}; a name is " + NAME_RULE
    if not _NAME.fullmatch(name):
        bad = sorted({c for c in name if not _NAME.fullmatch(c)})
        return f"is {name!r}, with {''.join(bad)!r}; a name has " + NAME_RULE
    return None


def inside(root: Path, *parts: str) -> Path:
    """``root / parts...`` once checked to resolve strictly below ``root``
    (symbolic links followed): ``inside(OUT / "jobs", name)`` is a job's own
    folder, never OUT itself nor a sibling's. ValueError names the path
    otherwise. The path is returned as joined, not resolved, so callers see the
    paths they always saw."""
    path = Path(root).joinpath(*parts)
    base = Path(root).resolve()
    real = path.resolve()
    if base not in real.parents and not (real == base and not parts):
        raise ValueError(f"{path}: resolves to {real}, not below {base}; refusing to write there "
                         f"(a name used in a path has {NAME_RULE})")
    return path
