"""How low can mean JCT go on a workload set? A no-contention bound (SIMULATED).

Every job gets, from the moment it is submitted, the best static configuration
it could use on the cluster (any worker count up to the cluster, any validated
batch size), with no wait for a round, no queueing and no restart: only its
training to the target at the simulator's truth, its measured first start and
its final verification. The mean of that over a workload, divided by a
policy's simulated mean JCT on the same draw (paired by seed), says how far any
scheduler could get. The cluster, latency and profiles are read from the
experiment's ``experiment.json``; named sets only. It is not a strict bound: a policy that changes the batch
size during training (Pollux) can beat the best *static* batch a little, and
validation pauses are left out.

    python benchmarks/jct_bound.py --results out/experiment/results.parquet
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from coadapt.workloads.sets import SETS, make_workload
from coadapt.world.cluster import ClusterSpec, Network
from coadapt.world.costs import COSTS_FILE, LiveCosts
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.world import World


def best_jct(world: World, app: str) -> tuple[float, int, int]:
    """(seconds, workers, batch) of the fastest static configuration."""
    best = (np.inf, 0, 0)
    limits, slots = world.limits[app], world.cluster.total_slots
    for r in range(1, min(slots, limits.max_useful_replicas()) + 1):
        for batch in sorted(world.profiles[app].validation):
            if batch < r * limits.min_local_bsz or batch > limits.max_batch_size:
                continue
            t = world.estimated_jct(app, r, batch)
            if t < best[0]:
                best = (t, r, batch)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, help="results.parquet of a coadapt experiment")
    p.add_argument("--baselines", default="fixed,dynamic,pollux,optimus-oracle")
    args = p.parse_args()
    results = pl.read_parquet(args.results)
    plan = json.loads((Path(args.results).parent / "experiment.json").read_text())
    args.profiles, args.cluster, latency = plan["profiles"], plan["cluster"], plan["latency"]
    results = results.filter(pl.col("set").is_in(list(SETS)))
    profiles = load_profiles(args.profiles)
    costs_path = Path(args.profiles) / COSTS_FILE
    costs = LiveCosts.load(costs_path) if costs_path.exists() else None
    rows = []
    cells = results.select("bandwidth", "set", "seed").unique().sort("bandwidth", "set", "seed")
    for bw, name, seed in cells.iter_rows():
        cluster = ClusterSpec.parse(args.cluster, Network(bw, latency))
        world = World.build(profiles, cluster, costs=costs)
        wl = make_workload(name, seed, world)
        cache: dict[str, tuple[float, int, int]] = {}
        ideal, workers = [], []
        for job in wl.jobs:
            app = job.application
            if app not in cache:
                cache[app] = best_jct(world, app)
            t, r, _ = cache[app]
            extra = (costs.start(app, r) + costs.verify(app)) if costs is not None else 0.0
            ideal.append(t + extra)
            workers.append(r)
        rows.append({"bandwidth": bw, "set": name, "seed": seed,
                     "bound_jct": float(np.mean(ideal)), "bound_workers": float(np.mean(workers))})
    bound = pl.DataFrame(rows)
    base = [b for b in args.baselines.split(",") if b]
    wide = (results.filter(pl.col("policy").is_in(base))
            .pivot(on="policy", index=["bandwidth", "set", "seed"], values="avg_jct"))
    joined = bound.join(wide, on=["bandwidth", "set", "seed"], how="inner")
    ratios = [(pl.col("bound_jct") / pl.col(b)).alias(f"bound/{b}") for b in base if b in joined.columns]
    table = (joined.with_columns(ratios)
             .group_by("bandwidth", "set", maintain_order=True)
             .agg(pl.col("bound_jct").mean().alias("bound JCT s"),
                  pl.col("bound_workers").mean().alias("bound workers"),
                  *[pl.col(f"bound/{b}").mean() for b in base if b in joined.columns],
                  *[(pl.col("pollux") / pl.col(b)).mean().alias(f"pollux/{b}")
                    for b in base if b in joined.columns and b != "pollux"
                    and "pollux" in joined.columns]))
    with pl.Config(tbl_rows=100, tbl_cols=20, float_precision=2, tbl_width_chars=200):
        sys.stdout.write("SIMULATED no-contention bound (best static configuration, no waits)\n")
        sys.stdout.write(f"{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
