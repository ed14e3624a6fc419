"""Bookkeeping for runs to target: step-time model, per-run records, their tables.

Split from :mod:`coadapt.tools.measure.curve_plan` (the scheduling policy) so the
pieces that only hold or price data are testable on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from coadapt.models.batching import step_with_accum
from coadapt.tools.measure.curves import CurveRun, reached_target
from coadapt.world.jobtypes import DeclaredJobType


@dataclass
class StepModel:
    """Seconds per optimizer step at (type, workers, batch), from the timing grid medians."""

    summary: pl.DataFrame
    startup: dict[str, float] = field(default_factory=dict)
    overhead: dict[str, float] = field(default_factory=dict)  # wall / sum(step), learned

    def step_time(self, job: DeclaredJobType, workers: int, batch: int) -> float:
        from coadapt.jobs.types import plan_batch

        plan = plan_batch(job, workers, batch)
        rows = self.summary.filter((pl.col("type") == job.name) & (pl.col("workers") == workers))
        if rows.height == 0:
            return 1.0
        rows = rows.sort("local_bsz")
        m = rows["local_bsz"].to_numpy().astype(float)
        comp = (rows["step_time"] - rows["sync_time"]).to_numpy()
        sync = float(np.median(rows["sync_time"].to_numpy()))
        c = float(np.interp(plan.micro, m, comp))  # T_acc is affine in m
        if plan.micro > m[-1]:  # beyond the grid: compute grows linearly
            c = comp[-1] * plan.micro / m[-1]
        return float(step_with_accum(c + sync, sync, plan.accum))

    def seconds(self, job: DeclaredJobType, workers: int, batch: int, steps: int) -> float:
        per = self.step_time(job, workers, batch) * self.overhead.get(job.name, 1.3)
        return self.startup.get(job.name, 6.0) + steps * per

    def max_steps(self, job: DeclaredJobType, workers: int, batch: int, seconds: float) -> int:
        per = self.step_time(job, workers, batch) * self.overhead.get(job.name, 1.3)
        return int((seconds - self.startup.get(job.name, 6.0)) / per)


@dataclass
class RunRecord:
    """What happened to one planned run (kept in profile.json)."""

    run: CurveRun
    tier: str
    status: str = "pending"  # reached | capped | skipped | failed
    max_steps: int | None = None
    predicted_s: float | None = None
    wall_s: float = 0.0
    launches: int = 0
    table: pl.DataFrame | None = None


def startup_seconds(raw: pl.DataFrame) -> dict[str, float]:
    """Per type, median launch overhead of the timing runs: run wall minus step time."""
    per_run = raw.group_by("type", "workers", "local_bsz", "run").agg(
        (pl.col("run_wall").first() - pl.col("step_time").sum()).alias("overhead"))
    return dict(per_run.group_by("type").agg(pl.col("overhead").median()).iter_rows())


def curves_frame(records: Sequence[RunRecord], jobs: dict[str, DeclaredJobType]) -> pl.DataFrame:
    """Long form of all curves: validation columns + type, batch_size, workers, seed, reached."""
    frames = []
    for rec in records:
        if rec.table is None or rec.table.height == 0:
            continue
        job = jobs[rec.run.type]
        frames.append(rec.table.with_columns(
            pl.lit(rec.run.type).alias("type"), pl.lit(rec.run.batch_size).alias("batch_size"),
            pl.lit(rec.run.workers).alias("workers"), pl.lit(rec.run.seed).alias("seed"),
            reached_target(rec.table, job.target, job.higher_is_better).alias("reached")))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def records_summary(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One dict per planned run, for profile.json."""
    return [{"batch_size": r.run.batch_size, "workers": r.run.workers, "seed": r.run.seed,
             "tier": r.tier, "status": r.status, "max_steps": r.max_steps,
             "predicted_s": None if r.predicted_s is None else round(r.predicted_s, 1),
             "launches": r.launches, "wall_s": round(r.wall_s, 1),
             "rows": r.table.height if r.table is not None else 0} for r in records]
