"""Budgeted runs to target: which runs, in what order, and how many steps each may take.

Runs to target dominate profiling time, and their cost differs by orders of
magnitude between job types (seconds for the digits jobs, many minutes for the
text jobs at 16 x M0). A fixed wall-clock budget is split into tiers, most
important first: the core batch sizes (M0, 4M0, 16M0, seed 0), extending
finished curves so every batch size has as many validation rows as the
longest one (the simulator aligns rows by index), extra seeds at the core
sizes (phi spread), extra batch sizes (2M0, 8M0, 32M0). Tier deadlines are
cumulative, so time a tier leaves unused flows to the next. Inside a tier the
cheapest runs go first and each run may use an equal share of the time left
until the tier's deadline, enforced by capping its optimizer steps with the
step time measured in the timing grid. A capped run keeps its curve and is
marked as not having reached the target: nothing is extrapolated.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from coadapt.profiling.curves import (
    CORE_FACTORS,
    EXTRA_FACTORS,
    CurveRun,
    CurveRunner,
    curve_batch_sizes,
    curve_workers,
    reached_target,
    run_group_curve_runner,
    validation_table,
)
from coadapt.profiling.progress import ProgressBar

log = logging.getLogger(__name__)

FULL_TIERS = (("core", 0.55), ("extend", 0.12), ("seeds", 0.18), ("extra", 0.10),
              ("extend-extra", 0.05))
QUICK_TIERS = (("core", 0.8), ("extend", 0.2))


@dataclass
class StepModel:
    """Seconds per optimizer step at (type, workers, batch), from the timing grid medians."""

    summary: pl.DataFrame
    startup: dict[str, float] = field(default_factory=dict)
    overhead: dict[str, float] = field(default_factory=dict)  # wall / sum(step), learned

    def step_time(self, job: Any, workers: int, batch: int) -> float:
        from coadapt.jobs.types import plan_batch

        plan = plan_batch(job, workers, batch)
        rows = self.summary.filter((pl.col("type") == job.name) & (pl.col("workers") == workers))
        if rows.height == 0:
            return 1.0
        rows = rows.sort("local_bsz")
        m = rows["local_bsz"].to_numpy().astype(float)
        comp = (rows["step_time"] - rows["sync_time"]).to_numpy()
        sync = float(np.median(rows["sync_time"].to_numpy()))
        c = float(np.interp(plan.local_bsz, m, comp))  # T_acc is affine in m
        if plan.local_bsz > m[-1]:  # beyond the grid: compute grows linearly
            c = comp[-1] * plan.local_bsz / m[-1]
        return (plan.accum_steps + 1) * c + sync

    def seconds(self, job: Any, workers: int, batch: int, steps: int) -> float:
        per = self.step_time(job, workers, batch) * self.overhead.get(job.name, 1.3)
        return self.startup.get(job.name, 6.0) + steps * per

    def max_steps(self, job: Any, workers: int, batch: int, seconds: float) -> int:
        per = self.step_time(job, workers, batch) * self.overhead.get(job.name, 1.3)
        return int((seconds - self.startup.get(job.name, 6.0)) / per)


@dataclass
class RunRecord:
    """What happened to one planned run (kept in profile.json)."""

    run: CurveRun
    tier: str
    status: str = "pending"  # reached | capped | skipped | failed
    max_steps: int | None = None
    wall_s: float = 0.0
    launches: int = 0
    table: pl.DataFrame | None = None


def startup_seconds(raw: pl.DataFrame) -> dict[str, float]:
    """Per type, median launch overhead of the timing runs: run wall minus step time."""
    per_run = raw.group_by("type", "workers", "local_bsz", "run").agg(
        (pl.col("run_wall").first() - pl.col("step_time").sum()).alias("overhead"))
    return dict(per_run.group_by("type").agg(pl.col("overhead").median()).iter_rows())


class CurvePlanner:
    """Execute the tiers within ``budget_s`` seconds (see module docstring)."""

    def __init__(self, jobs: Sequence[Any], model: StepModel, budget_s: float, quick: bool,
                 seeds: int, workers_max: int, runner: CurveRunner = run_group_curve_runner,
                 workdir: str | Path | None = None) -> None:
        self.jobs = {j.name: j for j in jobs}
        self.model, self.budget, self.quick = model, budget_s, quick
        self.seeds, self.workers_max, self.runner = seeds, workers_max, runner
        self.records: list[RunRecord] = []
        self._workdir = workdir

    def _tasks(self, tier: str) -> list[RunRecord]:
        recs = []
        for job in self.jobs.values():
            if tier in ("core", "seeds"):
                sizes = curve_batch_sizes(job, CORE_FACTORS)
            elif tier == "extra":
                sizes = curve_batch_sizes(job, EXTRA_FACTORS)
            else:
                continue
            seeds = range(1, self.seeds) if tier == "seeds" else [0]
            for seed in seeds:
                for m in sizes:
                    run = CurveRun(job.name, m, curve_workers(job, m, self.workers_max), seed)
                    recs.append(RunRecord(run, tier))
        cost = {n: self.model.step_time(j, 1, j.init_batch_size) for n, j in self.jobs.items()}
        return sorted(recs, key=lambda r: (r.run.seed, cost[r.run.type], r.run.batch_size))

    def execute(self, bar: ProgressBar | None = None) -> list[RunRecord]:
        tiers = QUICK_TIERS if self.quick else FULL_TIERS
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="coadapt-curves-") as tmp:
            self.dir = Path(self._workdir) if self._workdir else Path(tmp)
            self.dir.mkdir(parents=True, exist_ok=True)
            cum = 0.0
            for tier, frac in tiers:
                cum += frac
                deadline = start + self.budget * cum
                if tier.startswith("extend"):
                    self._extend(deadline, bar)
                    continue
                todo = self._tasks(tier)
                for i, rec in enumerate(todo):
                    share = (deadline - time.monotonic()) / (len(todo) - i)
                    self._run(rec, share, bar)
                    self.records.append(rec)
        return self.records

    def _base(self, run: CurveRun) -> Path:
        return self.dir / f"{run.type}-M{run.batch_size}-s{run.seed}"

    def _run(self, rec: RunRecord, share: float, bar: ProgressBar | None) -> None:
        job, run = self.jobs[rec.run.type], rec.run
        steps = self.model.max_steps(job, run.workers, run.batch_size, share)
        # a useful curve has at least 2 validation rows (1 in quick mode); progress per
        # step is at most S, so this is a lower bound on the steps that takes
        rows = 1 if self.quick else 2
        min_steps = math.ceil(job.eval_every * rows / (run.batch_size / job.init_batch_size))
        if rec.tier == "core" and run.batch_size == job.init_batch_size:
            steps = max(steps, min_steps)  # never skip M0: without it no profile loads
        if steps < min_steps:
            rec.status = "skipped"
            log.warning("%s: skipped, its share of the time budget (%.0fs) is too small",
                        run.label(), max(share, 0.0))
            return
        if bar is not None:
            bar.note(f"{run.label()} (<= {steps} steps)")
        t0 = time.monotonic()
        try:
            events = self.runner(run, steps, self._base(run), False, None)
        except (RuntimeError, ValueError, OSError) as exc:  # one bad run, not the profile
            rec.status = "failed"
            rec.wall_s = time.monotonic() - t0
            log.error("%s failed: %s", run.label(), exc)
        else:
            self._account(rec, events, time.monotonic() - t0, steps)
        if bar is not None:
            bar.advance(1.0)

    def _account(self, rec: RunRecord, events: list[dict[str, Any]], wall: float,
                 steps: int) -> None:
        job = self.jobs[rec.run.type]
        rec.table = validation_table(events)
        rec.wall_s += wall
        rec.launches += 1
        rec.max_steps = steps if rec.max_steps is None else rec.max_steps + steps
        reached = bool(reached_target(rec.table, job.target, job.higher_is_better).any())
        rec.status = "reached" if reached else "capped"
        stepped = sum(e["step_time"] for e in events if e.get("kind") == "observation")
        if stepped > 0 and rec.launches == 1:
            ratio = (wall - self.model.startup.get(job.name, 6.0)) / stepped
            old = self.model.overhead.get(job.name)
            ratio = min(max(ratio, 1.0), 3.0)
            self.model.overhead[job.name] = ratio if old is None else 0.5 * (old + ratio)
        log.info("%s: %s after %d steps, %d validation rows, %.0fs", rec.run.label(),
                 rec.status, sum(1 for e in events if e.get("kind") == "observation"),
                 rec.table.height, wall)

    def _extend(self, deadline: float, bar: ProgressBar | None) -> None:
        """Continue finished seed-0 curves (past their target) to the longest one's rows."""
        todo = []
        for name in self.jobs:
            mine = [r for r in self.records if r.run.type == name and r.run.seed == 0
                    and r.table is not None and r.table.height]
            rows = max((r.table.height for r in mine), default=0)
            # validation fires when progress crosses a multiple of eval_every: aim a third
            # of an interval past the last crossing, so an estimated gain lands inside it
            goal = (rows + 1 / 3) * float(self.jobs[name].eval_every)
            todo += [(r, goal) for r in mine if r.status == "reached" and r.table.height < rows]
        for i, (rec, goal) in enumerate(todo):
            job, run = self.jobs[rec.run.type], rec.run
            share = (deadline - time.monotonic()) / (len(todo) - i)
            prog, its = rec.table["progress"].to_numpy(), rec.table["iteration"].to_numpy()
            tail = slice(-2, None) if len(prog) > 1 else slice(None)
            gain = max(float(np.ptp(prog[tail]) / max(np.ptp(its[tail]), 1)), 1.0)
            need = math.ceil((goal - prog[-1]) / gain)  # recent progress per step
            steps = min(need, self.model.max_steps(job, run.workers, run.batch_size, share))
            if steps < need:
                log.warning("%s: extension to %d rows skipped (budget)", run.label(),
                            rec.table.height)
                continue
            if bar is not None:
                bar.note(f"extend {run.label()} (+{steps} steps)")
            never = 1e9 if job.higher_is_better else -1e9
            t0 = time.monotonic()
            try:
                events = self.runner(run, steps, self._base(run), True, never)
            except (RuntimeError, ValueError, OSError) as exc:  # keep the curve we have
                log.error("extending %s failed: %s", run.label(), exc)
                continue
            self._account(rec, events, time.monotonic() - t0, steps)
            rec.status = "reached"



def curves_frame(records: Sequence[RunRecord], jobs: dict[str, Any]) -> pl.DataFrame:
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
             "launches": r.launches, "wall_s": round(r.wall_s, 1),
             "rows": r.table.height if r.table is not None else 0} for r in records]
