"""JCT, utilization, goodput and finish-time fairness from the event log.

Only the log is read: submissions, allocations, completions, rounds and the
header (which carries the isolated-run yardstick T_iso per job type), as a
list of events or in one streamed pass (``metrics.tally``). That is
what lets simulated and live runs be compared with one piece of code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import polars as pl

from coadapt.metrics.tally import Event, Tally


def _area(times: np.ndarray, values: np.ndarray):
    """Cumulative integral of a right-continuous step function; returns A(t)."""
    widths = np.diff(times)
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * widths)])
    return lambda t: np.interp(t, times, cum)


def _step(times: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function from changes (time, delta): breakpoints and level after each."""
    if not len(times):
        return np.array([0.0, 1.0]), np.zeros(2)
    order = np.argsort(times, kind="stable")
    t, level = times[order], np.cumsum(deltas[order])
    uniq, last = np.unique(t[::-1], return_index=True)
    return uniq, level[len(t) - 1 - last]


def _tally(events: Iterable[Event] | Tally) -> Tally:
    return events if isinstance(events, Tally) else Tally.of(events)


def job_table(events: Iterable[Event] | Tally) -> pl.DataFrame:
    """One row per job: submit, completion, JCT, restarts, fairness rho."""
    t = _tally(events)
    times, level = _step(np.concatenate([np.frombuffer(t.submit_t), np.frombuffer(t.complete_t)]),
                         np.repeat([1.0, -1.0], [len(t.submit_t), len(t.complete_t)]))
    area = _area(times, level)
    rows = []
    for name, (submit, application, weight) in t.submits.items():
        c = t.completes.get(name)
        row = {"job": name, "application": application, "submit": submit, "weight": weight,
               "complete": c[0] if c else None, "jct": (c[0] - submit) if c else None,
               "restarts": c[1] if c else None, "verified": c[2] if c else None,
               "n_avg": None, "share": None, "t_iso": None, "rho": None, "n_iso": None}
        if c and c[0] > submit:
            n_avg = float((area(c[0]) - area(submit)) / (c[0] - submit))
            row["n_avg"] = n_avg
            f = t.yardstick.get(name)
            if f is not None and f[1]:
                row["share"], row["t_iso"] = f[0], f[1]
                row["n_iso"] = f[2]  # the yardstick's N, not this run's n_avg
                row["rho"] = row["jct"] / f[1]
        if t.ran_on:  # a cluster of several kinds: which ones the job ran on
            row["node_kinds"] = "+".join(t.ran_on.get(name, ()))
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def timeline(events: Iterable[Event] | Tally) -> pl.DataFrame:
    """Cluster-wide used slots and goodput (samples/s x efficiency) over time."""
    slot_changes, good_changes = _tally(events).changes()
    ts, used = _step(*slot_changes)
    tg, gp = _step(*good_changes)
    grid = np.union1d(ts, tg)
    idx_s = np.searchsorted(ts, grid, side="right") - 1
    idx_g = np.searchsorted(tg, grid, side="right") - 1
    return pl.DataFrame({"t": grid, "used_slots": used[idx_s], "goodput": gp[idx_g]})


def priority_split(jobs: pl.DataFrame) -> dict[str, float | None]:
    """Mean JCT and mean rho of the high-priority jobs (weight > 1) and of the
    rest; all None when every job has the same weight."""
    keys = ("prio_avg_jct", "rest_avg_jct", "prio_mean_rho", "rest_mean_rho")
    if jobs.height == 0 or jobs["weight"].n_unique() < 2:
        return dict.fromkeys(keys)
    out: dict[str, float | None] = {}
    for tag, part in (("prio", jobs.filter(pl.col("weight") > 1.0)),
                      ("rest", jobs.filter(pl.col("weight") <= 1.0))):
        out[f"{tag}_avg_jct"] = part["jct"].drop_nulls().mean()
        out[f"{tag}_mean_rho"] = part["rho"].drop_nulls().mean()
    return out


def summarize(events: Iterable[Event] | Tally, jobs: pl.DataFrame | None = None) -> dict[str, Any]:
    """The headline numbers of one run (from its events, or a ``Tally`` of them;
    ``jobs``: its ``job_table`` when the caller has it already)."""
    t = _tally(events)
    header = t.header or {}
    jobs = job_table(t) if jobs is None else jobs
    jct = jobs["jct"].drop_nulls().to_numpy() if jobs.height else np.zeros(0)
    rho = jobs["rho"].drop_nulls().to_numpy() if jobs.height else np.zeros(0)
    submits, completes = list(t.submit_t), list(t.complete_t)
    start = min(submits) if submits else 0.0
    end = max(completes) if completes else start
    line = timeline(t)
    times = line["t"].to_numpy()
    slots = header.get("total_slots") or 1
    util = float("nan")
    if end > start:
        area = _area(times, line["used_slots"].to_numpy())
        util = float((area(end) - area(start)) / (slots * (end - start)))
        garea = _area(times, line["goodput"].to_numpy())
        mean_goodput = float((garea(end) - garea(start)) / (end - start))
    else:
        mean_goodput = float("nan")
    ms = np.frombuffer(t.decision_ms) if len(t.decision_ms) else np.zeros(0)
    failed = {e["job"] for e in t.fails if e.get("fatal")}
    never = {e["job"] for e in t.fails if e.get("submitted") is False}

    def pct(a: np.ndarray, q: float) -> float | None:
        return float(np.percentile(a, q)) if len(a) else None

    return {
        "policy": header.get("policy"),
        "workload": header.get("workload"),
        "jobs": len(submits) + len(never - set(t.submits)),
        "completed": len(completes),
        # gave up on: failed too often, or unfinished at the run's horizon (never submitted too)
        "failed": len(failed - set(t.completes)),
        "horizon_reached": any(e.get("horizon") is not None for e in t.fails),
        # requests the engine adjusted to the cluster (more replicas than a job can hold)
        "adjusted_requests": t.adjusted,
        "avg_jct": float(jct.mean()) if len(jct) else None,
        "p50_jct": pct(jct, 50),
        "p99_jct": pct(jct, 99),
        "makespan": end - start if completes else None,
        "utilization": util,
        "mean_goodput": mean_goodput,
        "max_rho": float(rho.max()) if len(rho) else None,
        "p99_rho": pct(rho, 99),
        "unfair_frac": float(np.mean(rho > 1.1)) if len(rho) else None,
        "jain_rho": float(rho.sum() ** 2 / (len(rho) * (rho**2).sum())) if len(rho) else None,
        "restarts_mean": float(jobs["restarts"].drop_nulls().mean() or 0.0) if jobs.height else 0.0,
        # the shared yardstick's contention: its N per job and the fair share it gives
        "n_iso_mean": jobs["n_iso"].drop_nulls().mean() if jobs.height else None,
        "share_median": jobs["share"].drop_nulls().median() if jobs.height else None,
        **priority_split(jobs),
        "decision_ms_median": float(np.median(ms)) if len(ms) else None,
        "decision_ms_p99": pct(ms, 99),
        "wall_s": t.ends[-1].get("wall_s") if t.ends else None,
        "simulated": header.get("mode") == "simulate",
    }
