"""``OUT/report.md`` and ``OUT/figures/*.png`` for an experiment grid.

Everything here is simulated, and every figure and the report say so: the
numbers come from the SimPy engine replaying workloads on profiles, not from
a cluster. Tables come from ``stats`` (means over seeds, paired ratios, goals);
the distribution and timeline figures read the cells' gzip'd event logs with
the same metrics code (``coadapt.metrics``) every other stage uses.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from coadapt.experiment.stats import ablation as ablation_table  # noqa: E402
from coadapt.experiment.stats import coverage_check, ordered_policies, tag_bandwidth  # noqa: E402
from coadapt.metrics import job_table, timeline  # noqa: E402

log = logging.getLogger(__name__)
Event = dict[str, Any]
DPI = 110
SIM = "SIMULATED"
FIGURES = {
    "jct_means": "jct_means.png",
    "jct_cdf": "jct_cdf.png",
    "rho_cdf": "rho_cdf.png",
    "allocation": "allocation_timeline.png",
    "trajectories": "trajectories.png",
    "goodput": "goodput_small_multiples.png",
}


# ------------------------------------------------------------------- reading
def read_log(path: Path) -> list[Event] | None:
    """A cell's events (gzip'd or plain JSON Lines); None when the log is
    missing or unreadable. A truncated last line is skipped."""
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, EOFError) as exc:
        log.warning("log %s unreadable: %s", path, exc)
        return None
    events = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            log.warning("log %s: line %d is not JSON; log skipped", path, i + 1)
            return None
    return events


def _tags(df: pl.DataFrame) -> list[str]:
    """Tags in numeric bandwidth order."""
    if df.height == 0:
        return []
    bw = pl.col("bandwidth") if "bandwidth" in df.columns else pl.lit(None, dtype=pl.Float64)
    t = df.group_by("tag").agg(bw.first().alias("bandwidth")).with_columns(
        pl.coalesce(pl.col("bandwidth").cast(pl.Float64),
                    pl.col("tag").map_elements(tag_bandwidth, return_dtype=pl.Float64)))
    return t.sort(["bandwidth", "tag"], nulls_last=True)["tag"].to_list()


def _sets(df: pl.DataFrame) -> list[tuple[str, float | None]]:
    """(set, load) in load order."""
    if df.height == 0:
        return []
    s = df.group_by("set").agg(pl.col("load").first()).sort(["load", "set"], nulls_last=True)
    return list(s.iter_rows())


def pick_example(results: pl.DataFrame, example: dict | None = None) -> dict | None:
    """The cell the timeline figures show: the rows matching ``example``'s
    key/tag/set/seed/policy fields (a row dict works); by default, and for
    fields left open, Pollux on the first tag's most contended set at its
    first seed."""
    if results.height == 0:
        return None
    cand = results
    for k in ("key", "tag", "set", "seed", "policy"):
        if example and k in example and example[k] is not None and k in cand.columns:
            narrowed = cand.filter(pl.col(k) == example[k])
            if narrowed.height == 0:
                log.warning("no cell has %s=%r; example chosen without it", k, example[k])
                continue
            cand = narrowed
    pols = ordered_policies(cand["policy"].unique().to_list())
    policy = "pollux" if "pollux" in pols else pols[-1]
    cand = cand.filter(pl.col("policy") == policy)
    tag = _tags(cand)[0]
    cand = cand.filter(pl.col("tag") == tag).sort(["load", "set", "seed"], descending=[True, False, False],
                                                 nulls_last=True)
    return cand.row(0, named=True)


# ----------------------------------------------------------------- plotting
def _palette(policies: Sequence[str]) -> dict[str, Any]:
    return dict(zip(policies, sns.color_palette("colorblind", n_colors=max(len(policies), 1)),
                    strict=False))


def _grid(n: int, width: float = 5.0, height: float = 3.6, ncols_max: int = 3, **kw: Any):
    ncols = max(1, min(n, ncols_max))
    nrows = max(1, math.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, **kw)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:max(n, 1)]


def _save(fig: plt.Figure, path: Path, title: str) -> Path:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _placeholder(path: Path, title: str, message: str) -> Path:
    """A figure that says what is missing, so the report's links stay valid."""
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return _save(fig, path, f"{SIM}: {title}")


def _time_unit(span_s: float) -> tuple[str, float]:
    return ("h", 3600.0) if span_s > 6 * 3600 else ("min", 60.0)


def fig_jct_means(summary: pl.DataFrame, path: Path) -> Path:
    """Mean JCT (min) with its 95% bootstrap CI, per set (by load) and policy;
    one panel per network tag."""
    title = "SIMULATED: mean JCT per set and policy (95% bootstrap CI over seeds)"
    data = summary.filter(pl.col("avg_jct").is_not_null())
    if data.height == 0:
        return _placeholder(path, "mean JCT", "no cell completed a job")
    tags = _tags(data)
    policies = ordered_policies(data["policy"].to_list())
    pal = _palette(policies)
    fig, axes = _grid(len(tags), width=max(4.5, 1.3 * len(_sets(data)) + 2))
    width = 0.8 / len(policies)
    for ax, tag in zip(axes, tags, strict=False):
        sub = data.filter(pl.col("tag") == tag)
        sets = _sets(sub)
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
        return _placeholder(path, title, missing)
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
            plain = FuncFormatter(lambda v, _pos: f"{v:g}")
            ax.xaxis.set_major_formatter(plain)
            ax.xaxis.set_minor_formatter(plain)
            ax.tick_params(axis="x", which="minor", labelsize=6)
            if vline is not None:
                ax.axvline(vline, color="grey", lw=0.8, ls="--")
        load = f" (load {ld:.3g}x)" if ld is not None else ""
        ax.set(title=f"{s}{load}", xlabel=xlabel, ylabel="fraction of jobs")
    return _save(fig, path, f"{SIM}: {title}")


def _allocations(events: list[Event]) -> dict[str, dict[str, Any]]:
    """Per job: submit, completion, and its allocations in time order as
    (t, replicas, batch), with the start times that followed them."""
    jobs: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"submit": None, "complete": None, "alloc": [], "starts": [], "batch": []})
    for e in sorted((e for e in events if e.get("job")), key=lambda e: e["t"]):
        j, k = jobs[e["job"]], e["kind"]
        if k == "submit":
            j["submit"] = e["t"]
        elif k == "allocate":
            j["alloc"].append((e["t"], int(e.get("replicas") or 0), e.get("batch")))
            j["batch"].append((e["t"], int(e.get("replicas") or 0), e.get("batch")))
        elif k == "start":
            j["starts"].append(e["t"])
        elif k in ("progress", "epoch") and e.get("batch") is not None and j["batch"]:
            j["batch"].append((e["t"], j["batch"][-1][1], e["batch"]))
        elif k == "complete":
            j["complete"] = e["t"]
    return {k: v for k, v in jobs.items() if v["submit"] is not None}


def fig_allocation(events: list[Event], path: Path, label: str) -> Path:
    """One horizontal bar per job (sorted by submission): its allocations over
    time coloured by replicas; pale where the job restarts (allocated, not yet
    running), a grey line while it waits."""
    title = f"allocation timeline, {label}"
    jobs = _allocations(events)
    if not any(j["alloc"] for j in jobs.values()):
        return _placeholder(path, title, "no allocate events in the example log")
    end_t = max(e["t"] for e in events)
    unit, scale = _time_unit(end_t)
    order = sorted(jobs, key=lambda n: (jobs[n]["submit"], n))
    max_r = max(max((a[1] for a in j["alloc"]), default=1) for j in jobs.values())
    levels = list(range(1, max(max_r, 1) + 1))
    cmap = ListedColormap(sns.color_palette("viridis", n_colors=len(levels)))
    norm = BoundaryNorm(np.arange(0.5, len(levels) + 1.5), cmap.N)
    height = min(max(3.0, 0.18 * len(order) + 1.8), 11.0)
    fig, ax = plt.subplots(figsize=(10, height))
    for y, name in enumerate(order):
        j = jobs[name]
        stop = j["complete"] if j["complete"] is not None else end_t
        first = j["alloc"][0][0] if j["alloc"] else stop
        ax.hlines(y, j["submit"] / scale, first / scale, color="0.6", lw=1)
        for i, (t, r, _b) in enumerate(j["alloc"]):
            t1 = j["alloc"][i + 1][0] if i + 1 < len(j["alloc"]) else stop
            if r <= 0 or t1 <= t:
                continue
            run = next((s for s in j["starts"] if t <= s < t1), t1)
            color = cmap(norm(min(r, len(levels))))
            if run > t:
                ax.barh(y, (run - t) / scale, left=t / scale, height=0.7, color=color, alpha=0.3)
            if t1 > run:
                ax.barh(y, (t1 - run) / scale, left=run / scale, height=0.7, color=color)
    if len(order) <= 40:
        ax.set_yticks(range(len(order)), order, fontsize=7)
    ax.invert_yaxis()
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
    jobs = _allocations(events)
    changes = {}
    for name, j in jobs.items():
        seq = [(r, b) for _, r, b in j["batch"]]
        changes[name] = sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b)
    pick = sorted((n for n in jobs if jobs[n]["batch"]),
                  key=lambda n: (-changes[n], jobs[n]["submit"], n))[:k]
    if not pick:
        return _placeholder(path, title, "no allocations in the example log")
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
        return _placeholder(path, title, "no logs for the example set and seed")
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


# -------------------------------------------------------------------- tables
def _fmt(v: Any, spec: str = "{:.2f}") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float | int | np.floating | np.integer):
        return spec.format(v)
    return str(v)


def markdown_table(df: pl.DataFrame, formats: dict[str, str] | None = None) -> str:
    """A GitHub markdown table of ``df`` (nulls as '–', floats per ``formats``
    or 2 decimals, '|' escaped)."""
    formats = formats or {}
    if df.width == 0:
        return ""
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
    for row in df.iter_rows():
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            spec = formats.get(c, "{}" if isinstance(v, int) and not isinstance(v, bool)
                               else "{:.2f}")
            cells.append(_fmt(v, spec).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ci(v: float | None, lo: float | None, hi: float | None, scale: float = 1.0,
        spec: str = "{:.2f}", n: int | None = None) -> str:
    """'v [lo, hi]'; no interval from a single seed (it would be a point)."""
    if v is None or not math.isfinite(v):
        return "–"
    s = spec.format(v / scale)
    finite = lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi)
    if (n is None or n >= 2) and finite:
        s += f" [{spec.format(lo / scale)}, {spec.format(hi / scale)}]"
    return s


def summary_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The report's view of the summary: times in minutes, CIs in brackets."""
    rows = []
    for r in summary.iter_rows(named=True):
        rows.append({
            "network": r["tag"], "set": r["set"], "load": _fmt(r["load"], "{:.3g}"),
            "policy": r["policy"], "seeds": r["seeds"],
            "mean JCT min [95% CI]": _ci(r["avg_jct"], r["avg_jct_lo"], r["avg_jct_hi"], 60.0,
                                         "{:.2f}", r["seeds"]),
            "p99 JCT min": _fmt(None if r["p99_jct"] is None else r["p99_jct"] / 60, "{:.2f}"),
            "util": _fmt(r["utilization"]),
            "max rho mean (worst)": ("–" if r["max_rho"] is None else
                                     f"{r['max_rho']:.2f} ({_fmt(r['max_rho_worst'])})"),
            "vs fixed [CI]": _ci(r["vs_fixed"], r["vs_fixed_lo"], r["vs_fixed_hi"],
                                 n=r["vs_fixed_n"]),
            "vs dynamic [CI]": _ci(r["vs_dynamic"], r["vs_dynamic_lo"], r["vs_dynamic_hi"],
                                   n=r["vs_dynamic_n"]),
            "wait s": _fmt(r["wait_mean"], "{:.1f}"),
            "run s": _fmt(r["run_mean"], "{:.1f}"),
            "of it start/restart s": _fmt(r.get("delay_mean"), "{:.1f}"),
            "modeled": _fmt(r["modeled_frac"]),
        })
    return pl.DataFrame(rows)


def goals_table(goals: pl.DataFrame) -> pl.DataFrame:
    rows = [{"network": g["tag"], "set": g["set"], "goal": g["goal"],
             "target": _fmt(g["target"]), "value [CI]": _ci(g["value"], g["value_lo"],
                                                           g["value_hi"]),
             "result": "met" if g["met"] else "**missed**"} for g in goals.iter_rows(named=True)]
    return pl.DataFrame(rows)


# -------------------------------------------------------------------- report
def _job_tables(out: Path, rows: pl.DataFrame) -> pl.DataFrame:
    """Per-job JCT (min) and rho of the given cells, tagged with set/policy/seed."""
    parts = []
    for r in rows.iter_rows(named=True):
        events = read_log(out / r["log"]) if r.get("log") else None
        if not events:
            continue
        jt = job_table(events)
        if jt.height == 0:
            continue
        for c in ("jct", "rho"):
            if c not in jt.columns:
                jt = jt.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
        parts.append(jt.select(
            (pl.col("jct").cast(pl.Float64) / 60).alias("jct_min"),
            pl.col("rho").cast(pl.Float64)).with_columns(
            pl.lit(r["set"]).alias("set"), pl.lit(r["policy"]).alias("policy"),
            pl.lit(r["seed"]).alias("seed")))
    if not parts:
        return pl.DataFrame(schema={"jct_min": pl.Float64, "rho": pl.Float64, "set": pl.String,
                                    "policy": pl.String, "seed": pl.Int64})
    return pl.concat(parts, how="vertical_relaxed")


def write_report(out: Path, results: pl.DataFrame, summary: pl.DataFrame, goals: pl.DataFrame,
                 example: dict | None = None) -> Path:
    """Write ``out/report.md`` and its six figures in ``out/figures``; returns
    the report's path. Missing logs, fairness events, policies or seeds give a
    placeholder figure or a '–', never an error."""
    out = Path(out)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid", context="paper")
    paths = {k: figdir / v for k, v in FIGURES.items()}
    tags = _tags(results)
    policies = ordered_policies(results["policy"].to_list()) if results.height else []

    fig_jct_means(summary, paths["jct_means"])

    first = results.filter(pl.col("tag") == tags[0]) if tags else results
    jobs = _job_tables(out, first)
    sets = _sets(first)
    where = f"network {tags[0]}, all seeds pooled" if tags else ""
    fig_cdf(jobs, "jct_min", paths["jct_cdf"], "JCT (min, log scale)",
            f"JCT distribution per policy ({where})", sets, policies,
            "no completed jobs")
    fig_cdf(jobs, "rho", paths["rho_cdf"], "finish-time fairness rho = JCT / T_iso (log)",
            f"rho distribution per policy ({where})", sets, policies,
            "no fairness (rho) data in the logs", vline=1.0)

    ex = pick_example(results, example)
    label = (f"{ex['policy']} on {ex['set']}, seed {ex['seed']}, {ex['tag']}" if ex else "")
    ex_events = read_log(out / ex["log"]) if ex and ex.get("log") else None
    if ex_events:
        fig_allocation(ex_events, paths["allocation"], label)
        fig_trajectories(ex_events, paths["trajectories"], label)
    else:
        for k, what in (("allocation", "allocation timeline"), ("trajectories", "trajectories")):
            _placeholder(paths[k], what, "no example cell log")
    runs: list[tuple[str, list[Event]]] = []
    if ex:
        same = results.filter((pl.col("tag") == ex["tag"]) & (pl.col("set") == ex["set"])
                              & (pl.col("seed") == ex["seed"]))
        for p in ordered_policies(same["policy"].to_list()):
            row = same.filter(pl.col("policy") == p).row(0, named=True)
            ev = ex_events if row.get("log") == ex.get("log") else (
                read_log(out / row["log"]) if row.get("log") else None)
            if ev:
                runs.append((p, ev))
    gp_label = f"{ex['set']}, seed {ex['seed']}, {ex['tag']}" if ex else ""
    fig_goodput(runs, paths["goodput"], gp_label)

    text = _markdown(results, summary, goals, tags, policies, label, paths)
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return report


def _markdown(results: pl.DataFrame, summary: pl.DataFrame, goals: pl.DataFrame,
              tags: list[str], policies: list[str], example: str,
              paths: dict[str, Path]) -> str:
    n = results.height
    sets = _sets(results)
    seeds = sorted(results["seed"].unique().to_list()) if n else []
    bw = dict(results.select("tag", "bandwidth").unique().iter_rows()) if n else {}
    jobs = int(results["jobs"].sum() or 0) if n and "jobs" in results.columns else 0
    done = int(results["completed"].sum() or 0) if n and "completed" in results.columns else 0
    wall = float(results["wall_s"].sum() or 0.0) if n and "wall_s" in results.columns else 0.0
    set_list = ", ".join(s if ld is None else f"{s} (load {ld:.3g}x)" for s, ld in sets)
    nets = ", ".join(f"{t} ({_fmt(bw.get(t), '{:g}')} Gbit/s)" for t in tags)
    lines = [
        "# coadapt experiment report (SIMULATED)", "",
        f"**All numbers and figures in this report are {SIM}**: the SimPy engine replayed "
        "each workload on the job types' profiles (cross-node all-reduce from the declared "
        "network model where it was not measured); nothing here was measured on a cluster.", "",
        "## What was run", "",
        f"- workload sets: {set_list or '–'}",
        f"- policies: {', '.join(policies) or '–'}",
        f"- seeds: {', '.join(map(str, seeds)) or '–'}",
        f"- networks: {nets or '–'}",
        f"- cells: {n}; simulated jobs: {jobs} ({done} completed); "
        f"simulation wall time {_fmt(wall, '{:.0f}')} s summed over cells",
    ]
    if n and {"jobs", "completed"} <= set(results.columns):
        short = results.filter(pl.col("completed") < pl.col("jobs")).height
        if short:
            lines.append(f"- **{short} cell(s) did not complete every job**: their JCTs cover "
                         "completed jobs only")
    lines += ["", "## Summary (mean over seeds)", "",
              "JCT ratios are per-seed ratios of average JCT to the baseline on the same "
              "workload draw, averaged over seeds; < 1 is faster. `modeled` is the share of "
              "slot-time on placements whose speed was not measured.", ""]
    lines.append(markdown_table(summary_table(summary)) if summary.height else "(no cells)")
    lines += ["", "## Goals", ""]
    if goals.height:
        met = int(goals["met"].sum())
        lines += [f"{met} of {goals.height} goals met (point estimates; the interval shows "
                  "how firm each call is).", "", markdown_table(goals_table(goals))]
    else:
        lines.append("No goal applies: Pollux and its baselines did not both run.")
    abl = ablation_table(summary) if summary.height else pl.DataFrame()
    if abl.height:
        lines += ["", "## Ablation: Pollux's halves", "",
                  "avg JCT ratios (paired by seed) of adapting only the batch size, only the "
                  "worker count, and both.", "",
                  markdown_table(abl.drop("bandwidth").rename({"tag": "network"}),
                                 {"load": "{:.3g}"})]
    lines += ["", "## How firm the intervals are", "", _coverage_sentence(summary)]
    lines += ["", "## Figures", ""]
    captions = {
        "jct_means": "Mean JCT per set and policy, 95% bootstrap CI",
        "jct_cdf": "JCT CDF per policy",
        "rho_cdf": "Finish-time fairness (rho) CDF per policy",
        "allocation": f"Allocation timeline ({example})",
        "trajectories": f"Replicas and batch size of the most re-adapted jobs ({example})",
        "goodput": "Cluster goodput over time per policy (same set and seed)",
    }
    for k, cap in captions.items():
        lines.append(f"- [{cap}](figures/{paths[k].name})")
    lines.append("")
    for k, cap in captions.items():
        lines += [f"![{cap}](figures/{paths[k].name})", ""]
    return "\n".join(lines)


def _coverage_sentence(summary: pl.DataFrame) -> str:
    if summary.height == 0:
        return "No cells, no intervals."
    n = int(summary["seeds"].min() or 0)
    if n < 2:
        return ("Some cells ran one seed only: their intervals are a single point and say "
                "nothing about seed-to-seed variation.")
    cov = coverage_check(n_seeds=n)
    method = "BCa" if n >= 3 else "percentile"
    return (f"The intervals are {method} bootstrap intervals over as few as {n} seeds, and with "
            f"so few they undercover: on normal samples of size {n}, the nominal 95% interval "
            f"held the true mean in {cov:.0%} of 400 trials (`coverage_check`). Read them as "
            "rough, and a goal met by a small margin as unsettled.")
