"""Append-only JSON Lines event log, flushed per event.

Every stage writes the same format so that metrics are computed from the log
alone: one JSON object per line with at least ``t`` (seconds since the start of
the experiment), ``kind`` and ``job`` (``None`` for cluster-wide events). The
first line is a ``header`` event carrying the schema version and run metadata.
A log may be gzip'd (a ``.gz`` path, ``LOG_GZ``): a simulation of many jobs
writes one, the experiment grid files them so; it is still flushed per event
(a sync flush: a cut stream reads up to its last event). ``log_in`` and
``logs_below`` find a run's log under either name.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

SCHEMA_VERSION = 1
LOG = "events.jsonl"
LOG_GZ = "events.jsonl.gz"


def log_in(folder: str | Path) -> Path:
    """The event log of the run in ``folder``: ``events.jsonl.gz`` where that
    exists, else ``events.jsonl`` (which may not exist yet)."""
    folder = Path(folder)
    return folder / LOG_GZ if (folder / LOG_GZ).exists() else folder / LOG


def logs_below(root: str | Path) -> list[Path]:
    """Every ``root/<policy>/`` log, gzip'd or not (one per policy folder), sorted."""
    root = Path(root)
    return sorted({p.parent: log_in(p.parent) for p in
                   [*root.glob(f"*/{LOG}"), *root.glob(f"*/{LOG_GZ}")]}.values())

KINDS = frozenset(
    {
        "header",
        "submit",
        "allocate",
        "start",
        "checkpoint",
        "restart",
        "progress",
        "epoch",
        "complete",
        "fail",
        "fairness",
        "resume",
        "round",
        "observation",
        "validation",
        "end",
    }
)


_PLAIN = frozenset({str, int, bool, type(None)})


def _clean(value: Any) -> Any:
    """Make numpy scalars and non-finite floats JSON-safe (plain values first:
    every event passes through here)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {str(k): _clean(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        if set(map(type, value)) <= _PLAIN:  # an allocation: an int per node, checked in C
            return list(value)
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


class EventLog:
    """Writer for one event log file.

    ``fsync=True`` also forces each line to disk (live runs and workers, where a
    crash must not lose events); simulations only flush, which is enough for a
    process crash and keeps a 160-job replay fast.
    """

    def __init__(self, path: str | Path | None, *, fsync: bool = False,
                 stream: IO[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._fsync = fsync
        if stream is not None:
            self._fh = stream
            self._owns = False
        else:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.suffix == ".gz":  # level 1: a large log, written fast
                self._fh = gzip.open(self.path, "at", compresslevel=1, encoding="utf-8")
            else:
                self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self._owns = True

    def header(self, **meta: Any) -> None:
        self.emit(0.0, "header", None, schema=SCHEMA_VERSION, **meta)

    def emit(self, t: float, kind: str, job: str | None = None, **fields: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}; known: {sorted(KINDS)}")
        record = {"t": round(float(t), 6), "kind": kind, "job": job}
        record.update(_clean(fields))
        self._fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._owns and not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(path: Path) -> Iterator[str]:
    """The file's lines, streamed (a log of millions of events is never held
    whole); gzip'd when the name ends in ``.gz`` (a corrupt or truncated gzip
    stream is a ``ValueError``, like a malformed line)."""
    if path.suffix != ".gz":
        with open(path, encoding="utf-8") as fh:
            yield from fh
        return
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            yield from fh
    except EOFError:
        return  # cut after its last flush (a killed run): what was flushed is whole
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{path}: not a readable gzip'd event log ({exc})") from exc


def read_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield events of a JSON Lines log, gzip'd if ``path`` ends in ``.gz``,
    as they are read; a truncated last line (crash mid-write: only the last
    line can lack its newline) is skipped, any other malformed line raises
    ``ValueError`` naming file and line."""
    path = Path(path)
    for i, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            if not line.endswith("\n"):
                return
            raise ValueError(f"{path}:{i}: not a JSON event ({exc.msg})") from exc
        if not isinstance(event, dict) or "kind" not in event or "t" not in event:
            raise ValueError(f"{path}:{i}: event lacks field 't' or 'kind'")
        if event["kind"] == "header" and event.get("schema", SCHEMA_VERSION) > SCHEMA_VERSION:
            raise ValueError(
                f"{path}:{i}: schema {event['schema']} is newer than this coadapt "
                f"({SCHEMA_VERSION}); upgrade coadapt to read it"
            )
        yield event


def run_header(events: list[dict[str, Any]], path: str | Path) -> dict[str, Any]:
    """The header of one run's log ``events`` (read from ``path``); ValueError
    as ``checked_run`` says."""
    for _ in checked_run(events, path):
        pass
    return events[0]


def checked_run(events: Iterable[dict[str, Any]], path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the events of one run's log (read from ``path``) as they come;
    ValueError naming the file when the log is empty, does not begin with its
    header (it was cut: which run, workload and cluster it is, nobody can
    say), or holds a second header (two runs appended into one file)."""
    n, extra = 0, 0
    for e in events:
        if n == 0 and e["kind"] != "header":
            raise ValueError(f"{path}:1: no header (the first event is a '{e['kind']}'); "
                             "a log without its header cannot say which run it records (workload, "
                             "cluster, slots), so it is not read: was it cut or pasted together?")
        extra += n > 0 and e["kind"] == "header"
        n += 1
        yield e
    if n == 0:
        raise ValueError(f"{path}: empty: no header and no events (the run stopped before it "
                         "began); rerun it")
    if extra:
        raise ValueError(f"{path}: holds {extra + 1} headers: the events of {extra + 1} runs "
                         "appended into one file, which cannot be told apart; rerun into an "
                         "empty --out")
