"""``coadapt profile``: measure every job type on this machine and write ``profiles/``.

Two phases, each with a stderr progress bar: the timing grid (all types'
cells interleaved, see :mod:`coadapt.tools.measure.timing`) and the runs to
target (:mod:`coadapt.tools.measure.curves`). Then one folder per type is written
(:mod:`coadapt.world.profiles.cpu_format`) with two plots.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.tools.measure.build import build_profile
from coadapt.tools.measure.curve_plan import CurvePlanner
from coadapt.tools.measure.curve_records import (
    StepModel,
    curves_frame,
    records_summary,
    startup_seconds,
)
from coadapt.tools.measure.stats import drop_warmup, mark_contention, summarize_cells
from coadapt.tools.measure.timing import GridSettings, measure_grid, plan_cells, schedule
from coadapt.ui.progress import ProgressBar
from coadapt.world.profiles.cpu_format import write_cpu_profile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProfileSettings:
    """Everything that decides how long profiling takes and how precise it is."""

    grid: GridSettings
    seeds: int
    quick: bool
    budget_s: float
    plots: bool = True
    timing_share: float = 0.4  # of the budget, after which no repeat timing runs start


def job_types(names: list[str] | None = None) -> list[Any]:
    """Job types from the registry, in registry order, optionally filtered by name."""
    from coadapt.jobs.registry import JOB_TYPES

    by_name = dict(JOB_TYPES)
    if not names:
        return list(by_name.values())
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"--types: unknown job type(s) {', '.join(unknown)}; "
                         f"known: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def settings_from_args(args: argparse.Namespace) -> ProfileSettings:
    workers_max = args.workers_max or os.cpu_count() or 1
    grid = GridSettings.quick() if args.quick else GridSettings()
    grid = replace(grid, workers_max=workers_max)
    if args.repeats:
        grid = replace(grid, repeats=args.repeats)
    seeds = args.seeds if args.seeds else (1 if args.quick else 3)
    budget = args.budget if args.budget else (4.5 if args.quick else 43.0)
    return ProfileSettings(grid=grid, seeds=seeds, quick=args.quick, budget_s=budget * 60.0,
                           plots=not args.no_plots)


def run_profile(jobs: list[Any], settings: ProfileSettings, out: Path) -> dict[str, Path]:
    """Measure, build and write one profile folder per job type."""
    grid = settings.grid
    begin = time.monotonic()
    cells = [c for job in jobs for c in plan_cells(job, grid)]
    n_runs = len(schedule(cells, grid.repeats))
    log.info("timing grid: %d cells x %d repeats = %d runs (%d+%d steps each)",
             len(cells), grid.repeats, n_runs, grid.warmup, grid.steps)
    with ProgressBar(total=n_runs, items=n_runs, label="timing", unit="runs") as bar:
        raw = measure_grid(cells, grid, bar=bar,
                           deadline=begin + settings.budget_s * settings.timing_share,
                           max_total_wait=settings.budget_s * 0.1)
    kept = mark_contention(drop_warmup(raw, grid.warmup))
    summary = summarize_cells(kept)
    timing_wall = time.monotonic() - begin
    log.info("timing grid done in %.0fs", timing_wall)

    model = StepModel(summary, startup=startup_seconds(raw))
    curve_budget = max(settings.budget_s - timing_wall - 10.0, 30.0)
    planner = CurvePlanner(jobs, model, curve_budget, settings.quick, settings.seeds,
                           grid.workers_max)
    log.info("runs to target: budget %.0fs", curve_budget)
    started = time.monotonic()
    with ProgressBar(total=curve_budget, label="to-target", unit="runs", timed=True) as bar:
        try:
            records = planner.execute(bar=bar)
        except KeyboardInterrupt:  # keep the timing grid and the curves measured so far
            log.warning("interrupted: writing the profiles measured so far")
            records = planner.records
    curves_wall = time.monotonic() - started
    curves = curves_frame(records, {j.name: j for j in jobs})
    log.info("runs to target done in %.0fs", curves_wall)

    written = {}
    for job in jobs:
        mine = pl.col("type") == job.name
        meta_settings = {**asdict(grid), "seeds": settings.seeds, "quick": settings.quick,
                         "budget_s": settings.budget_s, "timing_wall_s": round(timing_wall, 1),
                         "curves_wall_s": round(curves_wall, 1)}
        job_curves = curves.filter(mine) if curves.height else curves
        runs = records_summary([r for r in records if r.run.type == job.name])
        profile = build_profile(job, kept.filter(mine), summary.filter(mine), job_curves,
                                meta_settings, runs)
        folder = write_cpu_profile(out / job.name, profile)
        if settings.plots:
            _plots(folder, summary.filter(mine), job_curves, profile.meta.limits.init_batch_size,
                   profile.meta.target)
        written[job.name] = folder
        log.info("wrote %s", folder)
    return written


def _plots(folder: Path, summary: pl.DataFrame, curves: pl.DataFrame, m0: int,
           target: float | None) -> None:
    from coadapt.tools.measure.plots import plot_efficiency, plot_throughput

    try:
        plot_throughput(summary, folder / "throughput.png", f"{folder.name}: throughput")
        if curves.height:
            plot_efficiency(curves, m0, folder / "efficiency.png", f"{folder.name}: noise scale",
                            target)
    except Exception as exc:  # a plot must never cost the measurements
        log.warning("%s: plotting failed: %s", folder.name, exc)


def handler(args: argparse.Namespace) -> int:
    """Entry point of ``coadapt profile``; returns the process exit code."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    # profiling runs for minutes: its own progress logs show by default (-v not needed)
    prof_log = logging.getLogger("coadapt.tools.measure")
    if prof_log.getEffectiveLevel() > logging.INFO:
        prof_log.setLevel(logging.INFO)
    # the worker groups log every launch at INFO; the progress bar already says what runs
    logging.getLogger("coadapt.jobs").setLevel(logging.WARNING)
    names = [n.strip() for n in args.types.split(",") if n.strip()] if args.types else None
    try:
        jobs = job_types(names)
        for flag in ("repeats", "seeds", "workers_max", "budget"):
            value = getattr(args, flag)
            if value is not None and value <= 0:
                raise ValueError(f"--{flag.replace('_', '-')}: must be positive, got {value}")
    except ValueError as exc:
        print(f"coadapt profile: {exc}", file=sys.stderr)
        return 2
    settings = settings_from_args(args)
    started = time.monotonic()
    log.info("profiling %s (%s mode) into %s", ", ".join(j.name for j in jobs),
             "quick" if settings.quick else "full", args.out)
    out = Path(args.out)
    if settings.quick:
        full = [j.name for j in jobs if _is_full_profile(out / j.name)]
        if full:
            log.warning("quick mode overwrites full profiles in %s: %s (use another --out "
                        "to keep them)", out, ", ".join(full))
    written = run_profile(jobs, settings, out)
    log.info("profile done in %.0fs: %s", time.monotonic() - started,
             ", ".join(str(p) for p in written.values()))
    unusable = [name for name, folder in written.items() if not list(folder.glob("validation-*"))]
    if unusable:
        log.error("no runs to target for %s: the simulator cannot load these profiles",
                  ", ".join(unusable))
    return 1 if unusable or len(written) < len(jobs) else 0


def _is_full_profile(folder: Path) -> bool:
    try:
        doc = json.loads((folder / "profile.json").read_text(encoding="utf-8"))
        return doc.get("timing", {}).get("quick") is False
    except (OSError, ValueError):
        return False


def register(subparsers: Any) -> None:
    """Add ``coadapt profile`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "profile", help="measure job types on this machine and write profiles/",
        description="Time the real CPU jobs over worker counts x batch sizes and run them "
                    "to target at several batch sizes; write profiles/<type>/.",
        epilog="examples:\n  coadapt profile --quick --out out/profiles-quick   # < 5 min\n"
        "  coadapt profile --types mlp-mnist1d --quick --out out/profiles-mlp\n"
        "  coadapt profile                                    # the full run, ~45 min: "
        "rewrites profiles/\n", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="2 batch sizes per worker count, 1 repeat, 1 seed (< 5 min)")
    p.add_argument("--types", default=None, help="comma-separated job types (default: all)")
    p.add_argument("--out", default="profiles", help="output folder (default: profiles)")
    p.add_argument("--repeats", type=int, default=None,
                   help="separate runs per timing cell (default: 2, quick 1)")
    p.add_argument("--workers-max", type=int, default=None,
                   help="largest worker count to time (default: os.cpu_count())")
    p.add_argument("--seeds", type=int, default=None,
                   help="runs to target per batch size (default: 3, quick 1)")
    p.add_argument("--budget", type=float, default=None,
                   help="wall-clock budget in minutes; runs to target are capped to fit "
                        "(default: 43, quick 4.5)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.set_defaults(func=handler)
