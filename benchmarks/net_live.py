"""Live on emulated nodes vs its prediction, per run folder of ``make live-net``.

For each ``coadapt live --network emulated`` output folder and policy: mean
JCT live and predicted with the error, mean per-job |error|, whether the
ranking matches, and what the network part did: the share of worker-seconds
on cross-node placements (live and predicted), the jobs that ran across
nodes, and the measured cross-node step time against the simulator's truth
for that configuration (the calibrated compute plus the network calibration
the prediction used) -- whether a cross-node choice paid off as predicted.

    python benchmarks/net_live.py out/live-net/*/          # a markdown table
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import polars as pl

from coadapt.eventlog import read_events
from coadapt.world.cluster import ClusterSpec
from coadapt.world.costs import LiveCosts
from coadapt.world.profiles.network import load_network_calibration
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.truth import ClusterTruth
from coadapt.world.world import World


def cross_node(events_path: Path) -> tuple[float, list[str]]:
    """Share of worker-seconds on placements over more than one node, and the
    jobs that ever ran so (from the allocate events, to each job's end)."""
    events = list(read_events(events_path))
    end = max(e["t"] for e in events)
    done = {e["job"]: e["t"] for e in events if e["kind"] == "complete"}
    current: dict[str, tuple[float, int, int]] = {}
    total = cross = 0.0
    jobs: set[str] = set()

    def close(job: str, t: float) -> None:
        nonlocal total, cross
        if job in current:
            t0, replicas, nodes = current.pop(job)
            total += replicas * (t - t0)
            cross += replicas * (t - t0) if nodes > 1 else 0.0

    for e in events:
        if e["kind"] != "allocate":
            continue
        close(e["job"], e["t"])
        if e["replicas"]:
            current[e["job"]] = (e["t"], e["replicas"], e["nodes"])
            if e["nodes"] > 1:
                jobs.add(e["job"])
    for job in list(current):
        close(job, done.get(job, end))
    return (cross / total if total else 0.0), sorted(jobs)


def step_ratio(run: Path, policy: str, truth: dict[str, ClusterTruth]) -> list[float]:
    """Live median step / truth step for each cross-node launch of ``policy``."""
    ratios = []
    for jd in sorted((run / policy / "jobs").iterdir()):
        obs: dict[tuple[str, int, int], list[float]] = {}
        app = None
        for e in read_events(jd / "events.jsonl"):
            if e["kind"] in ("start", "restart"):
                app = e["job_type"]
            if e["kind"] == "observation" and e["workers"] > 1 and app is not None:
                obs.setdefault((app, e["workers"], e["local_bsz"]), []).append(e["step_time"])
        for (app, k, m), steps in obs.items():
            if len(steps) < 5:
                continue
            live = statistics.median(steps[3:])  # warm-up steps dropped, as the calibration does
            pred = truth[app].throughput((1,) * k, m)[0]
            ratios.append(live / pred)
    return ratios


def summarize(run: Path) -> list[dict]:
    spec = json.loads((run / "live.json").read_text())
    costs = LiveCosts.load(run / "calibration.json")
    net = load_network_calibration(spec["net_calibration"]).network(spec["bandwidth"])
    world = World.build(load_profiles(spec["profiles"]), ClusterSpec.parse(spec["cluster"], net),
                        costs=costs)
    truth = world.truths
    summary = pl.read_csv(run / "compare" / "prediction" / "sim_vs_live_summary.csv")
    live_rank = summary.sort("mean_jct_live")["policy"].to_list()
    pred_rank = summary.sort("mean_jct_sim")["policy"].to_list()
    rows = []
    for r in summary.iter_rows(named=True):
        p = r["policy"]
        share_live, jobs_live = cross_node(run / p / "events.jsonl")
        share_pred, jobs_pred = cross_node(run / "prediction" / p / "events.jsonl")
        ratios = step_ratio(run, p, truth)
        rows.append({
            "set": spec["workload"], "Gbit/s": spec["bandwidth"], "policy": p,
            "live min": r["mean_jct_live"] / 60, "pred min": r["mean_jct_sim"] / 60,
            "err": r["mean_jct_err"], "per-job |err|": r["mean_abs_err"],
            "worst job": f"{r['max_abs_err_job']} {r['max_abs_err']:+.0%}",
            "rank same": live_rank == pred_rank,
            "cross-node share live": share_live, "pred": share_pred,
            "cross-node jobs live": ",".join(jobs_live) or "-",
            "pred jobs": ",".join(jobs_pred) or "-",
            "cross step live/truth": statistics.median(ratios) if ratios else None,
        })
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--csv", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    rows = [row for run in args.runs for row in summarize(run)]
    df = pl.DataFrame(rows)
    if args.csv:
        df.write_csv(args.csv)
    cols = df.columns
    sys.stdout.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
    for r in df.iter_rows(named=True):
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, float):
                v = f"{v:+.1%}" if c == "err" else (
                    f"{v:.0%}" if "share" in c or c in ("pred", "per-job |err|") else f"{v:.2f}")
            cells.append("–" if v is None else str(v))
        sys.stdout.write("| " + " | ".join(cells) + " |\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
