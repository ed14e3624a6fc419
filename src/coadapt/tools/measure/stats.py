"""Robust statistics over raw step timings: warm-up discard, contention, medians, spread.

Pure polars on the tidy frame of raw steps (one row per measured optimizer
step, keyed by ``type, workers, local_bsz, run``), so that the statistics are
testable without running any training and re-computable from ``timings.csv``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

CELL = ["type", "workers", "local_bsz"]
OBS_FIELDS = ["step", "step_time", "sync_time", "cpu_time", "local_bsz", "accum_steps",
              "batch_size", "workers", "grad_sqr", "grad_var", "progress", "samples"]


def observations_frame(events: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """The ``observation`` events of an event stream as a frame (one row per step).

    If several ranks report the same step, the slowest rank's times are kept:
    a synchronous data-parallel step is only as fast as its slowest worker.
    """
    rows = [e for e in events if e.get("kind") == "observation"]
    if not rows:
        return pl.DataFrame(schema={f: pl.Float64 for f in OBS_FIELDS})
    frame = pl.DataFrame(rows, infer_schema_length=None)
    keep = [c for c in [*OBS_FIELDS, "t", "rank"] if c in frame.columns]
    frame = frame.select(keep)
    if "rank" in frame.columns and frame["rank"].n_unique() > 1:
        others = [c for c in keep if c not in ("step", "rank", "step_time", "sync_time",
                                               "cpu_time", "t")]
        frame = frame.group_by("step", maintain_order=True).agg(
            pl.col("step_time").max(), pl.col("sync_time").max(), pl.col("cpu_time").max(),
            pl.col("t").max() if "t" in keep else pl.lit(None).alias("t"),
            *[pl.col(c).filter(pl.col("rank") == pl.col("rank").min()).first() for c in others],
        )
    return frame.sort("step")


def drop_warmup(raw: pl.DataFrame, warmup: int) -> pl.DataFrame:
    """Discard the first ``warmup`` steps of every run.

    They pay one-time costs that a long-running job does not: page faults of
    fresh allocations, lazy kernel and gloo connection setup, cold caches.
    """
    nth = pl.col("step").rank("ordinal").over([*CELL, "run"])
    return raw.filter(nth > warmup)


def mark_contention(raw: pl.DataFrame, tolerance: float = 1.25,
                    others_max: float = 0.5) -> pl.DataFrame:
    """Flag runs that were slowed down by other processes, using CPU time as a witness.

    ``stretch = step_time / cpu_time``: wall seconds per CPU second the worker
    actually got. For a given configuration on an otherwise idle machine it is
    constant (below 1 when gloo burns CPU while it waits for its peer, above 1
    when it sleeps); when another process steals the core, wall time grows but
    CPU time does not, so stretch grows. A run whose median stretch exceeds
    ``tolerance`` x the best run of the same cell is marked ``contended``, and
    so is a run during which other processes used more than ``others_max``
    cores on average (column ``others_cores``, when present). The relative test
    catches a slow period inside a cell; the absolute one catches a machine
    that was busy for every run of it.
    """
    stretch = pl.col("step_time") / pl.col("cpu_time").clip(1e-9)
    out = raw.with_columns(stretch.alias("stretch"))
    run_stretch = pl.col("stretch").median().over([*CELL, "run"])
    contended = run_stretch > tolerance * run_stretch.min().over(CELL)
    if "others_cores" in out.columns:
        contended = contended | (pl.col("others_cores").fill_null(0.0) > others_max)
    return out.with_columns(contended.alias("contended"))


def _q(col: str, q: float) -> pl.Expr:
    return pl.col(col).quantile(q, interpolation="linear")


def summarize_cells(raw: pl.DataFrame) -> pl.DataFrame:
    """One row per cell: medians of the kept steps and their spread.

    Contended runs are left out when the cell has at least one clean run.
    ``run_spread`` is (max - min) of per-run medians over the cell median: how
    much the machine's state between runs moved the number, as opposed to
    step-to-step jitter inside a run (``p25``/``p75``).
    """
    if "contended" not in raw.columns:
        raw = mark_contention(raw)
    clean_exists = (~pl.col("contended")).any().over(CELL)
    kept = raw.filter(~pl.col("contended") | ~clean_exists)
    run_medians = kept.group_by([*CELL, "run"]).agg(pl.col("step_time").median().alias("rm"))
    spread = run_medians.group_by(CELL).agg(
        ((pl.col("rm").max() - pl.col("rm").min()) / pl.col("rm").median()).alias("run_spread")
    )
    runs = raw.group_by(CELL).agg(
        pl.col("run").n_unique().alias("runs_total"),
        pl.col("run").filter(pl.col("contended")).n_unique().alias("runs_contended"),
    )
    summary = kept.group_by(CELL).agg(
        pl.col("step_time").median(),
        pl.col("sync_time").median(),
        pl.col("cpu_time").median(),
        _q("step_time", 0.25).alias("step_time_p25"),
        _q("step_time", 0.75).alias("step_time_p75"),
        pl.col("step_time").min().alias("step_time_min"),
        pl.col("step_time").max().alias("step_time_max"),
        _q("cpu_time", 0.25).alias("cpu_time_p25"),
        _q("cpu_time", 0.75).alias("cpu_time_p75"),
        _q("sync_time", 0.25).alias("sync_time_p25"),
        _q("sync_time", 0.75).alias("sync_time_p75"),
        pl.col("stretch").median(),
        *([pl.col("others_cores").median()] if "others_cores" in raw.columns else []),
        pl.col("run").n_unique().alias("repeats"),
        pl.len().alias("steps"),
    )
    return (summary.join(spread, on=CELL).join(runs, on=CELL)
            .with_columns(pl.min_horizontal("sync_time", "step_time").alias("sync_time"))
            .sort(CELL))


def placements_frame(summary: pl.DataFrame) -> pl.DataFrame:
    """AdaptDL-style ``placements.csv`` rows for one job type (single node: placement = K)."""
    return summary.select(
        pl.col("workers").cast(pl.String).alias("placement"),
        pl.col("local_bsz").cast(pl.Int64),
        "step_time", "sync_time", "cpu_time", "step_time_p25", "step_time_p75",
        pl.col("repeats").cast(pl.Int64),
    ).sort("placement", "local_bsz")


def spread_report(summary: pl.DataFrame) -> dict[str, Any]:
    """Machine-readable summary of timing quality for ``profile.json``."""
    iqr = (pl.col("step_time_p75") - pl.col("step_time_p25")) / pl.col("step_time")
    agg = summary.select(
        iqr.median().alias("median_rel_iqr"),
        iqr.max().alias("max_rel_iqr"),
        pl.col("run_spread").median().alias("median_run_spread"),
        pl.col("run_spread").max().alias("max_run_spread"),
        pl.col("stretch").median().alias("median_stretch"),
        *([pl.col("others_cores").max().alias("max_others_cores")]
          if "others_cores" in summary.columns else []),
        pl.col("runs_contended").sum().alias("runs_contended"),
        pl.col("runs_total").sum().alias("runs_total"),
        pl.col("steps").sum().alias("steps_kept"),
    ).to_dicts()[0]
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in agg.items()}
