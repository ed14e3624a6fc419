"""Workload files: ``name,time,application,num_replicas,batch_size`` CSV.

The format is the AdaptDL simulator's, so its published workloads load as they
are. An optional ``weight`` column (> 0, default 1) gives a job's priority:
pollux and pollux-fair weight its term of the power mean (Sia's per-job
weights), fixed and tiresias serve heavier jobs first. ``num_replicas`` and
``batch_size`` are the hand-tuned request that the fixed baselines honour;
adaptive policies may ignore them.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from coadapt.models.batching import JobLimits
from coadapt.util.paths import name_problem

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")

MAX_SUBMIT_TIME = 10 * 365 * 86400.0
"""The latest submit time, in seconds (10 years): beyond it a run never ends."""
MAX_REPLICAS = 1_000_000
"""More replicas than any cluster (the cluster's ceiling and the job type's
``max_replicas`` are checked where the workload meets the world)."""
MAX_BATCH = 1_000_000_000
"""A batch beyond any job type's (its declared maximum is checked where the
workload meets the world)."""
MAX_WEIGHT = 1e6
"""The largest priority weight (the power mean and the queues stay finite)."""
MAX_BYTES = 100_000_000
"""The largest workload file read (a million jobs take ~50 MB)."""
LIMIT_WHY = {"time": "10 years in seconds", "num_replicas": "more than any cluster",
             "batch_size": "more than any job type", "weight": "the largest priority"}

# Named workloads shipped with the project (under traces/), resolved by name.
TRACES_DIR = Path(__file__).resolve().parents[3] / "traces"


class WorkloadError(ValueError):
    """Malformed workload; the message names file, line and field."""


@dataclass(frozen=True)
class JobSpec:
    name: str
    submit_time: float
    application: str
    num_replicas: int
    batch_size: int
    line: int = 0  # line in the workload file, for error messages
    weight: float = 1.0  # priority: > 1 more important (optional ``weight`` column)


@dataclass(frozen=True)
class Workload:
    name: str
    path: Path | None  # None: generated in memory (a named set at some seed)
    jobs: tuple[JobSpec, ...]


def resolve(spec: str) -> Path:
    """A path, or the name of a workload shipped in ``traces/``."""
    path = Path(spec)
    if path.is_dir():
        raise WorkloadError(f"{spec}: is a directory; give a workload CSV file "
                            f"({','.join(COLUMNS)}) or a shipped workload's name")
    if path.exists():
        return path
    named = TRACES_DIR / f"{spec}.csv"
    if named.is_file():
        return named
    shipped = sorted(p.stem for p in TRACES_DIR.glob("*.csv")) if TRACES_DIR.is_dir() else []
    raise WorkloadError(
        f"{spec}: no such workload file; give a CSV path or one of: {', '.join(shipped) or 'none'}"
    )


def _field(path: Path, line: int, row: dict[str, str], col: str, kind: type, minimum: float,
           maximum: float):
    raw = (row.get(col) or "").strip()
    try:
        num = float(raw)
    except ValueError:
        num = float("nan")
    if not math.isfinite(num) and raw.lower().lstrip("+-") in ("inf", "infinity"):
        bound = f"in [{minimum:g}, {maximum:g}]" if minimum > -math.inf else f"<= {maximum:g}"
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw}, must be a finite number {bound}")
    if num != num or (kind is int and not num.is_integer()):
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw!r}, expected {kind.__name__}")
    if num < minimum:
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw}, must be >= {minimum}")
    if num > maximum:
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw}, must be <= {maximum:g} "
                            f"({LIMIT_WHY[col]})")
    return kind(num)


def _weight(path: Path, line: int, row: dict[str, str]) -> float:
    raw = (row.get("weight") or "").strip()
    if not raw:
        return 1.0
    w = _field(path, line, row, "weight", float, -math.inf, MAX_WEIGHT)
    if not w > 0:
        raise WorkloadError(f"{path}:{line}: field 'weight' is {raw}, must be a number > 0")
    return w


def _text(path: Path) -> str:
    """The file's text: UTF-8, with or without a byte-order mark; WorkloadError
    names the file (and the line) when it is a directory, unreadable, too large,
    UTF-16 or binary."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise WorkloadError(f"{path}: {size / 1e6:.0f} MB; a workload file has at most "
                                f"{MAX_BYTES / 1e6:.0f} MB (about a million jobs)")
        data = path.read_bytes()
    except IsADirectoryError:
        raise WorkloadError(f"{path}: is a directory; give a workload CSV file") from None
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise WorkloadError(f"{path}: is UTF-16 text; save it as UTF-8 (CSV UTF-8)")
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise WorkloadError(f"{path}:{line}: a NUL byte: a binary file, not a workload CSV")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise WorkloadError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x}); "
                            "save it as UTF-8 (CSV UTF-8)") from None


def _row(path: Path, line: int, row: dict, header: list[str],
         applications: set[str] | None) -> JobSpec:
    """One row as a job; WorkloadError names file, line and field."""
    if None in row:  # csv.DictReader's restkey: fields beyond the header's
        extra = row[None]
        raise WorkloadError(f"{path}:{line}: {len(header) + len(extra)} fields, the header names "
                            f"{len(header)} ({','.join(header)}); extra: {','.join(extra)[:80]!r}")
    name = (row.get("name") or "").strip()
    problem = name_problem(name)
    if problem is not None:
        raise WorkloadError(f"{path}:{line}: field 'name' {problem}")
    app = (row.get("application") or "").strip()
    if applications is not None and app not in applications:
        raise WorkloadError(
            f"{path}:{line}: field 'application' is {app!r}, no profile for it; "
            f"known: {', '.join(sorted(applications))}"
        )
    return JobSpec(
        name=name,
        submit_time=_field(path, line, row, "time", float, 0, MAX_SUBMIT_TIME),
        application=app,
        num_replicas=_field(path, line, row, "num_replicas", int, 1, MAX_REPLICAS),
        batch_size=_field(path, line, row, "batch_size", int, 1, MAX_BATCH),
        line=line,
        weight=_weight(path, line, row) if "weight" in header else 1.0,
    )


def load_workload(spec: str, applications: set[str] | None = None) -> Workload:
    """Read and check a workload; ``applications`` (known profiles) are checked too.
    Every error is a WorkloadError naming the file, and the line of a bad row."""
    path = resolve(spec)
    jobs: list[JobSpec] = []
    seen: set[str] = set()
    reader = csv.DictReader(io.StringIO(_text(path), newline=""))
    try:
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise WorkloadError(f"{path}:1: missing column(s) {', '.join(missing)}; "
                                f"expected header {','.join(COLUMNS)}")
        reader.fieldnames = header
        for row in reader:
            job = _row(path, reader.line_num, row, header, applications)
            if job.name in seen:
                raise WorkloadError(f"{path}:{reader.line_num}: field 'name' repeats job "
                                    f"{job.name!r}")
            seen.add(job.name)
            jobs.append(job)
    except csv.Error as exc:
        raise WorkloadError(f"{path}:{reader.line_num}: not CSV ({exc})") from None
    if not jobs:
        raise WorkloadError(f"{path}:{max(reader.line_num, 1)}: no jobs below the header")
    jobs.sort(key=lambda j: j.submit_time)
    return Workload(name=path.stem, path=path, jobs=tuple(jobs))


def check_requests(workload: Workload, limits: Mapping[str, JobLimits]) -> None:
    """Refuse a request outside its job type's declared limits (a batch above
    ``max_batch_size`` or below ``min_local_bsz``, replicas above ``max_replicas``):
    the splitter would silently run another batch than the one asked for.
    Types without limits here are left to the caller (their profiles were
    checked when the workload was read)."""
    for j in workload.jobs:
        lim = limits.get(j.application)
        if lim is None:
            continue
        where = f"{workload.path}:{j.line}" if workload.path is not None and j.line else \
            f"workload {workload.name}"
        if not lim.min_local_bsz <= j.batch_size <= lim.max_batch_size:
            raise WorkloadError(
                f"{where}: field 'batch_size' is {j.batch_size} for job {j.name}; job type "
                f"{j.application} declares batches from {lim.min_local_bsz} (its smallest "
                f"micro-batch) to {lim.max_batch_size}")
        if j.num_replicas > lim.max_replicas:
            raise WorkloadError(
                f"{where}: field 'num_replicas' is {j.num_replicas} for job {j.name}; job type "
                f"{j.application} declares at most {lim.max_replicas} replicas")
