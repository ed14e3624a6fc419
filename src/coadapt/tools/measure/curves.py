"""Runs to target: metric and gradient statistics along training at several batch sizes.

Each run trains one job type at a fixed total batch M until its validation
metric reaches the target, and becomes one ``validation-<M>.csv``: one row per
validation point, with cumulative progress (iterations at M0), optimizer steps,
samples, the metric and the gradient statistics at that point. Repeats with
different seeds show how much the gradient noise scale phi = M0*grad_var/grad_sqr
moves between runs, which bounds how precisely any scheduler can know it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from coadapt.tools.measure.stats import observations_frame
from coadapt.world.jobtypes import DeclaredJobType

log = logging.getLogger(__name__)

VALIDATION_COLUMNS = ["progress", "iteration", "metric", "grad_sqr", "grad_var",
                      "samples", "wall_time"]


@dataclass(frozen=True)
class CurveRun:
    """One run to target: job type, total batch, worker count, seed."""

    type: str
    batch_size: int
    workers: int
    seed: int

    def label(self) -> str:
        return f"{self.type} M={self.batch_size} K={self.workers} seed={self.seed}"


class CurveRunner(Protocol):
    """Train ``run`` for at most ``max_steps`` steps and ``seconds`` wall seconds
    (then checkpoint and stop), resuming its checkpoint if ``resume``, with an
    optional target override; returns all events of the run so far. Events go to
    ``base.jsonl``, the checkpoint to ``base.ckpt`` (kept for extensions)."""

    def __call__(self, run: CurveRun, max_steps: int | None, base: Path, resume: bool,
                 target: float | None, seconds: float | None = None,
                 ) -> list[dict[str, Any]]: ...


CORE_FACTORS = (1, 4, 16)
EXTRA_FACTORS = (2, 8, 32)


def curve_batch_sizes(job: DeclaredJobType, factors: Sequence[int] = CORE_FACTORS) -> list[int]:
    """M0 x factors, within max_batch_size (core: 1, 4, 16; full mode adds 2, 8, 32)."""
    m0, top = job.limits.init_batch_size, job.limits.max_batch_size
    return [m0 * f for f in factors if m0 * f <= top]


def curve_workers(job: DeclaredJobType, batch_size: int, workers_max: int) -> int:
    """Most workers (fastest run) that split M evenly within the local-batch limits.

    The statistics do not depend on K except through the estimator, which is
    better with K > 1 (no differencing of consecutive steps). Batches larger
    than K*max_local use gradient accumulation inside the job.
    """
    for k in range(max(workers_max, 1), 0, -1):
        if batch_size % k == 0 and batch_size // k >= job.limits.min_local_bsz:
            return k
    return 1


def run_group_curve_runner(run: CurveRun, max_steps: int | None, base: Path,
                           resume: bool = False, target: float | None = None,
                           seconds: float | None = None) -> list[dict[str, Any]]:
    """Train with the real worker group until the target (or ``max_steps``).

    ``resume`` continues the run from its checkpoint (same event file), and
    ``target`` overrides the job's target: an unreachable one extends a
    finished curve past its target. A failed group raises; a run cut by
    ``max_steps`` or by ``seconds`` (a graceful stop with a checkpoint) is
    returned as is (its curve then does not reach the target).
    """
    from coadapt.eventlog import read_events
    from coadapt.jobs import RunConfig, run_group

    events, ckpt = base.with_suffix(".jsonl"), base.with_suffix(".ckpt")
    res = run_group(RunConfig(job_type=run.type, workers=run.workers,
                              batch_size=run.batch_size, ckpt_dir=ckpt, events=events,
                              seed=run.seed, max_steps=max_steps, verify=False, resume=resume,
                              target=target, stop_after=seconds))
    if res.status == "preempted":  # the group took our SIGINT/SIGTERM: stop profiling
        raise KeyboardInterrupt(f"worker group stopped by a signal ({events})")
    if res.status == "failed":
        raise RuntimeError(f"{run.label()}: worker group failed: {res.message} (logs in {ckpt})")
    return list(read_events(events))


def validation_table(events: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """One row per validation event, joined to the optimizer step it followed.

    The join is on the step number the validation event carries (on time when
    it does not). ``grad_sqr``/``grad_var`` are the job's smoothed estimates at
    that step, the values the AdaptDL traces record per epoch; ``wall_time`` is
    seconds since the first event of the run.
    """
    obs = observations_frame(events)
    vals = [e for e in events if e.get("kind") == "validation"]
    if not vals or obs.height == 0:
        return pl.DataFrame(schema={c: pl.Float64 for c in VALIDATION_COLUMNS})
    t0 = min(float(e["t"]) for e in events if "t" in e)
    val = pl.DataFrame(
        {"vt": [float(e["t"]) for e in vals], "vprogress": [float(e["progress"]) for e in vals],
         "metric": [float(e["metric"]) for e in vals],
         "vstep": [e.get("step") for e in vals]}, schema_overrides={"vstep": pl.Int64},
    ).sort("vt")
    if val["vstep"].null_count() == 0 and "step" in obs.columns:
        obs = obs.with_columns(pl.col("step").cast(pl.Int64)).unique("step", keep="last")
        joined = val.join(obs, left_on="vstep", right_on="step", how="left", coalesce=False)
    elif "t" in obs.columns:
        obs = obs.with_columns(pl.col("t").cast(pl.Float64)).sort("t")
        joined = val.join_asof(obs, left_on="vt", right_on="t", strategy="backward")
    else:
        raise ValueError("validation events lack 'step' and observation events lack 't'")
    return joined.sort("vt").select(
        pl.col("vprogress").alias("progress"),
        pl.col("step").fill_null(0).cast(pl.Int64).alias("iteration"),
        "metric",
        pl.col("grad_sqr").cast(pl.Float64),
        pl.col("grad_var").cast(pl.Float64),
        pl.col("samples").fill_null(0).cast(pl.Int64),
        (pl.col("vt") - t0).alias("wall_time"),
    )


def reached_target(frame: pl.DataFrame, target: float | None,
                   higher_is_better: bool) -> pl.Series:
    """Boolean per row: the metric is at or beyond the target."""
    if target is None:
        return pl.Series("reached", [False] * frame.height)
    metric = frame["metric"]
    return (metric >= target) if higher_is_better else (metric <= target)


def to_target(frame: pl.DataFrame, target: float | None,
              higher_is_better: bool) -> dict[str, float] | None:
    """Samples, steps, progress and wall time at the first row that reaches target."""
    hit = frame.filter(reached_target(frame, target, higher_is_better))
    if hit.height == 0:
        return None
    row = hit.row(0, named=True)
    return {k: row[k] for k in ("samples", "iteration", "progress", "wall_time", "metric")}


def with_phi(frame: pl.DataFrame, init_batch_size: int) -> pl.DataFrame:
    """Add the gradient noise scale phi = M0 * grad_var / grad_sqr (null if sqr <= 0)."""
    phi = init_batch_size * pl.col("grad_var") / pl.col("grad_sqr")
    return frame.with_columns(
        pl.when(pl.col("grad_sqr") > 0).then(phi).otherwise(None).alias("phi"))
