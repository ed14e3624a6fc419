"""Fidelity and speed against the Pollux paper's simulator.

Runs workload-{1..8} x {tiresias, optimus-oracle, pollux} on 16x4 slots under
the Pollux study's options (``--preset osdi21``: 60 s rounds, 30 s restarts, new
jobs on one slot, 16 slot-hour Tiresias threshold) with the published GPU profiles, and prints our mean JCT
next to the reference simulator's, per workload, with wall times. All numbers
are SIMULATED.

    .venv/bin/python benchmarks/reference_fidelity.py [--ref ../shared/reference/adaptdl]
        [--jobs 2] [--workloads 1-8] [--out out/bench] [--load-dir workloads-2.0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Mean JCT (s) printed by the reference simulator on workloads/workload-{1..8}.csv
# (from the coadapt issue tracker; Pollux only has the published 8-workload mean).
REFERENCE = {
    "tiresias": [2473.7, 5145.0, 3876.3, 3280.3, 3501.0, 3469.7, 5479.9, 5079.7],
    "optimus-oracle": [4087.1, 6913.9, 3944.0, 5967.8, 5656.2, 5301.9, 7290.9, 6293.8],
}
POLLUX_REFERENCE_MEAN = 2751.0
POLICIES = ("tiresias", "optimus-oracle", "pollux")

_PROFILES = None


def _run(task: tuple[str, str, str, str]) -> dict:
    global _PROFILES
    ref, wl_path, policy, out = task
    from dataclasses import replace

    from coadapt.runs.options import parse_options, settings, world_of
    from coadapt.runs.simulate import simulate_policy
    from coadapt.world.profiles.adaptdl import load_adaptdl
    from coadapt.world.workload import load_workload

    if _PROFILES is None:
        _PROFILES = load_adaptdl(ref)
    wl = load_workload(wl_path, set(_PROFILES))
    # the command line the README shows: coadapt simulate --preset osdi21 --cluster 16x4
    options = parse_options(["--preset", "osdi21", "--cluster", "16x4"])
    world = world_of(options, _PROFILES, None)
    run = replace(settings(options, world, wl, show_progress=False), fairness=False)
    t0, c0 = time.perf_counter(), time.process_time()
    s = simulate_policy(world, wl, policy, run, Path(out) / wl.name / policy)
    s["run_s"] = time.perf_counter() - t0
    s["cpu_s"] = time.process_time() - c0
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default="../shared/reference/adaptdl")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--workloads", default="1-8")
    ap.add_argument("--load-dir", default="workloads",
                    help="workload folder under --ref (workloads-0.5/1.5/2.0 for other loads "
                    "if present)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--out", default="out/bench")
    args = ap.parse_args()
    ref = Path(args.ref)
    if not (ref / args.load_dir).is_dir():
        sys.stderr.write(f"{ref / args.load_dir}: not found; pass --ref PATH\n")
        return 2
    lo, _, hi = args.workloads.partition("-")
    ids = list(range(int(lo), int(hi or lo) + 1))
    policies = args.policies.split(",")
    cost = {"pollux": 0, "optimus-oracle": 1}  # the longest runs first: no idle tail
    tasks = [(str(ref), str(ref / args.load_dir / f"workload-{i}.csv"), p, args.out)
             for p in sorted(policies, key=lambda p: cost.get(p, 2)) for i in ids]
    t0 = time.perf_counter()
    with mp.Pool(args.jobs) as pool:
        results = pool.map(_run, tasks, chunksize=1)
    wall = time.perf_counter() - t0
    by = {(r["workload"], r["policy"]): r for r in results}
    reference = REFERENCE if args.load_dir == "workloads" else {}
    print(f"SIMULATED mean JCT (s), ours vs reference simulator ({args.load_dir}, 16x4, "
          "--preset osdi21: 60 s rounds, 30 s restart, new jobs on one slot, Tiresias 57600)")
    head = f"{'workload':<12}" + "".join(f"{p:>26}" for p in policies)
    print(head)
    worst = {p: 0.0 for p in policies}
    for i in ids:
        name = f"workload-{i}"
        row = f"{name:<12}"
        for p in policies:
            r = by[(name, p)]
            ours = r["avg_jct"]
            if p in reference:
                ratio = ours / reference[p][i - 1]
                worst[p] = max(worst[p], abs(ratio - 1))
                row += f"{ours:>9.0f} / {reference[p][i - 1]:>6.0f} ({ratio:5.3f})"
            else:
                row += f"{ours:>9.0f} {'':>16}"
        print(row)
    means = {p: statistics.mean(by[(f'workload-{i}', p)]['avg_jct'] for i in ids)
             for p in policies}
    print("mean        " + "".join(f"{means[p]:>26.0f}" for p in policies))
    if "pollux" in means and args.load_dir == "workloads" and len(ids) == 8:
        print(f"pollux mean / reference {POLLUX_REFERENCE_MEAN:.0f} s = "
              f"{means['pollux'] / POLLUX_REFERENCE_MEAN:.3f}")
    for p in reference:
        if p in worst:
            print(f"{p}: largest deviation from reference {worst[p] * 100:.1f}%")
    if "pollux" in policies:
        better = all(by[(f"workload-{i}", "pollux")]["avg_jct"]
                     < min(by[(f"workload-{i}", q)]["avg_jct"] for q in policies if q != "pollux")
                     for i in ids)
        print(f"pollux below both baselines on every workload: {better}")
        dec = [by[(f"workload-{i}", "pollux")]["decision_ms_median"] for i in ids]
        print(f"pollux decision time, median of per-run medians: {statistics.median(dec):.2f} ms")
    runs = [r["run_s"] for r in results]
    cpu = [r["cpu_s"] for r in results]
    print(f"wall {wall:.1f} s for {len(results)} runs on {args.jobs} processes "
          f"(per run median {statistics.median(runs):.1f} s, max {max(runs):.1f} s)")
    print(f"CPU time {sum(cpu):.1f} s in all (per run median {statistics.median(cpu):.1f} s); "
          f"on {args.jobs} idle cores that is >= {sum(cpu) / args.jobs:.1f} s wall")
    for p in policies:
        pc = [r["cpu_s"] for r in results if r["policy"] == p]
        print(f"  {p:<15} CPU s per run: median {statistics.median(pc):.1f}, max {max(pc):.1f}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fidelity.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
