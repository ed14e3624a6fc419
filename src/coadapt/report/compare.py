"""The comparison across policies as data: one row per policy (CSV + Parquet)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.report.runlog import RunLog, is_live, require_runs


def write_comparison(summaries: Sequence[dict[str, Any]], out: Path, plots: bool = False) -> Path:
    """``out/comparison.{csv,parquet}``, one row per summary; returns the CSV's
    path. ``plots`` also draws ``out/figures/`` (the run figures); usually
    ``report.markdown.write_run_report`` draws them with the report."""
    out.mkdir(parents=True, exist_ok=True)
    table = pl.DataFrame(list(summaries), infer_schema_length=None)
    table.write_csv(out / "comparison.csv")
    table.write_parquet(out / "comparison.parquet")
    if plots:
        from coadapt.report.figures import write_figures
        from coadapt.report.table import run_table

        runs = require_runs(out)
        write_figures(runs, out / "figures", "LIVE" if is_live(out, runs) else "SIMULATED",
                      run_table([r.summary for r in runs]).unit)
    return out / "comparison.csv"


def rebuild_results(out: Path, runs: Sequence[RunLog]) -> Path:
    """Per run jobs.csv and summary.json, and OUT/comparison.{csv,parquet},
    recomputed from the logs; the comparison's path."""
    for r in runs:
        r.jobs.write_csv(r.path.parent / "jobs.csv")
        (r.path.parent / "summary.json").write_text(json.dumps(r.summary, indent=2) + "\n")
    return write_comparison([r.summary for r in runs], out)
