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
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")

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
    if path.exists():
        return path
    named = TRACES_DIR / f"{spec}.csv"
    if named.exists():
        return named
    shipped = sorted(p.stem for p in TRACES_DIR.glob("*.csv")) if TRACES_DIR.is_dir() else []
    raise WorkloadError(
        f"{spec}: no such workload file; give a CSV path or one of: {', '.join(shipped) or 'none'}"
    )


def _field(path: Path, line: int, row: dict[str, str], col: str, kind: type, minimum: float):
    raw = (row.get(col) or "").strip()
    try:
        num = float(raw)
    except ValueError:
        num = float("nan")
    if num != num or (kind is int and not num.is_integer()):
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw!r}, expected {kind.__name__}")
    if num < minimum:
        raise WorkloadError(f"{path}:{line}: field '{col}' is {raw}, must be >= {minimum}")
    return kind(num)


def _weight(path: Path, line: int, row: dict[str, str]) -> float:
    raw = (row.get("weight") or "").strip()
    if not raw:
        return 1.0
    w = _field(path, line, row, "weight", float, 0)
    if not w > 0 or w == float("inf"):
        raise WorkloadError(f"{path}:{line}: field 'weight' is {raw}, must be a number > 0")
    return w


def load_workload(spec: str, applications: set[str] | None = None) -> Workload:
    """Read and check a workload; ``applications`` (known profiles) are checked too."""
    path = resolve(spec)
    jobs: list[JobSpec] = []
    seen: set[str] = set()
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise WorkloadError(f"{path}:1: missing column(s) {', '.join(missing)}; "
                                f"expected header {','.join(COLUMNS)}")
        for line, row in enumerate(reader, start=2):
            name = (row.get("name") or "").strip()
            if not name:
                raise WorkloadError(f"{path}:{line}: field 'name' is empty")
            if name in seen:
                raise WorkloadError(f"{path}:{line}: field 'name' repeats job {name!r}")
            seen.add(name)
            app = (row.get("application") or "").strip()
            if applications is not None and app not in applications:
                raise WorkloadError(
                    f"{path}:{line}: field 'application' is {app!r}, no profile for it; "
                    f"known: {', '.join(sorted(applications))}"
                )
            jobs.append(JobSpec(
                name=name,
                submit_time=_field(path, line, row, "time", float, 0),
                application=app,
                num_replicas=_field(path, line, row, "num_replicas", int, 1),
                batch_size=_field(path, line, row, "batch_size", int, 1),
                line=line,
                weight=_weight(path, line, row) if "weight" in header else 1.0,
            ))
    if not jobs:
        raise WorkloadError(f"{path}: no jobs")
    jobs.sort(key=lambda j: j.submit_time)
    return Workload(name=path.stem, path=path, jobs=tuple(jobs))
