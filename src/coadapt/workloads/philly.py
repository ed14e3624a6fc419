"""The Philly trace, whole or in part, as a workload.

The Pollux study samples 160 jobs from an 8-hour daytime window of the
Microsoft Philly trace (``philly.csv``: timestamp, duration, num_gpus,
gpu_time, cluster). This keeps every job of the trace (or the part that
``--window`` and ``--sample`` select) at its own arrival time, in seconds
since the first selected arrival, and maps each to a profiled job type by its
GPU-time class, as the Pollux generator does; its request is a tuned
configuration on the cluster (``generate.configurations``).

The trace's own peak demand (its running jobs' GPUs summed, over its 109
days) is what a Philly-sized cluster must hold: :func:`peak_demand`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from coadapt.workloads.generate import CLASS_BOUNDS_H, CLASSES, Row, configurations, pick_app
from coadapt.world.world import World

COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time")


@dataclass(frozen=True)
class TraceJob:
    """One row of the trace: arrival (seconds since the trace's first job)."""

    arrival: float
    duration: float
    gpus: int
    gpu_time: float

    @property
    def size_class(self) -> str:
        return CLASSES[int(np.searchsorted(CLASS_BOUNDS_H, self.gpu_time / 3600, side="right"))]


def _number(path: Path, line: int, field: str, text: str | None, lo: float) -> float:
    try:
        x = float(text or "")
    except ValueError:
        raise ValueError(f"{path}:{line}: field '{field}' is {text!r}, expected a number") from None
    if not math.isfinite(x) or x < lo:
        raise ValueError(f"{path}:{line}: field '{field}' is {text!r}, expected a finite "
                         f"number >= {lo:g}")
    return x


def read_trace(path: Path) -> list[TraceJob]:
    """Every job of a Philly-format trace, in arrival order; ValueError naming
    the file, line and field of a malformed row (blank lines are skipped)."""
    if path.is_dir() or not path.exists():
        raise ValueError(f"--trace {path}: not a file; give the Philly trace CSV "
                         "(e.g. ../shared/reference/adaptdl/traces/philly.csv)")
    rows: list[tuple[datetime, float, int, float]] = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}:1: column(s) {', '.join(missing)} missing; a Philly trace "
                             f"has {','.join(COLUMNS)}")
        for row in reader:
            line = reader.line_num
            if not any((v or "").strip() for v in row.values()):
                continue
            try:
                ts = datetime.strptime(row["timestamp"] or "", "%Y-%m-%d %H:%M:%S")
            except ValueError:
                raise ValueError(f"{path}:{line}: field 'timestamp' is {row['timestamp']!r}, "
                                 "expected YYYY-MM-DD HH:MM:SS") from None
            rows.append((ts, _number(path, line, "duration", row["duration"], 0),
                         int(_number(path, line, "num_gpus", row["num_gpus"], 1)),
                         _number(path, line, "gpu_time", row["gpu_time"], 0)))
    if not rows:
        raise ValueError(f"{path}: no jobs")
    first = min(r[0] for r in rows)
    jobs = [TraceJob((ts - first).total_seconds(), d, g, gt) for ts, d, g, gt in rows]
    return sorted(jobs, key=lambda j: j.arrival)


def select(jobs: list[TraceJob], window_days: tuple[float, float] | None, sample: int | None,
           rng: np.random.Generator) -> list[TraceJob]:
    """The jobs arriving in the window (days since the trace began), then
    ``sample`` of them drawn without replacement; arrivals re-based to 0."""
    if window_days is not None:
        lo, hi = (d * 86400 for d in window_days)
        jobs = [j for j in jobs if lo <= j.arrival < hi]
    if sample is not None and sample < len(jobs):
        keep = np.sort(rng.choice(len(jobs), size=sample, replace=False))
        jobs = [jobs[i] for i in keep]
    if not jobs:
        raise ValueError("no job of the trace is in the selection (--window/--sample)")
    t0 = jobs[0].arrival
    return [TraceJob(j.arrival - t0, j.duration, j.gpus, j.gpu_time) for j in jobs]


def to_rows(jobs: list[TraceJob], world: World, classes: Mapping[str, tuple[str, ...]],
            rng: np.random.Generator) -> list[Row]:
    """A workload row per job: its type by GPU-time class, a tuned request."""
    configs: dict[str, list[tuple[int, int]]] = {}
    rows = []
    for idx, j in enumerate(jobs):
        app = pick_app(classes, j.size_class, world.profiles, rng)
        if app not in configs:
            configs[app] = configurations(world, app)
        r, b = configs[app][int(rng.integers(len(configs[app])))]
        rows.append((f"{app}-{idx}", round(j.arrival), app, r, b))
    return rows


def peak_demand(jobs: list[TraceJob]) -> int:
    """The most GPUs the trace's jobs held at once, each for its recorded duration."""
    t = np.array([j.arrival for j in jobs])
    d = np.array([j.duration for j in jobs])
    g = np.array([j.gpus for j in jobs], dtype=float)
    points = np.concatenate([t + d, t])  # ends sort before starts at the same instant
    order = np.argsort(points, kind="stable")
    return int(np.cumsum(np.concatenate([-g, g])[order]).max())
