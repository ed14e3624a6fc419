"""Strict reader for small profile CSVs: every value checked, errors point at file:line.

polars would read these files faster, but its errors name dtypes, not places;
profile files are a few KB, so clarity wins. UTF-8 with or without a BOM and
CRLF line ends are read; anything else is a ProfileError naming the file.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.world.checks import MAX_COUNT, read_text
from coadapt.world.profiles.profile import ProfileError

# Columns whose zero means nothing (a batch of 0, a step taking no time).
POSITIVE = frozenset({"local_bsz", "step_time", "workers", "batch_size", "num_nodes",
                      "num_replicas"})
_DTYPES = {str: pl.String, int: pl.Int64, float: pl.Float64, bool: pl.Boolean}


def _rows(path: Path) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and the (line, cells) of every non-blank row of a CSV."""
    text = read_text(path, ProfileError, "a CSV file", "missing")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ProfileError(f"{path}:1: not CSV ({exc})") from None
    if header is None:
        raise ProfileError(f"{path}:1: empty file, expected a header")
    header = [h.strip() for h in header]
    seen = {h for h in header if header.count(h) > 1}
    if seen:
        raise ProfileError(f"{path}:1: field '{sorted(seen)[0]}': appears twice in the header")

    def rows() -> Iterator[tuple[int, list[str]]]:
        try:
            for row in reader:
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) != len(header):
                    raise ProfileError(f"{path}:{reader.line_num}: expected {len(header)} "
                                       f"fields, got {len(row)}")
                yield reader.line_num, row
        except csv.Error as exc:
            raise ProfileError(f"{path}:{reader.line_num}: not CSV ({exc})") from None

    return header, rows()


def read_csv_checked(path: Path, fields: dict[str, type],
                     extra: dict[str, type] | None = None) -> pl.DataFrame:
    """Read a small CSV, checking every value; errors say ``file:line: field 'x': ...``.
    ``fields`` must be present, ``extra`` are checked when present; other columns
    are dropped."""
    extra = extra or {}
    header, rows = _rows(path)
    if not header or header == [""]:
        raise ProfileError(f"{path}:1: empty header, expected {','.join(fields)}")
    for name in fields:
        if name not in header:
            raise ProfileError(f"{path}:1: field '{name}': missing from header {header}")
    kinds = {**{k: v for k, v in extra.items() if k in header}, **fields}
    columns: dict[str, list[Any]] = {name: [] for name in kinds}
    index = {name: header.index(name) for name in kinds}
    for line, row in rows:
        for name, kind in kinds.items():
            columns[name].append(_parse(path, line, name, row[index[name]].strip(), kind))
    if not columns[next(iter(fields))]:
        raise ProfileError(f"{path}:2: no data rows")
    schema = {name: _DTYPES[k] for name, k in kinds.items()}
    ordered = [n for n in header if n in kinds]
    return pl.DataFrame(columns, schema=schema).select(ordered)


def read_csv_loose(path: Path, checked: dict[str, type]) -> pl.DataFrame:
    """Every column of a CSV: those of ``checked`` present checked as
    :func:`read_csv_checked` does; the rest as polars infers them (a string
    column where it cannot)."""
    header, rows = _rows(path)
    raw: list[tuple[int, list[str]]] = list(rows)
    columns = {}
    for i, name in enumerate(header):
        cells = [row[i].strip() for _, row in raw]
        if name in checked:
            kind = checked[name]
            values = [_parse(path, line, name, c, kind) for (line, _), c in zip(raw, cells,
                                                                              strict=True)]
            columns[name] = pl.Series(name, values, dtype=_DTYPES[kind])
        else:
            columns[name] = _inferred(name, cells)
    return pl.DataFrame(list(columns.values())) if columns else pl.DataFrame()


def _inferred(name: str, cells: list[str]) -> pl.Series:
    """A column of cells as integers, floats or booleans where they all are, else strings."""
    s = pl.Series(name, cells, dtype=pl.String)
    for dtype in (pl.Int64, pl.Float64):
        try:
            return s.cast(dtype, strict=True)
        except pl.exceptions.PolarsError:
            continue
    low = s.str.to_lowercase()
    if low.is_in(["true", "false"]).all():
        return low == "true"
    return s


def _parse(path: Path, line: int, name: str, raw: str, kind: type) -> Any:
    def bad(why: str) -> ProfileError:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        return ProfileError(f"{path}:{line}: field '{name}': {why}, got {shown!r}")

    if kind is str:
        if name == "placement" and not re.fullmatch(r"[1-9][0-9]{0,63}", raw):
            raise bad("expected a digit string of workers per node such as '2'")
        return raw
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            raise bad("expected true or false")
        return raw.lower() == "true"
    try:
        value = float(raw)
    except ValueError:
        raise bad(f"expected {kind.__name__}") from None
    if not math.isfinite(value):
        raise bad("expected a finite number")
    if kind is int:
        if value != int(value):
            raise bad("expected an integer")
        if abs(value) > MAX_COUNT:
            raise bad(f"expected an integer of at most {MAX_COUNT:g}")
        value = int(value)
    if value < 0:
        raise bad("expected a non-negative number")
    if value == 0 and name in POSITIVE:
        raise bad("expected a positive number")
    return value
