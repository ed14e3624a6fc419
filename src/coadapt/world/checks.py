"""Reading the small files a person may have edited by hand (a machine
calibration, a profile folder) and checking their values, so that any
content ends in the reader's own error (``error``, a ValueError subclass)
naming the file and field, never in another exception.

Text is UTF-8 (a byte-order mark and CRLF line ends are fine); UTF-16 or
binary content is refused as such. Numbers are checked to be what they mean:
finite, and not negative (or not zero) where that means nothing.
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024 * 1024  # far beyond any profile or calibration file
MAX_COUNT = 10**9  # workers, batch sizes, samples: beyond it a value is a typo


def read_text(path: Path, error: type[ValueError], what: str = "a text file",
              missing: str = "not found") -> str:
    """The text of ``path`` (UTF-8, a BOM stripped); ``error`` naming the
    file when it is missing, a folder, unreadable, too large or not UTF-8."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise error(f"{path}: {missing}") from None
    except (OSError, ValueError) as exc:
        raise error(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: a folder, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file, expected {what}")
    if st.st_size > MAX_BYTES:
        raise error(f"{path}: {st.st_size} bytes, too large for {what}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return decode(path, data, error)


def decode(path: Path, data: bytes, error: type[ValueError]) -> str:
    """``data`` as UTF-8 text (a BOM stripped), else ``error`` naming the file."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error(f"{path}: not UTF-8 text (UTF-16, by its byte-order mark); save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\0" in text:
        raise error(f"{path}: not UTF-8 text (NUL bytes: UTF-16 or binary?)")
    return text


def parse_json(path: Path, text: str, error: type[ValueError], label: str = "not JSON") -> Any:
    """The JSON document in ``text``; ``error`` as ``path:line: not JSON (why)``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}: {label} ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit integer, nesting too deep
        raise error(f"{path}: {label} ({str(exc)[:80]})") from None


def shown(value: Any) -> str:
    """``repr(value)``, cut short for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def finite(value: Any) -> bool:
    """A JSON number (not a boolean) that is finite as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) <= 1.7e308 if isinstance(value, int) else math.isfinite(value)


def number(value: Any, where: str, error: type[ValueError], *, positive: bool = False,
           minimum: float = 0.0, integer: bool = False, maximum: float | None = None
           ) -> float:
    """``value`` as a finite JSON number >= ``minimum`` (> 0 if ``positive``;
    integral if ``integer``, then at most ``MAX_COUNT`` unless ``maximum``);
    else ``error`` as ``where: expected ..., got ...`` (``where`` names file
    and field). Booleans and strings are not numbers."""
    top = maximum if maximum is not None else (MAX_COUNT if integer else None)
    kind = "an integer" if integer else "a finite number"
    want = f"{kind} {'>' if positive else '>='} {minimum:g}" + (
        f" and <= {top:g}" if top is not None else "")
    ok = finite(value)
    if ok:
        x = float(value)
        ok = ((x > minimum if positive else x >= minimum)
              and (top is None or x <= top) and (not integer or x.is_integer()))
    if not ok:
        raise error(f"{where}: expected {want}, got {shown(value)}")
    return x


def count(value: Any, where: str, error: type[ValueError], minimum: int = 1) -> int:
    """``value`` as an integer >= ``minimum`` and <= ``MAX_COUNT`` (see :func:`number`)."""
    return int(number(value, where, error, minimum=minimum, integer=True))


def mapping(value: Any, where: str, error: type[ValueError], empty: bool = True
            ) -> dict[str, Any]:
    """``value`` if it is a JSON object (non-empty unless ``empty``), else ``error``."""
    if not isinstance(value, dict):
        raise error(f"{where}: expected an object, got {shown(value)}")
    if not value and not empty:
        raise error(f"{where}: empty, expected at least one entry")
    return value
