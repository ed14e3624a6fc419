"""``coadapt compare``: simulated against live, per job and per policy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coadapt.cli.errors import fail

DESCRIPTION = """\
Join SIM/<policy>/events.jsonl with LIVE/<policy>/events.jsonl by job name for
every policy present in both, and report how far the simulated JCTs are from
the live ones: per-job relative error (sim - live) / live, its mean, median, p90
and bias, mean/median-JCT and makespan errors, and whether the policies rank the
same by mean JCT.

The runs must agree on the workload and the settings in their log headers
(cluster, network, interval, seed, restart_delay, start_node,
tiresias_threshold, p, observation_noise): otherwise it exits 2 naming the
field and both values. The simulated side's header says what it is, and every
output names that kind: prediction (simulated before the run, calibrated),
sim-measured (re-simulated at the run's measured speed), replay (the live
decisions replayed) or simulation (plain).

Writes sim_vs_live.csv (per job), sim_vs_live_summary.csv (per policy),
sim_vs_live.json and sim_vs_live.png to --out, by default a new folder beside
the live one, LIVE/../compare-<kind>-<live name>; never into the live folder
unless --into-live (LIVE/compare/<kind>/, where 'coadapt live' writes).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="simulated vs live job completion times, per job and per policy",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  coadapt compare --sim out/live/prediction --live out/live\n"
        "  coadapt compare --sim out/sim --live out/live --out out/sim-vs-live\n")
    p.add_argument("--sim", required=True, metavar="DIR",
                   help="results of 'coadapt simulate --out DIR' (or a live run's "
                   "prediction/, sim-measured/ or replay/ folder)")
    p.add_argument("--live", required=True, metavar="DIR",
                   help="results of the live run of the same workload and settings")
    p.add_argument("--out", metavar="DIR", help="where to write the comparison (default: "
                   "LIVE/../compare-<kind>-<live name>; inside LIVE only with --into-live)")
    p.add_argument("--force", action="store_true",
                   help="write into --out even if it holds other files (an earlier comparison "
                   "there is simply rewritten)")
    p.add_argument("--into-live", action="store_true",
                   help="write into the live folder, LIVE/compare/<kind>/ unless --out says "
                   "where in it")
    p.add_argument("--no-plots", action="store_true", help="skip the seaborn figure")
    p.set_defaults(func=run)



def output_dir(live: Path, kind: str, out: str | None, into_live: bool) -> Path:
    """Where the comparison goes; ValueError if that is inside the live run's
    folder without ``into_live`` (its files are the run's record)."""
    live_abs = live.resolve()
    if out is None:
        return live / "compare" / kind if into_live else \
            live_abs.parent / f"compare-{kind}-{live_abs.name}"
    target = Path(out)
    if not into_live and target.resolve().is_relative_to(live_abs):
        raise ValueError(f"--out {target}: inside the live folder {live}; nothing was written. "
                         "Pass --into-live to write there, or leave --out out for a new folder "
                         f"beside it ({live_abs.parent / f'compare-{kind}-{live_abs.name}'})")
    return target


def run(args: argparse.Namespace) -> int:
    from coadapt.report.simlive import CompareError, compare_dirs
    from coadapt.report.simlive_view import format_comparison, write_outputs
    from coadapt.util.lock import own_folder
    from coadapt.util.outdir import check_out_path, held_results

    try:
        result = compare_dirs(args.sim, args.live)
        out = output_dir(Path(args.live), result.kind, args.out, args.into_live)
        check_out_path(out)
    except (CompareError, ValueError) as exc:
        return fail("compare", str(exc))
    try:
        with own_folder(out, "compare"):  # two comparisons into one folder: one is refused
            stray = [n for n in held_results(out) if not n.startswith("sim_vs_live")]
            if stray and not args.force:
                raise ValueError(f"--out {out}: holds other files ({', '.join(stray[:4])}); "
                                 "nothing was changed: add --force or choose another --out")
            write_outputs(result, out, plots=not args.no_plots)
    except ValueError as exc:
        return fail("compare", str(exc))
    sys.stdout.write(format_comparison(result) + "\n")
    sys.stdout.write(f"{result.kind} vs live: results in {out}/\n")
    return 0
