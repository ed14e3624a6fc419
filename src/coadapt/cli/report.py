"""``coadapt report``: recompute metrics, table and plots from event logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="metrics, comparison table and plots from existing event logs",
        description="Read OUT/<policy>/events.jsonl for every policy folder under OUT (as "
        "written by 'simulate' or 'live'), recompute all metrics from the logs alone, and "
        "write OUT/comparison.csv, per-run summary.json and plots.")
    p.add_argument("out", help="results folder holding <policy>/events.jsonl")
    p.add_argument("--no-plots", action="store_true", help="skip the seaborn figures")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from coadapt.eventlog import read_events
    from coadapt.metrics import job_table, summarize
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table

    out = Path(args.out)
    runs = sorted(p.parent for p in out.glob("*/events.jsonl"))
    if not runs:
        sys.stderr.write(f"coadapt report: error: {out}: no <policy>/events.jsonl below it; "
                         "run 'coadapt simulate --out DIR' first\n")
        return 2
    summaries = []
    for d in runs:
        try:
            events = list(read_events(d / "events.jsonl"))
        except ValueError as exc:
            sys.stderr.write(f"coadapt report: error: {exc}\n")
            return 2
        s = summarize(events)
        s["policy"] = s.get("policy") or d.name
        job_table(events).write_csv(d / "jobs.csv")
        (d / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
        summaries.append(s)
    write_comparison(summaries, out, plots=not args.no_plots)
    sys.stdout.write(format_table(summaries, f"{out}") + "\n")
    return 0
