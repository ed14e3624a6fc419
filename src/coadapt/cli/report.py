"""``coadapt report``: rebuild a run folder's results and report.md from its event logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coadapt.cli.errors import fail

DESCRIPTION = """\
Rebuild everything a 'simulate' or 'live' folder shows from its event logs
alone (OUT/<policy>/events.jsonl; in a live folder also OUT/prediction/):
per policy jobs.csv and summary.json, OUT/comparison.csv, the figures in
OUT/figures/ and OUT/report.md (the table with its units and legend, the
settings and machine calibration from the logs' headers, the figures and the
caveats), then print the table. Nothing is simulated or run again; an older
folder gets today's report. Simulated numbers are labelled SIMULATED.
"""

EPILOG = """\
examples:
  coadapt simulate --out out/sim && coadapt report out/sim
  coadapt report out/sim --baseline pollux          # ratios against pollux instead of fixed
  coadapt report out/live --no-plots                # tables and report.md only, no figures
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild tables, figures and report.md from event logs",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="results folder holding <policy>/events.jsonl")
    p.add_argument("--baseline", default="fixed", metavar="POLICY",
                   help="the policy listed first and the ratio column divides by "
                   "(default: fixed)")
    p.add_argument("--no-plots", action="store_true", help="no figures in OUT/figures/")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coadapt.report.compare import rebuild_results
    from coadapt.report.markdown import write_run_report
    from coadapt.report.runlog import ReportError, require_runs, settings_of, unfinished_runs
    from coadapt.report.table import format_table

    out = Path(args.out)
    try:
        runs = require_runs(out, args.baseline)
        rebuild_results(out, runs)
        report = write_run_report(out, baseline=args.baseline, plots=not args.no_plots)
    except ReportError as exc:
        return fail("report", str(exc))
    settings = settings_of(runs)
    h = runs[0].header
    label = "SIMULATED" if all(r.simulated for r in runs) else "LIVE"
    title = f"{label}: {h.get('workload', '?')} on {h.get('cluster', '?')} (from {out})"
    sys.stdout.write(format_table([r.summary for r in runs], title, baseline=args.baseline,
                                  calibration=settings.calibration.line,
                                  seed=settings.seed) + "\n")
    sys.stdout.write(f"report: {report}\n")
    left = unfinished_runs(out, runs)
    if left:
        shown = any(not x.endswith("not shown)") for x in left)
        sys.stderr.write(f"coadapt report: note: unfinished: {', '.join(left)}"
                         + ("; a row shown for one is partial" if shown else "")
                         + "; finish with the run's command and --resume\n")
    return 0
