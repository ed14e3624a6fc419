"""Timing grid: real worker groups over worker counts x local batch sizes.

How the timings are kept trustworthy on a small, shared, noisy machine:

* **Real jobs, real all-reduce.** Every cell launches the actual K-process gloo
  group (``coadapt.jobs.run_group``) and times optimizer steps as the job
  reports them: wall step time, all-reduce (sync) wall time and process CPU
  time, separately.
* **Warm-up discarded.** The first ``warmup`` steps of every run pay one-time
  costs (allocation, gloo connection, cold caches) and are dropped.
* **Medians, with spread.** A cell's value is the median over its kept steps;
  p25/p75/min/max and the range of per-run medians (``run_spread``) are kept so
  that a reader sees how noisy each number is.
* **Repeats in separate runs, interleaved.** Each cell is measured in
  ``repeats`` separate process groups. The schedule is repeat-major and the
  cells are shuffled inside every repeat, so a slow period of the machine (a
  neighbour's burst) lands on different cells in different repeats instead of
  biasing one configuration.
* **Other processes measured, and waited out.** Before each run the profiler
  waits (bounded) until other processes use less than half a core, and it
  records how many cores they used *during* the run (``others_cores``, from
  ``/proc/stat`` minus this process tree's own CPU time, see
  :mod:`coadapt.tools.measure.quiet`). Runs above the threshold are contended.
* **CPU time as a witness of contention.** Wall time per CPU second of a step
  is constant for a configuration on an idle machine; a run whose ratio is 25%
  above the cell's best run was slowed by someone else and is left out of the
  median when a clean run exists (see :func:`coadapt.tools.measure.stats.mark_contention`).
  The 1-minute load average at the start of every run is recorded as well.
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from coadapt.tools.measure.quiet import CpuSnapshot, others_cores, wait_for_quiet
from coadapt.tools.measure.stats import observations_frame
from coadapt.ui.progress import ProgressBar
from coadapt.world.jobtypes import DeclaredJobType

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cell:
    """One configuration to time: job type, worker count, per-worker batch."""

    type: str
    workers: int
    micro: int

    @property
    def batch_size(self) -> int:
        return self.workers * self.micro

    def label(self) -> str:
        return f"{self.type} K={self.workers} m={self.micro}"


@dataclass(frozen=True)
class GridSettings:
    """How much to measure. ``quick`` trades repeats and grid density for time."""

    local_sizes: int = 4
    repeats: int = 2
    steps: int = 8
    warmup: int = 3
    workers_max: int = os.cpu_count() or 1
    seed: int = 0
    quiet_wait: float = 15.0  # max seconds to wait for a quiet machine before a run
    quiet_threshold: float = 0.5  # cores used by others that make a run "contended"

    @classmethod
    def quick(cls, **kw: Any) -> GridSettings:
        return cls(**{"local_sizes": 2, "repeats": 1, "steps": 4, "warmup": 2,
                      "quiet_wait": 0.0, **kw})


# (cell, max_steps, seed, events path) -> observation events of one run
Runner = Callable[[Cell, int, int, Path], list[dict[str, Any]]]


def geometric_sizes(lo: int, hi: int, n: int) -> list[int]:
    """``n`` roughly geometric integers from ``lo`` to ``hi`` inclusive, deduplicated."""
    if hi <= lo or n <= 1:
        return [int(lo)] if n <= 1 or hi <= lo else [int(lo), int(hi)]
    return sorted({int(round(v)) for v in np.geomspace(lo, hi, n)})


def plan_cells(job: DeclaredJobType, settings: GridSettings) -> list[Cell]:
    """Worker counts 1..workers_max x geometric local batches within the type's limits.

    A local batch is kept only if the total batch K*m stays within the type's
    max batch size, as the job could never run that configuration.
    """
    lo, hi = job.limits.min_local_bsz, job.limits.max_local_bsz
    cells = []
    for k in range(1, max(settings.workers_max, 1) + 1):
        top = min(hi, job.limits.max_batch_size // k)
        if top < lo:
            continue
        cells += [Cell(job.name, k, m) for m in geometric_sizes(lo, top, settings.local_sizes)]
    return cells


def schedule(cells: Sequence[Cell], repeats: int, seed: int = 0) -> list[tuple[int, Cell]]:
    """Repeat-major, shuffled within each repeat: (repeat index, cell) in run order."""
    rng = random.Random(seed)
    order: list[tuple[int, Cell]] = []
    for r in range(repeats):
        batch = list(cells)
        rng.shuffle(batch)
        order += [(r, c) for c in batch]
    return order


def run_group_runner(cell: Cell, max_steps: int, seed: int, events: Path) -> list[dict[str, Any]]:
    """Run one real worker group for ``max_steps`` optimizer steps; return its events.

    A fresh checkpoint folder per run (next to the event file), and no verify
    pass: only the step timings are wanted here.
    """
    from coadapt.eventlog import read_events
    from coadapt.jobs import RunConfig, run_group

    ckpt = events.with_suffix(".ckpt")
    res = run_group(RunConfig(job_type=cell.type, workers=cell.workers,
                              batch_size=cell.batch_size, ckpt_dir=ckpt, events=events,
                              seed=seed, max_steps=max_steps, verify=False, timeout=600.0))
    if res.status == "preempted":  # the group took our SIGINT/SIGTERM: stop profiling
        raise KeyboardInterrupt(f"worker group stopped by a signal ({events})")
    if res.status == "failed":
        raise RuntimeError(f"{cell.label()}: worker group failed: {res.message} (logs in {ckpt})")
    return list(read_events(events))


def measure_cell(cell: Cell, repeat: int, settings: GridSettings, workdir: Path,
                 runner: Runner = run_group_runner, wait: float = 0.0) -> pl.DataFrame:
    """Time one run of one cell; raw rows (warm-up steps included, flagged by ``step``).

    Waits up to ``wait`` seconds for other processes to go quiet first, and
    records how many cores they used during the run (``others_cores``).
    """
    events = workdir / f"{cell.type}-k{cell.workers}-m{cell.micro}-r{repeat}.jsonl"
    t_wait = time.monotonic()
    if wait > 0:
        wait_for_quiet(settings.quiet_threshold, max_wait=wait)
    waited = time.monotonic() - t_wait
    load1 = os.getloadavg()[0]
    before = CpuSnapshot.take()
    obs = observations_frame(runner(cell, settings.warmup + settings.steps,
                                    settings.seed + repeat, events))
    after = CpuSnapshot.take()
    wall = after.wall - before.wall
    others = others_cores(before, after)
    if obs.height < settings.warmup + 1:
        raise RuntimeError(f"{cell.label()}: run {repeat} reported {obs.height} steps, "
                           f"need more than the {settings.warmup} warm-up steps ({events})")
    return obs.select("step", "step_time", "sync_time", "cpu_time").with_columns(
        pl.lit(cell.type).alias("type"),
        pl.lit(cell.workers).alias("workers"),
        pl.lit(cell.micro).alias("local_bsz"),
        pl.lit(repeat).alias("run"),
        pl.lit(round(load1, 2)).alias("load1"),
        pl.lit(round(wall, 3)).alias("run_wall"),
        pl.lit(None if others is None else round(others, 3), dtype=pl.Float64)
        .alias("others_cores"),
        pl.lit(round(waited, 2)).alias("quiet_wait"),
    )


def measure_grid(cells: Sequence[Cell], settings: GridSettings,
                 runner: Runner = run_group_runner, bar: ProgressBar | None = None,
                 workdir: str | Path | None = None, deadline: float | None = None,
                 max_total_wait: float = float("inf")) -> pl.DataFrame:
    """Run every cell ``settings.repeats`` times in interleaved order; tidy raw steps.

    Past ``deadline`` (a ``time.monotonic()`` value) only first runs are made, so
    a slow machine costs repeats, never cells; waiting for quiet stops once
    ``max_total_wait`` seconds were spent on it. Columns: type, workers,
    local_bsz, run, order (position in the schedule), step, step_time,
    sync_time, cpu_time, load1, run_wall, others_cores, quiet_wait.
    """
    order = schedule(cells, settings.repeats, settings.seed)
    frames = []
    skipped, failed, waited = 0, 0, 0.0
    with tempfile.TemporaryDirectory(prefix="coadapt-timing-") as tmp:
        wd = Path(workdir) if workdir is not None else Path(tmp)
        wd.mkdir(parents=True, exist_ok=True)
        for i, (repeat, cell) in enumerate(order):
            if repeat > 0 and deadline is not None and time.monotonic() > deadline:
                skipped += 1
                if bar is not None:
                    bar.advance(1.0)
                continue
            if bar is not None:
                bar.note(f"{cell.label()} run {repeat + 1}/{settings.repeats}")
            wait = min(settings.quiet_wait, max(max_total_wait - waited, 0.0))
            try:
                frame = measure_cell(cell, repeat, settings, wd, runner, wait=wait)
            except (RuntimeError, ValueError, OSError) as exc:  # one bad run, not the grid
                log.error("%s run %d failed: %s", cell.label(), repeat, exc)
                failed += 1
                if bar is not None:
                    bar.advance(1.0)
                continue
            waited += float(frame["quiet_wait"][0])
            frames.append(frame.with_columns(pl.lit(i).alias("order")))
            log.debug("%s run %d: median step %.4fs", cell.label(), repeat,
                      frame["step_time"].median())
            if bar is not None:
                bar.advance(1.0)
    if skipped:
        log.warning("timing grid: %d repeat runs skipped to keep to the time budget", skipped)
    if failed:
        log.error("timing grid: %d of %d runs failed", failed, len(order))
    if not frames:
        raise RuntimeError("timing grid: every run failed; see the errors above")
    raw = pl.concat(frames, how="vertical_relaxed")
    if waited:
        log.info("timing grid: waited %.0fs in total for other processes to go quiet", waited)
    return raw.select("type", "workers", "local_bsz", "run", "order", "step", "step_time",
                      "sync_time", "cpu_time", "load1", "run_wall", "others_cores",
                      "quiet_wait")
