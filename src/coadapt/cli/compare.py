"""``coadapt compare``: simulated against live, per job and per policy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="simulated vs live job completion times, per job and per policy",
        description="Join SIM/<policy>/events.jsonl with LIVE/<policy>/events.jsonl by job "
        "name for every policy present in both, and report how far the simulated JCTs are "
        "from the live ones: per-job relative error (sim - live) / live, its mean, median, "
        "p90 and bias, mean/median-JCT and makespan errors, and whether the policies rank "
        "the same by mean JCT. Writes OUT/sim_vs_live.csv (per job), "
        "OUT/sim_vs_live_summary.csv (per policy), OUT/sim_vs_live.json and "
        "OUT/sim_vs_live.png. Both runs must be of the same workload.")
    p.add_argument("--sim", required=True, metavar="DIR",
                   help="results of 'coadapt simulate --out DIR'")
    p.add_argument("--live", required=True, metavar="DIR",
                   help="results of the live run of the same workload")
    p.add_argument("--out", metavar="DIR", help="where to write the comparison "
                   "(default: the --live folder)")
    p.add_argument("--no-plots", action="store_true", help="skip the seaborn figure")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coadapt.report.simlive import CompareError, compare_dirs
    from coadapt.report.simlive_view import format_comparison, write_outputs

    try:
        result = compare_dirs(args.sim, args.live)
    except CompareError as exc:
        sys.stderr.write(f"coadapt compare: error: {exc}\n")
        return 2
    write_outputs(result, Path(args.out or args.live), plots=not args.no_plots)
    sys.stdout.write(format_comparison(result) + "\n")
    return 0
