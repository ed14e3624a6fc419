"""Decision time of a policy as the Sia study's cluster grows (SIMULATED runs).

Sia's paper anchors its scalability at about 1 s a round at 2,048 GPUs. This
replays the study's scaling workloads (``workloads/scale/scale_Kx``: every job
of one base workload issued K times at once) on K copies of the study's
64-GPU cluster (``--preset sosp23``: 6x4:aws,3x8:rtx,2x8:dgx-ext) and times
the policy's ``decide`` in each round of the first ``--hours`` simulated hours
(at most ``--rounds`` rounds), with the number of jobs it was shown. K = 1 is
``philly/workload-N`` (the study's own 64-GPU workload).

    python benchmarks/sia_scale.py [--reference ../shared/reference/sia]
        [--scales 1,8,32] [--policy sia] [--hours 2] [--rounds 60] [--out out/bench]

Writes OUT/<policy>-scale.csv (one row per timed round) and prints the median,
p90 and max decision time per scale. Skips cleanly when the reference is absent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import Engine
from coadapt.eventlog import EventLog
from coadapt.policies import make_policy
from coadapt.policies.base import Decision, Snapshot
from coadapt.runs.options import parse_options, settings, world_of
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.workload import load_workload

BASE_CLUSTER = ((6, 4, "aws"), (3, 8, "rtx"), (2, 8, "dgx-ext"))  # the study's 64 GPUs


class _Enough(Exception):
    """The timed window is over: stop the simulation."""


class TimedPolicy:
    """The policy under test, timed round by round until ``until_s`` or ``rounds``."""

    def __init__(self, inner, until_s: float, rounds: int) -> None:
        self.inner, self.until_s, self.rounds = inner, until_s, rounds
        self.name, self.uses_oracle = inner.name, inner.uses_oracle
        self.rows: list[dict] = []

    def decide(self, snap: Snapshot) -> Decision:
        if snap.time > self.until_s or len(self.rows) >= self.rounds:
            raise _Enough
        t0 = time.perf_counter()
        decision = self.inner.decide(snap)
        self.rows.append({"t_s": snap.time, "jobs": len(snap.jobs),
                          "decide_ms": (time.perf_counter() - t0) * 1e3})
        return decision


def cluster(k: int) -> str:
    return ",".join(f"{n * k}x{s}:{kind}" for n, s, kind in BASE_CLUSTER)


def workload_path(ref: Path, k: int, index: int) -> Path:
    sub = f"philly/workload-{index}.csv" if k == 1 else f"scale/scale_{k}x/workload-{index}.csv"
    return ref / "workloads" / sub


def time_scale(ref: Path, k: int, policy: str, hours: float, rounds: int, index: int,
               interval: float | None) -> pl.DataFrame:
    args = parse_options(["--preset", "sosp23", "--cluster", cluster(k),
                          *(["--interval", str(interval)] if interval else [])])
    profiles = load_profiles(f"sia:{ref}")
    workload = load_workload(str(workload_path(ref, k, index)), set(profiles))
    world = world_of(args, profiles, None)
    run = settings(args, world, workload, show_progress=False)
    timed = TimedPolicy(make_policy(policy, run.policy_config()), hours * 3600, rounds)
    with tempfile.TemporaryDirectory() as tmp, EventLog(Path(tmp) / "events.jsonl") as log:
        log.header(mode="simulation", policy=policy, workload=workload.name, **run.describe())
        backend = ModeledBackend(world, run.restart_delay, None, seed=run.seed)
        engine = Engine(workload, world.limits, backend, timed, run.cluster, log,
                        interval=run.interval, restart_delay=run.restart_delay,
                        kind_speed=run.kind_speed(world),
                        restart_penalty=world.study.penalty_s if world.study else None)
        try:
            engine.run()
        except _Enough:
            pass
    return pl.DataFrame(timed.rows).with_columns(
        pl.lit(k).alias("scale"), pl.lit(run.cluster.total_slots).alias("gpus"),
        pl.lit(len(workload.jobs)).alias("workload_jobs"), pl.lit(policy).alias("policy"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", default="../shared/reference/sia")
    p.add_argument("--scales", default="1,8,32")
    p.add_argument("--policy", default="sia")
    p.add_argument("--hours", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--workload-index", type=int, default=1)
    p.add_argument("--interval", type=float, default=None, help="round length (default: preset)")
    p.add_argument("--out", default="out/bench")
    a = p.parse_args(argv)
    ref = Path(a.reference)
    if not (ref / "workloads").is_dir():
        sys.stderr.write(f"skipped: no Sia reference at {ref}\n")
        return 0
    parts = []
    for k in (int(s) for s in a.scales.split(",")):
        t0 = time.perf_counter()
        df = time_scale(ref, k, a.policy, a.hours, a.rounds, a.workload_index, a.interval)
        parts.append(df)
        ms = df["decide_ms"].to_numpy()
        sys.stdout.write(
            f"SIMULATED {a.policy} x{k:<3} {df['gpus'][0]:>5} GPUs: {df.height} rounds, jobs shown "
            f"median {int(np.median(df['jobs']))} max {df['jobs'].max()}; decide ms median "
            f"{np.median(ms):.0f} p90 {np.percentile(ms, 90):.0f} max {ms.max():.0f} "
            f"(wall {time.perf_counter() - t0:.0f} s)\n")
        sys.stdout.flush()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pl.concat(parts).write_csv(out / f"{a.policy}-scale.csv")
    sys.stdout.write(f"rows in {out / f'{a.policy}-scale.csv'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
