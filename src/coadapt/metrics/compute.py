"""JCT, utilization, goodput and finish-time fairness from the event log.

Only the log is read: submissions, allocations, completions, rounds and the
header (which carries the isolated-run yardstick T_iso per job type). That is
what lets simulated and live runs be compared with one piece of code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
import polars as pl

Event = dict[str, Any]


def _by_kind(events: Iterable[Event]) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        out[e["kind"]].append(e)
    return out


def _area(times: np.ndarray, values: np.ndarray):
    """Cumulative integral of a right-continuous step function; returns A(t)."""
    widths = np.diff(times)
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * widths)])
    return lambda t: np.interp(t, times, cum)


def _step(changes: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Step function from (time, delta) changes: breakpoints and level after each."""
    if not changes:
        return np.array([0.0, 1.0]), np.zeros(2)
    changes.sort(key=lambda c: c[0])
    t = np.array([c[0] for c in changes])
    level = np.cumsum([c[1] for c in changes])
    uniq, last = np.unique(t[::-1], return_index=True)
    return uniq, level[len(t) - 1 - last]


def job_table(events: list[Event]) -> pl.DataFrame:
    """One row per job: submit, completion, JCT, restarts, fairness rho."""
    kinds = _by_kind(events)
    fair = {e["job"]: e for e in kinds["fairness"]}  # the shared yardstick (runs.fairness)
    subs = {e["job"]: e for e in kinds["submit"]}
    done = {e["job"]: e for e in kinds["complete"]}
    changes = [(e["t"], 1.0) for e in kinds["submit"]] + [(e["t"], -1.0) for e in kinds["complete"]]
    times, level = _step(changes)
    area = _area(times, level)
    ran_on: dict[str, dict[str, None]] = {}  # kinds of node each job ran on, in order
    for e in kinds["allocate"]:
        if "node_kind" in e:
            ran_on.setdefault(e["job"], {})[e["node_kind"]] = None
    rows = []
    for name, s in subs.items():
        c = done.get(name)
        row = {"job": name, "application": s.get("application"), "submit": s["t"],
               "weight": float(s.get("weight", 1.0)),
               "complete": c["t"] if c else None, "jct": (c["t"] - s["t"]) if c else None,
               "restarts": c.get("restarts") if c else None,
               "verified": c.get("verified") if c else None,
               "n_avg": None, "share": None, "t_iso": None, "rho": None, "n_iso": None}
        if c and c["t"] > s["t"]:
            n_avg = float((area(c["t"]) - area(s["t"])) / (c["t"] - s["t"]))
            row["n_avg"] = n_avg
            f = fair.get(name)
            if f is not None and f["t_iso"]:
                row["share"], row["t_iso"] = f["share"], f["t_iso"]
                row["n_iso"] = f.get("n_avg")  # the yardstick's N, not this run's n_avg
                row["rho"] = row["jct"] / f["t_iso"]
        if ran_on:  # a cluster of several kinds: which ones the job ran on
            row["node_kinds"] = "+".join(ran_on.get(name, ()))
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def timeline(events: list[Event]) -> pl.DataFrame:
    """Cluster-wide used slots and goodput (samples/s x efficiency) over time."""
    slot_changes: list[tuple[float, float]] = []
    good_changes: list[tuple[float, float]] = []
    held: dict[str, float] = defaultdict(float)
    good: dict[str, float] = defaultdict(float)
    for e in sorted((e for e in events if e.get("job")), key=lambda e: e["t"]):
        name, k = e["job"], e["kind"]
        if k == "allocate":
            slot_changes.append((e["t"], e["replicas"] - held[name]))
            held[name] = e["replicas"]
            good_changes.append((e["t"], -good[name]))
            good[name] = 0.0
        elif k in ("start", "epoch", "progress") and e.get("goodput") is not None:
            good_changes.append((e["t"], e["goodput"] - good[name]))
            good[name] = e["goodput"]
        elif k == "complete":
            slot_changes.append((e["t"], -held[name]))
            good_changes.append((e["t"], -good[name]))
            held[name] = good[name] = 0.0
    ts, used = _step(slot_changes)
    tg, gp = _step(good_changes)
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


def summarize(events: list[Event]) -> dict[str, Any]:
    """The headline numbers of one run."""
    kinds = _by_kind(events)
    header = kinds["header"][0] if kinds["header"] else {}
    jobs = job_table(events)
    jct = jobs["jct"].drop_nulls().to_numpy()
    rho = jobs["rho"].drop_nulls().to_numpy()
    submits = [e["t"] for e in kinds["submit"]]
    completes = [e["t"] for e in kinds["complete"]]
    start = min(submits) if submits else 0.0
    end = max(completes) if completes else start
    line = timeline(events)
    t = line["t"].to_numpy()
    slots = header.get("total_slots") or 1
    util = float("nan")
    if end > start:
        area = _area(t, line["used_slots"].to_numpy())
        util = float((area(end) - area(start)) / (slots * (end - start)))
        garea = _area(t, line["goodput"].to_numpy())
        mean_goodput = float((garea(end) - garea(start)) / (end - start))
    else:
        mean_goodput = float("nan")
    ms = [e["decision_ms"] for e in kinds["round"]]
    ends = kinds["end"]
    failed = {e["job"] for e in kinds["fail"] if e.get("fatal")}
    never = {e["job"] for e in kinds["fail"] if e.get("submitted") is False}

    def pct(a: np.ndarray, q: float) -> float | None:
        return float(np.percentile(a, q)) if len(a) else None

    return {
        "policy": header.get("policy"),
        "workload": header.get("workload"),
        "jobs": len(submits) + len(never - {e["job"] for e in kinds["submit"]}),
        "completed": len(completes),
        # gave up on: failed too often, or unfinished at the run's horizon (never submitted too)
        "failed": len(failed - {e["job"] for e in kinds["complete"]}),
        "horizon_reached": any(e.get("horizon") is not None for e in kinds["fail"]),
        # requests the engine adjusted to the cluster (more replicas than a job can hold)
        "adjusted_requests": sum("adjusted_replicas" in e for e in kinds["submit"]),
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
        "restarts_mean": float(jobs["restarts"].drop_nulls().mean() or 0.0),
        # the shared yardstick's contention: its N per job and the fair share it gives
        "n_iso_mean": jobs["n_iso"].drop_nulls().mean() if jobs.height else None,
        "share_median": jobs["share"].drop_nulls().median() if jobs.height else None,
        **priority_split(jobs),
        "decision_ms_median": float(np.median(ms)) if ms else None,
        "decision_ms_p99": pct(np.array(ms), 99),
        "wall_s": ends[-1].get("wall_s") if ends else None,
        "simulated": header.get("mode") == "simulate",
    }
