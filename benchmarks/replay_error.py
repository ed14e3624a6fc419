"""Replay a finished live run under a job model and report its per-job error.

The replay (the live allocations and batch changes, at the step speed the
run measured per job type) leaves only the job model to differ from live, so
its error measures the model. Run it with this tree, and with an older tree on
PYTHONPATH, to compare job models on the same live runs:

    python benchmarks/replay_error.py out/live-a out/live-b --costs profiles/live-costs.json
    PYTHONPATH=/tmp/old/src python benchmarks/replay_error.py out/live-a ... --costs ...

Prints, per run and policy, the replay's mean-JCT error and mean per-job |error|
(SIMULATED against live). Works with the package layouts before and after the
profiles/measure split.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from coadapt.policies.replay import ReplayPolicy
from coadapt.report.simlive import compare_dirs
from coadapt.runs.live.speed import observed_speed
from coadapt.runs.options import settings as run_settings
from coadapt.runs.options import world_of
from coadapt.runs.simulate import simulate_policy
from coadapt.world.costs import LiveCosts
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.workload import load_workload
from coadapt.world.world import World

TRACES = Path(__file__).resolve().parents[1] / "traces"


def replay_errors(live: Path, costs: LiveCosts, profiles_dir: str) -> list[dict]:
    from coadapt.jobs.registry import JOB_TYPES

    spec = {"bandwidth": 10.0, "latency": 50.0, "new_jobs": "one", "preset": None,
            "tiresias_threshold": str(16 * 3600.0), "power": -1.0, "observation_noise": 0.0,
            "efficiency_truth": "curves", **json.loads((live / "live.json").read_text())}
    # The settings the live run derived from its own calibration (restart delay,
    # Tiresias threshold) are taken from its log, so that only the job model differs.
    header = json.loads(next((live / d / "events.jsonl").open() for d in
                             sorted(p.name for p in live.iterdir())
                             if (live / d / "events.jsonl").exists()).readline())
    spec["restart_delay"] = header["restart_delay"]
    spec["tiresias_threshold"] = str(header["tiresias_threshold"])
    trace = TRACES / f"{spec['workload']}.csv"  # an older tree may not ship the trace
    workload = load_workload(str(trace) if trace.exists() else spec["workload"], set(JOB_TYPES))
    profiles = load_profiles(profiles_dir)
    args = argparse.Namespace(**spec)
    world = world_of(args, profiles, costs, apps={j.application for j in workload.jobs})
    settings = run_settings(args, world, workload, show_progress=False)
    apps = {j.name: j.application for j in workload.jobs}
    truth = world.profiles
    configs = {a: {(p.workers, p.micro) for p in t.steps} for a, t in costs.types.items()}
    names = [d.name for d in sorted(live.iterdir()) if (d / "events.jsonl").exists()
             and (d / "jobs").is_dir()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            speed = observed_speed(live / name, truth, apps, configs)
            replay = ReplayPolicy.from_log(live / name / "events.jsonl")
            at_speed = World.build(profiles, world.cluster,
                                   costs=costs.scaled(speed, colocation=False))
            simulate_policy(at_speed, workload, name, settings, Path(tmp) / name, replay=replay)
        result = compare_dirs(tmp, live)
        for p in result.policies:
            rows.append({"run": str(live), "policy": p.policy, "jobs": p.matched,
                         "mean_jct_err": p.mean_jct_err, "mean_abs_err": p.mean_abs_err,
                         "max_abs_err": p.max_abs_err})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="live --out folders")
    ap.add_argument("--costs", required=True, type=Path,
                    help="calibration to rescale (each run's calibration.json if 'own')")
    ap.add_argument("--profiles", default="profiles")
    args = ap.parse_args()
    rows = []
    for live in args.runs:
        costs_path = live / "calibration.json" if str(args.costs) == "own" else args.costs
        rows.extend(replay_errors(live, LiveCosts.load(costs_path), args.profiles))
    for r in rows:
        sys.stdout.write(f"{r['run']:28s} {r['policy']:8s} jobs {r['jobs']:2d}  mean-JCT err "
                         f"{r['mean_jct_err']:+.1%}  mean |err| {r['mean_abs_err']:.1%}  "
                         f"max |err| {r['max_abs_err']:.1%}\n")
    if rows:
        sys.stdout.write(f"median over runs: mean |err| "
                         f"{statistics.median(r['mean_abs_err'] for r in rows):.1%}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
