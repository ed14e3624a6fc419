"""Comparison across policies: one table (CSV + Parquet) and plots."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

log = logging.getLogger(__name__)


def write_comparison(summaries: Sequence[dict[str, Any]], out: Path, plots: bool = True) -> Path:
    """``out/comparison.{csv,parquet}`` and, from each ``out/<policy>/events.jsonl``,
    seaborn plots of JCT, fairness and cluster goodput."""
    out.mkdir(parents=True, exist_ok=True)
    table = pl.DataFrame(list(summaries), infer_schema_length=None)
    table.write_csv(out / "comparison.csv")
    table.write_parquet(out / "comparison.parquet")
    if plots:
        try:
            from coadapt.report.plots import plot_runs

            plot_runs([out / s["policy"] for s in summaries], out)
        except ImportError as exc:  # plotting is optional output, never a failure
            log.warning("plots skipped: %s", exc)
    return out / "comparison.csv"
