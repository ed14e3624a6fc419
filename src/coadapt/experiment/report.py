"""``OUT/report.md`` for an experiment grid, with its figures (``figures``).

Everything here is simulated, and every figure and the report say so: the
numbers come from the SimPy engine replaying workloads on profiles, not from
a cluster. Tables come from ``stats`` (means over seeds, paired ratios, goals);
the distribution and timeline figures read the cells' gzip'd event logs
(``coadapt.eventlog.read_events``) with the same metrics code
(``coadapt.metrics``) every other stage uses.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from coadapt.eventlog import read_events
from coadapt.experiment import figures
from coadapt.experiment.figures import SIM
from coadapt.experiment.stats import ablation as ablation_table
from coadapt.experiment.stats import (
    coverage_check,
    ordered_policies,
    ordered_sets,
    ordered_tags,
    seed_basis,
)
from coadapt.metrics import job_table
from coadapt.report.order import ordered_policies as table_order
from coadapt.report.runlog import Calibration, calibration_of

log = logging.getLogger(__name__)
Event = dict[str, Any]


# ------------------------------------------------------------------- reading
def read_log(path: Path) -> list[Event] | None:
    """A cell's events (``read_events``: gzip'd by the ``.gz`` suffix, its
    rules for a truncated last line, malformed lines and the schema); None,
    with a warning, when the log is missing or ``read_events`` rejects it."""
    try:
        return list(read_events(path))
    except FileNotFoundError:
        log.warning("log %s is missing", path)
    except (OSError, ValueError) as exc:
        log.warning("log %s unreadable, skipped: %s", path, exc)
    return None


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
    tag = ordered_tags(cand)[0]
    cand = cand.filter(pl.col("tag") == tag).sort(["load", "set", "seed"], descending=[True, False, False],
                                                 nulls_last=True)
    return cand.row(0, named=True)


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


RATIO_COLUMNS = ("fixed", "pollux", "dynamic")  # stats.PAIRED, Pollux beside fixed


def summary_table(summary: pl.DataFrame) -> pl.DataFrame:
    """The report's view of the summary: times in minutes, CIs in brackets;
    the ratio to Pollux sits beside the one to fixed so a kind-aware policy
    (Sia, Gavel) reads against both at once."""
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
            "p99 rho": _fmt(r["p99_rho"]),
            **{f"vs {b} [CI]": _ci(r[f"vs_{b}"], r[f"vs_{b}_lo"], r[f"vs_{b}_hi"],
                                   n=r[f"vs_{b}_n"]) for b in RATIO_COLUMNS},
            "wait s": _fmt(r["wait_mean"], "{:.1f}"),
            "run s": _fmt(r["run_mean"], "{:.1f}"),
            "of it start/restart s": _fmt(r.get("delay_mean"), "{:.1f}"),
            "restarts/job": _fmt(r.get("restarts_mean")),
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
                 example: dict | None = None,
                 failed: Sequence[tuple[str, str]] = (), *, baseline: str = "fixed") -> Path:
    """Write ``out/report.md`` and its six figures in ``out/figures``; returns
    the report's path. Policies read in the tables' order, ``baseline`` first.
    Missing logs, fairness events, policies or seeds give a placeholder
    figure or a '–', never an error."""
    out = Path(out)
    paths = figures.prepare(out / "figures")
    tags = ordered_tags(results)
    policies = table_order(results["policy"].to_list(), baseline) if results.height else []

    figures.fig_jct_means(summary, paths["jct_means"])

    first = results.filter(pl.col("tag") == tags[0]) if tags else results
    jobs = _job_tables(out, first)
    sets = ordered_sets(first)
    where = f"network {tags[0]}, all seeds pooled" if tags else ""
    figures.fig_cdf(jobs, "jct_min", paths["jct_cdf"], "JCT (min, log scale)",
                    f"JCT distribution per policy ({where})", sets, policies,
                    "no completed jobs")
    figures.fig_cdf(jobs, "rho", paths["rho_cdf"], "finish-time fairness rho = JCT / T_iso (log)",
                    f"rho distribution per policy ({where})", sets, policies,
                    "no fairness (rho) data in the logs", vline=1.0)

    ex = pick_example(results, example)
    label = (f"{ex['policy']} on {ex['set']}, seed {ex['seed']}, {ex['tag']}" if ex else "")
    ex_events = read_log(out / ex["log"]) if ex and ex.get("log") else None
    if ex_events:
        figures.fig_allocation(ex_events, paths["allocation"], label)
        figures.fig_trajectories(ex_events, paths["trajectories"], label)
    else:
        for k, what in (("allocation", "allocation timeline"), ("trajectories", "trajectories")):
            figures.placeholder(paths[k], what, "no example cell log")
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
    figures.fig_goodput(runs, paths["goodput"], gp_label)

    header = next((e for e in ex_events or [] if e["kind"] == "header"), None)
    text = _markdown(results, summary, goals, tags, policies, label, paths, failed,
                     calibration_of(header) if header is not None else None)
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return report


def _markdown(results: pl.DataFrame, summary: pl.DataFrame, goals: pl.DataFrame,
              tags: list[str], policies: list[str], example: str,
              paths: dict[str, Path], failed: Sequence[tuple[str, str]] = (),
              calibration: Calibration | None = None) -> str:
    n = results.height
    sets = ordered_sets(results)
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
        f"- machine calibration charged: {calibration.line if calibration else '– (no cell log)'}",
    ]
    if calibration is not None and calibration.other:
        lines.append("- **the calibration is another machine's** (the shipped reference's, "
                     "unless named otherwise): absolute times describe that machine")
    if n and {"jobs", "completed"} <= set(results.columns):
        short = results.filter(pl.col("completed") < pl.col("jobs")).height
        if short:
            lines.append(f"- **{short} cell(s) did not complete every job**: their JCTs cover "
                         "completed jobs only")
    if failed:
        lines += ["", f"## {len(failed)} cell(s) FAILED: left out of every table below", "",
                  "Their (tag, set, policy, seed) means and ratios rest on fewer seeds; "
                  "`failed.csv` holds the same list.", "",
                  *[f"- `{key}`: {err}" for key, err in failed]]
    lines += ["", "## Summary (mean over seeds)", "",
              "JCT ratios (`vs fixed`, `vs pollux`, `vs dynamic`) are per-seed ratios of "
              "average JCT to that policy's on the same workload draw, averaged geometrically "
              "over seeds; < 1 is faster. `p99 rho` is each run's 99th-percentile rho (JCT / "
              "T_iso on the shared yardstick, below), mean over seeds. A completed job's JCT is "
              "`wait s` (submission to first slots) + `run s`, of which `start/restart s` "
              "went to starting and restarting it; `restarts/job` is the mean restarts per "
              "job. `modeled` is the share of slot-time on placements whose speed was not "
              "measured.", ""]
    lines.append(markdown_table(summary_table(summary)) if summary.height else "(no cells)")
    lines += ["", "## Where rho carries information", "", *_rho_scope(summary)]
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


INFORMATIVE_N = 2.0  # below this the fair share is over half the cluster


def _rho_scope(summary: pl.DataFrame) -> list[str]:
    """Per set, how contended the shared yardstick is. rho = JCT / T_iso with
    T_iso on floor(slots / N) slots: where N is about 1 the share is the whole
    cluster and rho measures how well a policy runs a job, not how it shares."""
    if not summary.height or "n_iso_mean" not in summary.columns:
        return ["(no yardstick in these logs)"]
    per_set = (summary.group_by(["tag", "set", "load"], maintain_order=True)
               .agg(pl.col("n_iso_mean").mean(), pl.col("share_median").median()))
    rows = []
    for r in per_set.iter_rows(named=True):
        n = r["n_iso_mean"]
        verdict = "–" if n is None else (
            "fairness: jobs share the cluster" if n >= INFORMATIVE_N
            else "mostly efficiency: the share is most of the cluster")
        rows.append({"network": r["tag"], "set": r["set"], "load": r["load"], "mean N": n,
                     "median share (slots)": r["share_median"], "rho measures": verdict})
    return ["The yardstick (one per job, shared by every policy: `sim/yardstick.py`) gives "
            "each job floor(slots / N) slots, N the mean number of jobs present over its "
            f"life in the yardstick's own schedule. Where N < {INFORMATIVE_N:g} a job's share "
            "is over half the cluster, so rho > 1 there says the policy ran the job worse "
            "than its best static configuration, not that it was starved by others.", "",
            markdown_table(pl.DataFrame(rows), {"load": "{:.3g}", "mean N": "{:.2f}",
                                                "median share (slots)": "{:.0f}"})]


def _coverage_sentence(summary: pl.DataFrame) -> str:
    """How firm the intervals are, at the seed count they rest on
    (``stats.seed_basis``), naming that basis and the cells with fewer."""
    if summary.height == 0:
        return "No cells, no intervals."
    n, basis = seed_basis(summary)
    fewer = summary.filter(pl.col("seeds") < n)
    sets = sorted(set(fewer["set"].to_list())) if fewer.height else []
    note = (f" {fewer.height} cell(s) ran fewer seeds (sets: {', '.join(sets)}); a cell of "
            "one seed shows a single run, with no interval." if fewer.height else "")
    if n < 2:
        return (f"The cells ran one seed only ({basis}): their intervals are a single point "
                "and say nothing about seed-to-seed variation.")
    cov = coverage_check(n_seeds=n)
    method = "BCa" if n >= 3 else "percentile"
    return (f"The intervals are {method} bootstrap intervals over {n} seeds ({basis}), and "
            f"with so few they undercover: on normal samples of size {n}, the nominal 95% "
            f"interval held the true mean in {cov:.0%} of 400 trials (`coverage_check`). Read "
            f"them as rough, and a goal met by a small margin as unsettled.{note}")
