"""``OUT/report.md`` of a simulate or live folder, rebuilt from its logs alone.

A reader who opens only this file learns what ran (settings and the machine
calibration from the logs' headers), what came out (the table, its units
and legend: ``report.table``), what it looks like (``report.figures``) and
how far to trust it (caveats: simulated or live, one sample, another
machine's calibration, unfinished jobs, modeled speeds). In a live folder
the prediction, simulated before the run, sits beside the live results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from coadapt.report.runlog import (
    RunLog,
    Settings,
    is_live,
    predictions,
    require_runs,
    settings_of,
    unfinished_runs,
)
from coadapt.report.simlive_jobs import compare_policy
from coadapt.report.table import markdown_grid, markdown_table, run_table, samples_line
from coadapt.util.atomic import atomic_write_bytes

REPORT_FILE = "report.md"
FIGURES_DIR = "figures"
INFORMATIVE_N = 2.0  # below this mean N a job's fair share is over half the cluster


def write_run_report(out: Path, *, baseline: str = "fixed", plots: bool = True) -> Path:
    """Write ``out/report.md`` (and, with ``plots``, its figures in
    ``out/figures/``) from ``out/<policy>/events.jsonl`` alone; returns its
    path. ReportError (a ValueError) when ``out`` holds no readable log."""
    out = Path(out)
    runs = require_runs(out, baseline)
    live = is_live(out, runs)
    predicted = predictions(out, baseline) if live else []
    unit = run_table([r.summary for r in runs], baseline).unit
    figs = []
    if plots:
        from coadapt.report.figures import write_figures  # matplotlib only when drawing

        figs = write_figures(runs, out / FIGURES_DIR, "LIVE" if live else "SIMULATED", unit,
                             predicted)
    text = run_report(runs, baseline, live=live, predicted=predicted,
                      unfinished=unfinished_runs(out, runs),
                      figures=[(f.caption, f.path.relative_to(out).as_posix()) for f in figs])
    path = out / REPORT_FILE
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


def run_report(runs: Sequence[RunLog], baseline: str, *, live: bool = False,
               predicted: Sequence[RunLog] = (), unfinished: Sequence[str] = (),
               figures: Sequence[tuple[str, str]] = ()) -> str:
    """The report's markdown; ``figures`` as (caption, path relative to the
    report); ``unfinished`` names the policies the run did not complete."""
    s = settings_of(list(runs))
    summaries = [r.summary for r in runs]
    first = runs[0].header if runs else {}
    label = "LIVE" if live else "SIMULATED"
    jobs = summaries[0].get("jobs", "?")
    what = (f"{first.get('workload', '?')} on {first.get('cluster', '?')}, "
            f"{jobs} job{'' if jobs == 1 else 's'}, {len(runs)} "
            f"polic{'y' if len(runs) == 1 else 'ies'}")
    lines = [f"# coadapt run report ({label}): {what}", "", _provenance(live, first), "",
             "## Results", "", *markdown_table(summaries, baseline), "",
             samples_line(s.seed, simulated=not live) + "."]
    if unfinished:
        lines += ["", f"**Unfinished:** {', '.join(unfinished)}. The run stopped before these "
                  "ended: a row shown for one is partial. Finish them with the command's "
                  "--resume."]
    if predicted:
        lines += ["", "## Predicted beside live", "", *_prediction(runs, predicted)]
    if figures:
        lines += ["", "## Figures", ""]
        for cap, rel in figures:
            lines += [f"### {cap}", "", f"![{cap}]({rel})", ""]
    lines += ["", "## Settings", "", "From the event logs' headers.", "",
              *[f"- {k}: {v}" for k, v in s.items]]
    lines += ["", "## Caveats", "", *[f"- {c}" for c in _caveats(runs, s, live, predicted)]]
    return "\n".join(lines).rstrip() + "\n"


def _provenance(live: bool, header: dict) -> str:
    if live:
        return (f"**LIVE**: measured with real training processes on host "
                f"{header.get('host', '?')} (cores {header.get('cores', '?')}). The "
                "prediction beside it is SIMULATED, written before the run.")
    return ("**SIMULATED**: every number and figure here comes from the SimPy simulator "
            "replaying the workload on the job types' measured profiles (and the machine "
            "calibration below); nothing here was measured on a cluster.")


def _minutes(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v / 60:.2f}"


def _prediction(runs: Sequence[RunLog], predicted: Sequence[RunLog]) -> list[str]:
    """Per policy: predicted and live mean JCT over the jobs finished on both
    sides, the error and the per-job spread."""
    pred = {r.policy: r for r in predicted}
    rows = []
    for r in runs:
        if r.policy not in pred:
            rows.append([r.policy, "-", "-", "-", "-", "no prediction"])
            continue
        c, _ = compare_policy(r.policy, pred[r.policy].events, r.events)
        err = "-" if c.mean_jct_err is None else f"{c.mean_jct_err:+.0%}"
        per = "-" if c.median_abs_err is None else f"{c.median_abs_err:.0%}"
        rows.append([r.policy, _minutes(c.mean_jct_sim), _minutes(c.mean_jct_live), err, per,
                     f"{c.matched}" + (f" ({c.unmatched} unmatched)" if c.unmatched else "")])
    return ["JCT in minutes, over the jobs that finished both in the prediction and live. "
            "error = predicted / live - 1 (positive: the simulator was pessimistic).", "",
            markdown_grid(["policy", "predicted mean JCT", "live mean JCT", "error",
                           "median per-job |error|", "jobs compared"], rows), "",
            "The judge's fuller comparison (re-simulated at the measured speed, replayed "
            "decisions, drift) is in `compare/`."]


def _caveats(runs: Sequence[RunLog], s: Settings, live: bool,
             predicted: Sequence[RunLog]) -> list[str]:
    out = []
    if live:
        out.append("Live: real processes on one machine (emulated nodes, if any, share its "
                   "cores); timings carry the machine's noise.")
    else:
        out.append("Simulated: job speeds come from measured profiles and the calibration; a "
                   "live run (`coadapt live`) measures what the simulator predicts.")
    which = f"seed {s.seed}" if s.seed is not None else "one seed"
    out.append(f"One sample ({which}): " + (
        "one live run; run it again to see how much its timings vary." if live else
        "differences of a few percent between policies may be the workload draw's; "
        "`coadapt experiment --seeds N` gives means with 95% CIs."))
    cal = s.calibration
    if not cal.present:
        out.append(f"Calibration: {cal.line}.")
    elif cal.other:
        whose = "the shipped reference machine's" if cal.reference else "another machine's"
        out.append(f"Calibration: {whose} ({cal.source}): "
                   f"{'predicted' if live else 'absolute'} times describe that machine, not "
                   "this one (`coadapt calibrate --quick`, then `--calibration this`).")
    short = [r.policy for r in runs if (r.summary.get("completed") or 0)
             < (r.summary.get("jobs") or 0)]
    if short:
        out.append(f"Not every job completed under {', '.join(short)}: their JCTs and rho "
                   "cover the completed jobs only.")
    n = [r.summary.get("n_iso_mean") for r in runs]
    n = [v for v in n if v is not None and math.isfinite(v)]
    if n and float(np.mean(n)) < INFORMATIVE_N:
        out.append(f"The workload is light (mean N = {np.mean(n):.2f} jobs in the yardstick's "
                   "schedule): a job's fair share is most of the cluster, so rho here "
                   "measures how well a policy runs a job more than how it shares.")
    modeled = [r.breakdown.get("modeled_frac") for r in runs] if not live else []
    modeled = [v for v in modeled if v is not None]
    if modeled and max(modeled) > 0.01:
        span = (f"{min(modeled):.0%} to {max(modeled):.0%}" if max(modeled) - min(modeled) > 0.01
                else f"{max(modeled):.0%}")
        out.append(f"{span} of slot-time (by policy) ran on placements whose speed was "
                   "modeled, not measured: across nodes (the declared network model) or "
                   "beyond the profiled sizes.")
    if live and not predicted:
        out.append("No prediction in this folder (no profiles, or --target/--eval-every "
                   "changed the jobs): nothing to set the live results beside.")
    return out
