"""Seaborn figures from event logs: JCT CDF, fairness, cluster goodput."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import seaborn as sns  # noqa: E402

from coadapt.eventlog import read_events  # noqa: E402
from coadapt.metrics import job_table, timeline  # noqa: E402


def plot_runs(run_dirs: Sequence[Path], out: Path) -> list[Path]:
    """One PNG per figure in ``out``; each run dir holds events.jsonl."""
    jobs, lines = [], []
    for d in run_dirs:
        events = list(read_events(d / "events.jsonl"))
        policy = d.name
        jobs.append(job_table(events).with_columns(pl.lit(policy).alias("policy")))
        lines.append(timeline(events).with_columns(pl.lit(policy).alias("policy")))
    all_lines = pl.concat(lines, how="diagonal_relaxed")
    # Minutes for CPU-sized runs, hours for the Pollux study's day-long ones.
    unit, scale = ("h", 3600.0) if all_lines["t"].max() >= 4 * 3600 else ("min", 60.0)
    jt = _columns(pl.concat(jobs, how="diagonal_relaxed").drop_nulls("jct").with_columns(
        (pl.col("jct") / scale).alias("jct_h")))
    tl = _columns(all_lines.with_columns((pl.col("t") / scale).alias("t_h")))
    sns.set_theme(style="whitegrid", context="paper")
    paths = []

    fig, ax = plt.subplots(figsize=(6, 4))
    sns.ecdfplot(data=jt, x="jct_h", hue="policy", ax=ax, log_scale=True)
    ax.set(xlabel=f"job completion time ({unit}, log scale)", ylabel="fraction of jobs",
           title="JCT distribution (simulated)" if _simulated(run_dirs) else "JCT distribution")
    paths.append(_save(fig, out / "jct_cdf.png"))

    rho = jt["rho"].astype(float)
    if (rho == rho).any():
        fig, ax = plt.subplots(figsize=(6, 4))
        keep = rho == rho
        sns.ecdfplot(x=rho[keep], hue=jt["policy"][keep], ax=ax, log_scale=True)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set(xlabel="finish-time fairness rho = JCT / T_iso (log)", ylabel="fraction of jobs")
        paths.append(_save(fig, out / "fairness_cdf.png"))

    fig, axes = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    sns.lineplot(data=tl, x="t_h", y="goodput", hue="policy", drawstyle="steps-post",
                 ax=axes[0], lw=0.8)
    axes[0].set(ylabel="cluster goodput")
    sns.lineplot(data=tl, x="t_h", y="used_slots", hue="policy", drawstyle="steps-post",
                 ax=axes[1], lw=0.8, legend=False)
    axes[1].set(xlabel=f"time ({unit})", ylabel="slots in use")
    paths.append(_save(fig, out / "goodput_timeline.png"))
    return paths


def _columns(df: pl.DataFrame) -> dict:
    """Plain numpy columns: seaborn takes a dict, no pandas/pyarrow needed."""
    return {c: df[c].to_numpy() for c in df.columns}


def _simulated(run_dirs: Sequence[Path]) -> bool:
    for d in run_dirs:
        for e in read_events(d / "events.jsonl"):
            return e.get("mode") == "simulate"
    return False


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
