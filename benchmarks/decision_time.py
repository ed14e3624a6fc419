"""A policy's decision time per round at a given number of active jobs (SIMULATED).

Generates a CPU workload of --num-jobs jobs (the mix of ``benchmarks/scale.py``)
arriving within --window hours on --cluster, runs it under each policy with the
policy's ``decide`` timed, and stops once --rounds rounds have shown at least
--active jobs (or at --max-rounds). A burst of arrivals (a short window) is
what puts many jobs in one round: at the Pollux study's load a cluster of
2,048 slots holds about 600; the defaults hold 1,000-1,085 for five rounds
(15 s rounds, the CPU defaults). Rounds before the jobs have run (no model yet)
are cheap; only the rounds at or above --active count.

    .venv/bin/python benchmarks/decision_time.py [--num-jobs 3000] [--window 0.06]
        [--cluster 1024x2] [--policy pollux,sia] [--active 1000] [--rounds 20]
        [--out out/bench/decision]

Prints, per policy, the median and p90 decision time of the counted rounds and
the jobs they showed; writes OUT/decision.csv (one row per timed round).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import Engine
from coadapt.eventlog import EventLog
from coadapt.policies import make_policy
from coadapt.policies.base import Decision, Snapshot
from coadapt.runs.options import parse_options, settings, world_of
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.workload import load_workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_workload  # noqa: E402  (a sibling benchmark's workload maker)


class _Enough(Exception):
    """Enough rounds were timed: stop the simulation."""


class TimedPolicy:
    """The policy under test; each decide timed, stopping after ``rounds``
    rounds that showed at least ``active`` jobs (or ``max_rounds`` in all)."""

    def __init__(self, inner, active: int, rounds: int, max_rounds: int) -> None:
        self.inner, self.active, self.rounds, self.max_rounds = inner, active, rounds, max_rounds
        self.name, self.uses_oracle = inner.name, inner.uses_oracle
        self.rows: list[dict] = []

    def decide(self, snap: Snapshot) -> Decision:
        counted = sum(r["counted"] for r in self.rows)
        if counted >= self.rounds or len(self.rows) >= self.max_rounds:
            raise _Enough
        t0 = time.perf_counter()
        decision = self.inner.decide(snap)
        ms = (time.perf_counter() - t0) * 1e3
        modeled = sum(j.model is not None for j in snap.jobs)
        self.rows.append({"t_s": snap.time, "jobs": len(snap.jobs), "modeled": modeled,
                          "decide_ms": ms, "counted": len(snap.jobs) >= self.active})
        return decision


def time_policy(workload_path: Path, cluster: str, policy: str, active: int, rounds: int,
                max_rounds: int, profiles_source: str = "profiles") -> pl.DataFrame:
    args = parse_options(["--cluster", cluster])
    profiles = load_profiles(profiles_source)
    workload = load_workload(str(workload_path), set(profiles))
    world = world_of(args, profiles, None)
    run = settings(args, world, workload, show_progress=False)
    timed = TimedPolicy(make_policy(policy, run.policy_config()), active, rounds, max_rounds)
    with tempfile.TemporaryDirectory() as tmp, EventLog(Path(tmp) / "events.jsonl") as log:
        log.header(mode="simulation", policy=policy, workload=workload.name, **run.describe())
        backend = ModeledBackend(world, run.restart_delay, None, seed=run.seed)
        engine = Engine(workload, world.limits, backend, timed, run.cluster, log,
                        interval=run.interval, restart_delay=run.restart_delay,
                        kind_speed=run.kind_speed(world))
        try:
            with threadpool_limits(1):  # as `coadapt simulate` runs: BLAS threads only contend
                engine.run()
        except _Enough:
            pass
    return pl.DataFrame(timed.rows).with_columns(
        pl.lit(policy).alias("policy"), pl.lit(run.cluster.total_slots).alias("slots"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-jobs", type=int, default=3000)
    p.add_argument("--window", type=float, default=0.06, help="arrival window, hours")
    p.add_argument("--cluster", default="1024x2")
    p.add_argument("--policy", default="pollux,sia")
    p.add_argument("--active", type=int, default=1000, help="count rounds with >= this many jobs")
    p.add_argument("--rounds", type=int, default=20, help="rounds to count")
    p.add_argument("--max-rounds", type=int, default=400, help="give up after this many rounds")
    p.add_argument("--profiles", default="profiles", help="the job types' profiles (default profiles)")
    p.add_argument("--out", type=Path, default=Path("out/bench/decision"))
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    nodes, per = (int(x) for x in a.cluster.split("x"))
    wl = make_workload(a.num_jobs, nodes * per, 1.0, a.out, window_h=a.window)
    parts = []
    for policy in a.policy.split(","):
        t0 = time.perf_counter()
        df = time_policy(wl, a.cluster, policy, a.active, a.rounds, a.max_rounds, a.profiles)
        parts.append(df)
        c = df.filter(pl.col("counted"))
        ms = c["decide_ms"].to_numpy()
        if not len(ms):
            sys.stdout.write(f"SIMULATED {policy}: no round showed {a.active} jobs "
                             f"(max {df['jobs'].max()}); raise --num-jobs or shorten --window\n")
            continue
        sys.stdout.write(
            f"SIMULATED {policy} on {a.cluster} ({nodes * per} slots): {len(ms)} rounds with "
            f">= {a.active} jobs (median {int(np.median(c['jobs']))}, with a model median "
            f"{int(np.median(c['modeled']))}); decide ms median {np.median(ms):.1f} "
            f"p90 {np.percentile(ms, 90):.1f} max {ms.max():.1f} "
            f"(wall {time.perf_counter() - t0:.0f} s)\n")
        sys.stdout.flush()
    pl.concat(parts, how="diagonal").write_csv(a.out / "decision.csv")
    sys.stdout.write(f"rows in {a.out / 'decision.csv'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
