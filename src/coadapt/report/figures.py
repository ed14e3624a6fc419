"""The figures of one run folder (``OUT/figures/*.png``), from its logs alone.

JCT CDF per policy; each job's slowdown rho against its T_iso; which job
held how many slots over time; cluster utilization over time; in a live
folder, each job's predicted JCT beside its live one. Policies keep the
table's order and colours; times are in the table's unit; every title says
SIMULATED or LIVE. A policy that finished no job gets an empty panel that
says so, never an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import BoundaryNorm, ListedColormap

from coadapt.report.runlog import RunLog
from coadapt.report.simlive_jobs import compare_policy
from coadapt.report.style import DPI, grid, palette, placeholder, plain_log_ticks, prepare, save
from coadapt.report.table import Unit

Event = dict[str, Any]
BAND = 0.10  # the +-10% band around predicted = live (report.simlive.BAND)


@dataclass(frozen=True)
class Figure:
    """A written figure and the caption report.md gives it."""

    path: Path
    caption: str


def _none(ax: Any, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")


def fig_jct_cdf(runs: Sequence[RunLog], path: Path, label: str, unit: Unit) -> Path:
    """Empirical CDF of the completed jobs' JCT, one line per policy."""
    title = f"{label}: JCT distribution per policy"
    parts = [(r.policy, r.jobs["jct"].drop_nulls().to_numpy() / unit.seconds)
             for r in runs if r.jobs.height and "jct" in r.jobs.columns]
    parts = [(p, v[v > 0]) for p, v in parts if (v > 0).any()]
    if not parts:
        return placeholder(path, title, "no policy completed a job")
    present = [p for p, _ in parts]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    sns.ecdfplot(data={"x": np.concatenate([v for _, v in parts]),
                       "policy": np.concatenate([[p] * len(v) for p, v in parts])},
                 x="x", hue="policy", hue_order=present, palette=palette([r.policy for r in runs]),
                 ax=ax, log_scale=True)
    plain_log_ticks(ax.xaxis)
    missing = [r.policy for r in runs if r.policy not in present]
    ax.set(xlabel=f"job completion time ({unit.short}, log scale)", ylabel="fraction of jobs",
           title="no completed job: " + ", ".join(missing) if missing else None)
    return save(fig, path, title)


def fig_slowdown(runs: Sequence[RunLog], path: Path, label: str, unit: Unit) -> Path:
    """Per job, its rho against its T_iso: one panel per policy, log-log, the
    line rho = 1 (as fast as its fair share allows)."""
    title = f"{label}: each job's slowdown rho = JCT / T_iso against T_iso"
    have = [r for r in runs if r.jobs.height and "rho" in r.jobs.columns
            and r.jobs["rho"].drop_nulls().len()]
    if not have:
        return placeholder(path, title, "no job has a rho: no fairness yardstick (T_iso) in "
                           "the logs, or no completed job")
    pal = palette([r.policy for r in runs])
    fig, axes = grid(len(runs), width=4.2, height=3.2, sharex=True, sharey=True)
    for ax, r in zip(axes, runs, strict=False):
        ax.set_title(r.policy)
        d = (r.jobs.filter(pl.col("rho").is_not_null() & (pl.col("rho") > 0))
             if r in have else pl.DataFrame())
        if d.height == 0:
            _none(ax, "no completed job with a T_iso")
            continue
        x, y = d["t_iso"].cast(pl.Float64).to_numpy() / unit.seconds, d["rho"].to_numpy()
        ax.scatter(x, y, s=16, color=pal[r.policy], alpha=0.8, edgecolor="none")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{r.policy} (max rho {y.max():.2f})")
    for ax in axes:
        ax.set(xscale="log", yscale="log", xlabel=f"T_iso ({unit.short})", ylabel="rho")
        ax.tick_params(labelbottom=True, labelleft=True)  # shared axes, numbers on every panel
        plain_log_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
    return save(fig, path, title)


def allocations(events: Iterable[Event]) -> dict[str, dict[str, Any]]:
    """Per job: submit, completion, its allocations in time order as
    (t, replicas, batch), the start times that followed them, and every
    (t, replicas, batch) change including batch changes in progress events.
    ``events`` may be a stream: each job keeps four fields per event it needs."""
    kept: dict[str, list[tuple[float, str, Any, Any]]] = defaultdict(list)
    for e in events:
        k = e["kind"]
        if e.get("job") and (k in _ALLOC_KINDS or k in ("progress", "epoch")
                             and e.get("batch") is not None):
            kept[e["job"]].append((e["t"], k, e.get("replicas"), e.get("batch")))
    jobs = {}
    for name, evs in kept.items():
        evs.sort(key=lambda x: x[0])
        j: dict[str, Any] = {"submit": None, "complete": None, "alloc": [], "starts": [],
                             "batch": []}
        for t, k, replicas, batch in evs:
            if k == "submit":
                j["submit"] = t
            elif k == "allocate":
                j["alloc"].append((t, int(replicas or 0), batch))
                j["batch"].append((t, int(replicas or 0), batch))
            elif k == "start":
                j["starts"].append(t)
            elif k == "complete":
                j["complete"] = t
            elif j["batch"]:  # progress or epoch with a batch
                j["batch"].append((t, j["batch"][-1][1], batch))
        if j["submit"] is not None:
            jobs[name] = j
    return jobs


_ALLOC_KINDS = frozenset({"submit", "allocate", "start", "complete"})


def slot_colours(max_slots: int) -> tuple[ListedColormap, BoundaryNorm, list[int]]:
    """A discrete colour per slot count 1..max_slots."""
    levels = list(range(1, max(max_slots, 1) + 1))
    cmap = ListedColormap(sns.color_palette("viridis", n_colors=len(levels)))
    return cmap, BoundaryNorm(np.arange(0.5, len(levels) + 1.5), cmap.N), levels


def draw_allocation(ax: Any, jobs: dict[str, dict[str, Any]], end_t: float, scale: float,
                    cmap: ListedColormap, norm: BoundaryNorm, labels: bool = True) -> list[str]:
    """One row per job (by submission): a grey line while it waits, bars
    coloured by its slots, pale while it (re)starts. Two collections per
    axis, not an artist per bar: a 7-policy figure of 30 jobs draws in a
    second. Returns the row order."""
    order = sorted(jobs, key=lambda n: (jobs[n]["submit"], n))
    top = norm.boundaries[-1] - 0.5
    waits, boxes, colours = [], [], []
    for y, name in enumerate(order):
        j = jobs[name]
        stop = j["complete"] if j["complete"] is not None else end_t
        first = j["alloc"][0][0] if j["alloc"] else stop
        waits.append([(j["submit"] / scale, y), (first / scale, y)])
        for i, (t, r, _b) in enumerate(j["alloc"]):
            t1 = j["alloc"][i + 1][0] if i + 1 < len(j["alloc"]) else stop
            if r <= 0 or t1 <= t:
                continue
            run = next((s for s in j["starts"] if t <= s < t1), t1)
            c = cmap(norm(min(r, top)))
            for a, b, colour in ((t, run, (*c[:3], 0.3)), (run, t1, c)):
                if b > a:
                    x0, x1 = a / scale, b / scale
                    boxes.append([(x0, y - 0.35), (x0, y + 0.35), (x1, y + 0.35), (x1, y - 0.35)])
                    colours.append(colour)
    ax.add_collection(LineCollection(waits, colors="0.6", linewidths=1))
    ax.add_collection(PolyCollection(boxes, facecolors=colours, edgecolors="none"))
    ax.set_xlim(0, end_t / scale)
    if labels and len(order) <= 40:
        ax.set_yticks(range(len(order)), order, fontsize=6)
    else:
        ax.set_yticks([])
    ax.set_ylim(len(order) - 0.5, -0.5)
    return order


def fig_allocation(runs: Sequence[RunLog], path: Path, label: str, unit: Unit) -> Path:
    """Which job held how many slots over time: one panel per policy, jobs as
    rows (the same rows in every panel: one workload), names on the left."""
    title = f"{label}: slots per job over time (pale: starting or restarting; grey: waiting)"
    per = [(r, allocations(r.stream())) for r in runs]
    if not any(j["alloc"] for _, jobs in per for j in jobs.values()):
        return placeholder(path, title, "no allocate events in the logs")
    end_t = max((r.tally.last_t for r in runs if r.tally.last_t is not None), default=1.0)
    max_r = max((a[1] for _, jobs in per for j in jobs.values() for a in j["alloc"]), default=1)
    cmap, norm, levels = slot_colours(max_r)
    n_jobs = max(len(jobs) for _, jobs in per)
    height = min(max(2.4, 0.11 * n_jobs + 1.0), 6.0)
    fig, axes = grid(len(per), width=6.5, height=height, ncols_max=2)
    for k, (ax, (r, jobs)) in enumerate(zip(axes, per, strict=False)):
        if not any(j["alloc"] for j in jobs.values()):
            _none(ax, "no allocations")
            ax.set_yticks([])
        else:
            draw_allocation(ax, jobs, end_t, unit.seconds, cmap, norm, labels=k % 2 == 0)
        ax.set(title=r.policy, xlabel=f"time ({unit.short})")
    fig.suptitle(title)
    # fixed margins, not tight_layout: measuring every job label twice doubles the time
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=1.3 / w, right=1 - 0.9 / w, bottom=0.55 / h, top=1 - 0.85 / h,
                        wspace=0.25, hspace=0.55 * 3 / height)
    bar = fig.colorbar(plt.cm.ScalarMappable(cmap=cmap, norm=norm),
                       cax=fig.add_axes((1 - 0.7 / w, 0.15, 0.15 / w, 0.7)),
                       ticks=levels if len(levels) <= 16 else None)
    bar.set_label("slots (replicas)")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def fig_utilization(runs: Sequence[RunLog], path: Path, label: str, unit: Unit) -> Path:
    """Share of the cluster's slots allocated over time, one panel per policy."""
    title = f"{label}: cluster utilization over time"
    pal = palette([r.policy for r in runs])
    fig, axes = grid(len(runs), width=4.2, height=2.6, sharex=True, sharey=True)
    for ax, r in zip(axes, runs, strict=False):
        tl = r.timeline
        slots = r.header.get("total_slots") or 1
        t, u = tl["t"].to_numpy() / unit.seconds, tl["used_slots"].to_numpy() / slots
        ax.step(t, u, where="post", color=pal[r.policy], lw=0.9)
        ax.fill_between(t, u, step="post", color=pal[r.policy], alpha=0.25)
        mean = r.summary.get("utilization")
        shown = f"{mean:.2f}" if isinstance(mean, float) and mean == mean else "-"
        ax.set(title=f"{r.policy} (mean {shown})", xlabel=f"time ({unit.short})",
               ylabel="share of slots allocated", ylim=(0, 1.05))
        ax.tick_params(labelbottom=True, labelleft=True)
    return save(fig, path, title)


def fig_predicted(live: Sequence[RunLog], predicted: Sequence[RunLog], path: Path,
                  unit: Unit) -> Path:
    """Each job's live JCT against its predicted (simulated before the run)
    one, per policy; the diagonal and a +-10% band."""
    title = "LIVE beside PREDICTED (simulated before the run): JCT per job"
    pred = {r.policy: r for r in predicted}
    rows = [compare_policy(r.policy, pred[r.policy].events, r.events)[1]
            for r in live if r.policy in pred]
    jobs = (pl.concat(rows).filter(pl.col("status") == "matched") if rows
            else pl.DataFrame())
    if jobs.height == 0:
        return placeholder(path, title, "no job finished both in the prediction and live")
    pal = palette([r.policy for r in live])
    fig, ax = plt.subplots(figsize=(6.2, 5.4))
    for p in [r.policy for r in live]:
        d = jobs.filter(pl.col("policy") == p)
        if d.height:
            ax.scatter(d["jct_sim"].to_numpy() / unit.seconds,
                       d["jct_live"].to_numpy() / unit.seconds, s=22, color=pal[p], label=p)
    hi = float(max(jobs["jct_sim"].max(), jobs["jct_live"].max())) / unit.seconds * 1.1
    x = np.array([0.0, hi])
    ax.plot(x, x, color="grey", lw=0.8)
    ax.fill_between(x, x * (1 - BAND), x * (1 + BAND), color="grey", alpha=0.15,
                    label=f"+-{BAND:.0%}")
    ax.set(xlim=(0, hi), ylim=(0, hi), xlabel=f"predicted JCT ({unit.short}, simulated)",
           ylabel=f"live JCT ({unit.short}, measured)")
    ax.legend(fontsize=7)
    return save(fig, path, title)


def write_figures(runs: Sequence[RunLog], figdir: Path, label: str, unit: Unit,
                  predicted: Sequence[RunLog] = ()) -> list[Figure]:
    """Every figure of the run into ``figdir``; ``label`` (SIMULATED or LIVE)
    leads each title. With ``predicted`` (a live folder's prediction logs)
    also the predicted-beside-live figure."""
    prepare(figdir)
    figs = [
        Figure(fig_jct_cdf(runs, figdir / "jct_cdf.png", label, unit),
               "JCT distribution per policy (empirical CDF, completed jobs)"),
        Figure(fig_slowdown(runs, figdir / "slowdown.png", label, unit),
               "Each job's slowdown rho = JCT / T_iso against its T_iso, per policy "
               "(dashed: rho = 1)"),
        Figure(fig_allocation(runs, figdir / "allocation.png", label, unit),
               "Allocation timeline: slots each job held over time, per policy"),
        Figure(fig_utilization(runs, figdir / "utilization.png", label, unit),
               "Cluster utilization (share of slots allocated) over time, per policy"),
    ]
    if predicted:
        figs.append(Figure(fig_predicted(runs, predicted, figdir / "predicted_vs_live.png", unit),
                           "Predicted (simulated before the run) beside live JCT, per job"))
    return figs
