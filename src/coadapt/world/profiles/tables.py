"""Strict reader for small profile CSVs: every value checked, errors point at file:line.

polars would read these files faster, but its errors name dtypes, not places;
profile files are a few KB, so clarity wins.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.world.profiles.profile import ProfileError


def read_csv_checked(path: Path, fields: dict[str, type],
                     extra: dict[str, type] | None = None) -> pl.DataFrame:
    """Read a small CSV, checking every value; errors say ``file:line: field 'x': ...``."""
    if not path.is_file():
        raise ProfileError(f"{path}: missing")
    extra = extra or {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ProfileError(f"{path}:1: empty file, expected header {','.join(fields)}")
        header = [h.strip() for h in header]
        for name in fields:
            if name not in header:
                raise ProfileError(f"{path}:1: field '{name}': missing from header {header}")
        kinds = {**{k: v for k, v in extra.items() if k in header}, **fields}
        columns: dict[str, list[Any]] = {name: [] for name in kinds}
        index = {name: header.index(name) for name in kinds}
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise ProfileError(f"{path}:{line}: expected {len(header)} fields, got {len(row)}")
            for name, kind in kinds.items():
                columns[name].append(_parse(path, line, name, row[index[name]].strip(), kind))
    if not columns[next(iter(fields))]:
        raise ProfileError(f"{path}:2: no data rows")
    schema = {name: {str: pl.String, int: pl.Int64, float: pl.Float64}[k]
              for name, k in kinds.items()}
    ordered = [n for n in header if n in kinds]
    return pl.DataFrame(columns, schema=schema).select(ordered)


def _parse(path: Path, line: int, name: str, raw: str, kind: type) -> Any:
    def bad(why: str) -> ProfileError:
        return ProfileError(f"{path}:{line}: field '{name}': {why}, got {raw!r}")

    if kind is str:
        if name == "placement" and not re.fullmatch(r"[1-9][0-9]*", raw):
            raise bad("expected a digit string of workers per node such as '2'")
        return raw
    try:
        value = float(raw)
    except ValueError:
        raise bad(f"expected {kind.__name__}") from None
    if not math.isfinite(value):
        raise bad("expected a finite number")
    if kind is int:
        if value != int(value):
            raise bad("expected an integer")
        value = int(value)
    if value < 0:
        raise bad("expected a non-negative number")
    return value
