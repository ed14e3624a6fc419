"""Sim-vs-live comparison for people: the CSV/JSON files, the figure and the
printed table of a :class:`coadapt.report.simlive.Comparison`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import polars as pl

from coadapt.report.simlive import BAND, LIVE_LABEL, SIM_LABEL, Comparison, unmatched_names

log = logging.getLogger(__name__)


def write_outputs(result: Comparison, out: str | Path, plots: bool = True) -> list[Path]:
    """``sim_vs_live.csv`` (per job), ``sim_vs_live_summary.csv`` (per policy),
    ``sim_vs_live.json`` and, unless ``plots`` is false, ``sim_vs_live.png``;
    each names the comparison's kind (a ``kind`` column, field or title)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "sim_vs_live.csv", out / "sim_vs_live_summary.csv", out / "sim_vs_live.json"]
    result.jobs.with_columns(pl.lit(result.kind).alias("kind")).write_csv(paths[0])
    pl.DataFrame(result.summary_rows(), infer_schema_length=None).write_csv(paths[1])
    paths[2].write_text(json.dumps(result.to_json(), indent=2) + "\n")
    if plots:
        try:
            paths.append(plot_comparison(result, out / "sim_vs_live.png"))
        except ImportError as exc:  # a figure is optional output, never a failure
            log.warning("plot skipped: %s", exc)
    return paths


def plot_comparison(result: Comparison, path: Path) -> Path:
    """Left: per-job JCT, live (x) against simulated (y), with y = x and a +-10%
    band. Right: mean JCT per policy, live and simulated side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    ok = result.jobs.filter(pl.col("status") == "matched").with_columns(
        (pl.col("jct_live") / 60).alias("live_min"), (pl.col("jct_sim") / 60).alias("sim_min"))
    if ok.height:
        data = {c: ok[c].to_numpy() for c in ("policy", "live_min", "sim_min")}
        sns.scatterplot(data=data, x="live_min", y="sim_min", hue="policy", ax=left, s=28,
                        alpha=0.8)
        lo = float(min(data["live_min"].min(), data["sim_min"].min()))
        hi = float(max(data["live_min"].max(), data["sim_min"].max()))
        log_axes = lo > 0 and hi / lo > 20
        grid = np.geomspace(lo / 1.3, hi * 1.3, 100) if log_axes else np.linspace(0, hi * 1.05, 100)
        left.fill_between(grid, grid * (1 - BAND), grid * (1 + BAND), color="grey", alpha=0.2,
                          lw=0, label=f"±{BAND:.0%}")
        left.plot(grid, grid, color="grey", lw=0.9, ls="--", label="y = x")
        if log_axes:
            left.set(xscale="log", yscale="log")
        left.set(xlim=(grid[0], grid[-1]), ylim=(grid[0], grid[-1]))  # square: y = x at 45 degrees
        left.legend(fontsize="small")
    left.set(xlabel="live JCT (min)", ylabel=f"{result.kind} JCT (min)",
             title=f"per-job JCT: {result.kind} vs live")
    other = side_label(result)
    bars = [(p.policy, side, v / 60) for p in result.policies
            for side, v in ((LIVE_LABEL, p.mean_jct_live), (other, p.mean_jct_sim))
            if v is not None]
    if bars:
        sns.barplot(data={"policy": np.array([b[0] for b in bars]),
                          "side": np.array([b[1] for b in bars]),
                          "mean_jct_min": np.array([b[2] for b in bars])},
                    x="policy", y="mean_jct_min", hue="side", hue_order=[LIVE_LABEL, other],
                    ax=right)
        right.legend(title=None, fontsize="small")
    right.set(xlabel="policy", ylabel="mean JCT (min, matched jobs)",
              title="mean JCT per policy")
    right.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"{result.kind_title} vs live", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- text


HEADERS = ["policy", "jobs", "mean JCT live", f"mean JCT {SIM_LABEL}", "mean-JCT err",
           "mean |err|", "median |err|", "bias", "makespan err"]


def side_label(result: Comparison) -> str:
    """The compared side's name in tables and figures: its kind."""
    return {"live": "other live", "simulation": SIM_LABEL}.get(result.kind, result.kind)


def _pct(v: float | None, signed: bool = True) -> str:
    if v is None:
        return "-"
    return f"{v:+.1%}" if signed else f"{v:.1%}"


def _minutes(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:.2f}"


def format_comparison(result: Comparison) -> str:
    """Fixed-width table (times in minutes, errors relative to live) plus the
    ranking line and any unmatched jobs, for a terminal after ``make live``."""
    other = side_label(result)
    headers = [h.replace(SIM_LABEL, other) for h in HEADERS]
    cells = [headers]
    for p in result.policies:
        jobs = str(p.matched) if not p.unmatched else f"{p.matched}/{p.matched + p.unmatched}"
        cells.append([p.policy, jobs, _minutes(p.mean_jct_live), _minutes(p.mean_jct_sim),
                      _pct(p.mean_jct_err), _pct(p.mean_abs_err, signed=False),
                      _pct(p.median_abs_err, signed=False), _pct(p.bias), _pct(p.makespan_err)])
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    kind, _, about = result.kind_title.partition(" ")
    lines = [f"{kind.upper()} {about}: {result.sim_dir}  vs  live: {result.live_dir}  "
             "(JCT in minutes over matched jobs; errors = (sim - live) / live)"]
    for i, row in enumerate(cells):
        lines.append("  ".join(v.ljust(w) if j == 0 else v.rjust(w)
                               for j, (v, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    r = result.ranking
    verdict = "same order" if r.same else "order differs"
    tau = "" if r.kendall_tau is None else f", Kendall tau {r.kendall_tau:.2f}"
    lines.append(f"ranking by mean JCT: live {' < '.join(r.live_order) or '-'}; "
                 f"{other} {' < '.join(r.sim_order) or '-'} ({verdict}{tau})")
    for p in result.policies:
        if p.unmatched:
            lines.append(f"{p.policy}: {unmatched_names(p)}")
    if result.only_sim or result.only_live:
        lines.append(f"not compared: only {other}: {', '.join(result.only_sim) or '-'}; "
                     f"only live: {', '.join(result.only_live) or '-'}")
    return "\n".join(lines)
