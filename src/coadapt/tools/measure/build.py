"""Assemble a :class:`CpuProfile` from measured timings and runs to target.

Kept apart from the measuring code so the whole derivation (medians, fitted
throughput model, samples to target, phi along training) can be re-run and
tested on stored data without training anything.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import polars as pl

from coadapt.tools.measure.curves import reached_target, to_target, with_phi
from coadapt.tools.measure.stats import placements_frame, spread_report
from coadapt.world.jobtypes import DeclaredJobType
from coadapt.world.profiles.cpu_format import CpuProfile, JobMeta, machine_info

log = logging.getLogger(__name__)


def job_meta(job: DeclaredJobType) -> JobMeta:
    """What ``profile.json`` records of a declared job type."""
    return JobMeta(name=job.name, limits=job.limits, target=job.target,
                   higher_is_better=job.higher_is_better, eval_every=job.eval_every,
                   dataset_size=job.dataset_size, metric=job.metric)


def fit_perf(summary: pl.DataFrame) -> dict[str, float] | None:
    """Pollux throughput parameters fitted to the cell medians (single node)."""
    from coadapt.models.goodput import fit_perf_params

    if summary.height < 2:
        return None
    workers = summary["workers"].to_numpy().astype(float)
    perf = fit_perf_params(np.ones_like(workers), workers,
                           summary["local_bsz"].to_numpy().astype(float),
                           summary["step_time"].to_numpy(), summary["sync_time"].to_numpy())
    return perf.to_dict()


def _phi_points(frame: pl.DataFrame, target: float | None, higher: bool) -> dict[str, float]:
    """phi at the first, middle and last validation point up to the target."""
    done = to_target(frame, target, higher)
    upto = frame.filter(pl.col("iteration") <= done["iteration"]) if done else frame
    phi = upto["phi"].to_numpy()
    if phi.size == 0:
        return {}
    return {"start": float(phi[0]), "middle": float(phi[(phi.size - 1) // 2]),
            "end": float(phi[-1])}


def curve_summary(curves: pl.DataFrame, meta: JobMeta) -> dict[str, Any]:
    """Per batch size: samples/steps/wall to target and phi along training, over seeds."""
    if curves.height == 0:
        return {}
    curves = with_phi(curves, meta.limits.init_batch_size)
    out: dict[str, Any] = {}
    for (bsz,), group in sorted(curves.group_by("batch_size"), key=lambda kv: kv[0][0]):
        per_seed = []
        for (seed,), run in sorted(group.group_by("seed"), key=lambda kv: kv[0][0]):
            run = run.sort("iteration")
            done = to_target(run, meta.target, meta.higher_is_better)
            per_seed.append({"seed": int(seed), "reached": done is not None,
                             **(done or {}), "validations": run.height,
                             "phi": _phi_points(run, meta.target, meta.higher_is_better)})
        entry: dict[str, Any] = {"runs": per_seed}
        for key in ("samples", "iteration", "wall_time"):
            vals = [r[key] for r in per_seed if key in r]
            if vals:
                entry[f"{key}_to_target"] = {"median": float(np.median(vals)),
                                             "min": float(min(vals)), "max": float(max(vals))}
        # phi spread over repeats compares like with like: runs that reached the target
        # (start, middle row, target row); capped runs only when none reached it
        reached = [r for r in per_seed if r["reached"]]
        basis = reached or per_seed
        entry["phi_from"] = f"{len(basis)} {'reached' if reached else 'capped'} run(s)"
        for where in ("start", "middle", "end"):
            vals = [r["phi"][where] for r in basis if where in r["phi"]]
            if vals:
                entry[f"phi_{where}"] = {"median": float(np.median(vals)),
                                         "min": float(min(vals)), "max": float(max(vals))}
        out[str(int(bsz))] = entry
    return out


def build_profile(job: DeclaredJobType, raw: pl.DataFrame, summary: pl.DataFrame, curves: pl.DataFrame,
                  settings: dict[str, Any], runs: list[dict[str, Any]] | None = None,
                  ) -> CpuProfile:
    """Everything for ``profiles/<type>/``; ``raw`` are the kept steps of this type."""
    meta = job_meta(job)
    placements = placements_frame(summary)
    if curves.height and "reached" not in curves.columns:
        curves = curves.with_columns(
            reached_target(curves, meta.target, meta.higher_is_better).alias("reached"))
    validation, capped = select_validation(curves)
    try:
        perf = fit_perf(summary)
    except Exception as exc:  # a failed fit must not lose an hour of measurements
        log.warning("%s: fit_perf_params failed: %s", meta.name, exc)
        perf = None
    cells = summary.select(
        "workers", "local_bsz", "step_time", "step_time_p25", "step_time_p75", "step_time_min",
        "step_time_max", "cpu_time", "cpu_time_p25", "cpu_time_p75", "sync_time",
        "sync_time_p25", "sync_time_p75", "stretch", "run_spread", "repeats", "runs_contended",
    ).to_dicts()
    info = {
        "machine": machine_info(),
        "perf_params": perf,
        "timing": {**settings, "spread": spread_report(summary),
                   "cells": [{k: (round(v, 6) if isinstance(v, float) else v)
                              for k, v in c.items()} for c in cells]},
        "curves": {"by_batch_size": curve_summary(curves, meta), "runs": runs or []},
        "validation_seed": int(curves["seed"].min()) if curves.height else None,
        "validation_capped": capped,
    }
    timings = raw.drop("type") if "type" in raw.columns else raw
    long = None
    if curves.height:
        long = with_phi(curves, meta.limits.init_batch_size).drop("type", strict=False).sort(
            "batch_size", "seed", "iteration")
    return CpuProfile(meta, placements, validation, info, timings, curves=long)


def select_validation(curves: pl.DataFrame) -> tuple[dict[int, pl.DataFrame], dict[str, str]]:
    """The seed-0 curves become ``validation-<M>.csv``; also which of them are capped.

    A curve cut short by the time budget is kept: its gradient statistics at
    that batch size are real measurements, and AppProfile holds its last
    metric past its end, so the simulator treats the batch size as completing
    no earlier than the longest curve (the AdaScale assumption of a constant
    progress to target) instead of interpolating from other batch sizes.
    """
    if curves.height == 0:
        return {}, {}
    canonical = curves.filter(pl.col("seed") == curves["seed"].min())
    runs = {int(b): g.sort("iteration") for (b,), g in canonical.group_by("batch_size")}
    cols = ["progress", "iteration", "metric", "grad_sqr", "grad_var", "samples", "wall_time"]
    capped = {str(b): f"target not reached in {g.height} validation rows (time budget)"
              for b, g in sorted(runs.items()) if not g["reached"].any()}
    return {b: g.select(cols) for b, g in runs.items() if g.height}, capped

