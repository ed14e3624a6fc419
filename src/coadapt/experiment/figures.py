"""The report's figures (``OUT/figures/*.png``), every one marked SIMULATED.

Each function draws one figure from tables (``stats.summary``, per-job
tables) or from a cell's events, and writes a placeholder that says what is
missing instead of failing, so the report's links stay valid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from coadapt.experiment.stats import ordered_policies, ordered_sets, ordered_tags
from coadapt.metrics import timeline
from coadapt.report import style
from coadapt.report.figures import allocations, draw_allocation, slot_colours
from coadapt.report.style import grid as _grid
from coadapt.report.style import palette as _palette
from coadapt.report.style import plain_log_ticks
from coadapt.report.style import save as _save
from coadapt.report.style import time_unit as _time_unit

Event = dict[str, Any]
SIM = "SIMULATED"
FIGURES = {
    "jct_means": "jct_means.png",
    "jct_cdf": "jct_cdf.png",
    "rho_cdf": "rho_cdf.png",
    "allocation": "allocation_timeline.png",
    "trajectories": "trajectories.png",
    "goodput": "goodput_small_multiples.png",
}


def prepare(figdir: Path) -> dict[str, Path]:
    """Create ``figdir``, set the plot style (``report.style``: one style for
    every report); the path of each figure in ``FIGURES``."""
    style.prepare(figdir)
    return {k: figdir / v for k, v in FIGURES.items()}


def placeholder(path: Path, title: str, message: str) -> Path:
    """A figure that says what is missing, so the report's links stay valid."""
    return style.placeholder(path, f"{SIM}: {title}", message)


def fig_jct_means(summary: pl.DataFrame, path: Path) -> Path:
    """Mean JCT (min) with its 95% bootstrap CI, per set (by load) and policy;
    one panel per network tag."""
    title = "SIMULATED: mean JCT per set and policy (95% bootstrap CI over seeds)"
    data = summary.filter(pl.col("avg_jct").is_not_null())
    if data.height == 0:
        return placeholder(path, "mean JCT", "no cell completed a job")
    tags = ordered_tags(data)
    policies = ordered_policies(data["policy"].to_list())
    pal = _palette(policies)
    fig, axes = _grid(len(tags), width=max(4.5, 1.3 * len(ordered_sets(data)) + 2))
    width = 0.8 / len(policies)
    for ax, tag in zip(axes, tags, strict=False):
        sub = data.filter(pl.col("tag") == tag)
        sets = ordered_sets(sub)
        pos = {s: i for i, (s, _) in enumerate(sets)}
        for k, p in enumerate(policies):
            rows = sub.filter(pl.col("policy") == p)
            if rows.height == 0:
                continue
            x = np.array([pos[s] for s in rows["set"]]) + (k - (len(policies) - 1) / 2) * width
            y = rows["avg_jct"].cast(pl.Float64).to_numpy() / 60
            lo = np.nan_to_num(y - rows["avg_jct_lo"].cast(pl.Float64).to_numpy() / 60, nan=0.0)
            hi = np.nan_to_num(rows["avg_jct_hi"].cast(pl.Float64).to_numpy() / 60 - y, nan=0.0)
            ax.errorbar(x, y, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], fmt="o", capsize=3,
                        color=pal[p], label=p, ms=5)
        ax.set_xticks(range(len(sets)),
                      [f"{s}\n(load {ld:.3g}x)" if ld is not None else s for s, ld in sets],
                      fontsize=8)
        ax.set(title=f"{tag} ({SIM})", ylabel="mean JCT (min, simulated)", xlabel="workload set")
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8, title="policy")
    return _save(fig, path, title)


def fig_cdf(jobs: pl.DataFrame, column: str, path: Path, xlabel: str, title: str,
            sets: list[tuple[str, float | None]], policies: list[str],
            missing: str, vline: float | None = None) -> Path:
    """Empirical CDF of ``column`` per policy, one panel per set, all seeds pooled."""
    data = jobs.filter(pl.col(column).is_not_null() & (pl.col(column) > 0)) \
        if jobs.height else jobs
    if data.height == 0:
        return placeholder(path, title, missing)
    pal = _palette(policies)
    fig, axes = _grid(len(sets), width=4.8)
    for ax, (s, ld) in zip(axes, sets, strict=False):
        sub = data.filter(pl.col("set") == s)
        if sub.height == 0:
            ax.text(0.5, 0.5, missing, ha="center", va="center", transform=ax.transAxes)
        else:
            present = [p for p in policies if p in set(sub["policy"].to_list())]
            sns.ecdfplot(data={"x": sub[column].to_numpy(), "policy": sub["policy"].to_numpy()},
                         x="x", hue="policy", hue_order=present, palette=pal, ax=ax,
                         log_scale=True)
            plain_log_ticks(ax.xaxis)
            if vline is not None:
                ax.axvline(vline, color="grey", lw=0.8, ls="--")
        load = f" (load {ld:.3g}x)" if ld is not None else ""
        ax.set(title=f"{s}{load}", xlabel=xlabel, ylabel="fraction of jobs")
    return _save(fig, path, f"{SIM}: {title}")


def fig_allocation(events: list[Event], path: Path, label: str) -> Path:
    """One horizontal bar per job (sorted by submission): its allocations over
    time coloured by replicas; pale where the job restarts (allocated, not yet
    running), a grey line while it waits (``report.figures.draw_allocation``)."""
    title = f"allocation timeline, {label}"
    jobs = allocations(events)
    if not any(j["alloc"] for j in jobs.values()):
        return placeholder(path, title, "no allocate events in the example log")
    end_t = max(e["t"] for e in events)
    unit, scale = _time_unit(end_t)
    max_r = max(max((a[1] for a in j["alloc"]), default=1) for j in jobs.values())
    cmap, norm, levels = slot_colours(max_r)
    height = min(max(3.0, 0.18 * len(jobs) + 1.8), 11.0)
    fig, ax = plt.subplots(figsize=(10, height))
    draw_allocation(ax, jobs, end_t, scale, cmap, norm)
    ax.set(xlabel=f"simulated time ({unit}); pale: restarting, grey line: waiting",
           ylabel="job (by submission)")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=norm)
    bar = fig.colorbar(sm, ax=ax, ticks=levels if len(levels) <= 16 else None, fraction=0.03,
                       pad=0.01)
    bar.set_label("replicas")
    return _save(fig, path, f"{SIM}: {title}")


def fig_trajectories(events: list[Event], path: Path, label: str, k: int = 5) -> Path:
    """Replicas and batch size over time for the ``k`` jobs whose allocation
    or batch changed most often (step plots, two stacked panels)."""
    title = f"replicas and batch size of the most re-adapted jobs, {label}"
    jobs = allocations(events)
    changes = {}
    for name, j in jobs.items():
        seq = [(r, b) for _, r, b in j["batch"]]
        changes[name] = sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b)
    pick = sorted((n for n in jobs if jobs[n]["batch"]),
                  key=lambda n: (-changes[n], jobs[n]["submit"], n))[:k]
    if not pick:
        return placeholder(path, title, "no allocations in the example log")
    end_t = max(e["t"] for e in events)
    unit, scale = _time_unit(end_t)
    pal = dict(zip(pick, sns.color_palette("tab10", n_colors=len(pick)), strict=True))
    fig, (ax_r, ax_b) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name in pick:
        j = jobs[name]
        stop = j["complete"] if j["complete"] is not None else end_t
        t = np.array([p[0] for p in j["batch"]] + [stop]) / scale
        r = np.array([p[1] for p in j["batch"]] + [j["batch"][-1][1]], dtype=float)
        b = np.array([p[2] if p[2] else np.nan for p in j["batch"]] + [np.nan], dtype=float)
        b[:-1][r[:-1] <= 0] = np.nan
        b[-1] = b[-2]
        lab = f"{name} ({changes[name]} changes)"
        ax_r.step(t, r, where="post", color=pal[name], label=lab)
        ax_b.step(t, b, where="post", color=pal[name])
    ax_r.set(ylabel="replicas")
    ax_r.legend(fontsize=7, ncols=2)
    ax_b.set(ylabel="batch size (global)", xlabel=f"simulated time ({unit})")
    return _save(fig, path, f"{SIM}: {title}")


def fig_goodput(runs: list[tuple[str, list[Event]]], path: Path, label: str) -> Path:
    """Cluster goodput over time, one panel per policy (shared axes)."""
    title = f"cluster goodput over time per policy, {label}"
    lines = [(p, timeline(ev)) for p, ev in runs]
    if not lines:
        return placeholder(path, title, "no logs for the example set and seed")
    end_t = max(float(tl["t"].max() or 0.0) for _, tl in lines)
    unit, scale = _time_unit(end_t)
    pal = _palette([p for p, _ in lines])
    fig, axes = _grid(len(lines), width=4.6, height=3.0, sharex=True, sharey=True)
    for ax, (p, tl) in zip(axes, lines, strict=False):
        t, g = tl["t"].to_numpy() / scale, tl["goodput"].to_numpy()
        ax.step(t, g, where="post", color=pal[p], lw=0.9)
        ax.fill_between(t, g, step="post", color=pal[p], alpha=0.25)
        ax.set(title=p, xlabel=f"simulated time ({unit})", ylabel="goodput (samples/s x eff.)")
    return _save(fig, path, f"{SIM}: {title}")
