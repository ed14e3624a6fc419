"""The comparison table of one run, for the terminal and for report.md.

One table model (``run_table``) rendered twice, so the screen and the report
never disagree: policies in the fixed order with the baseline first
(``report.order``), a ratio column to the baseline, one time unit for the
whole table stated once above it, a one-line legend per column under it, and
a line saying how many samples it rests on (a single seed is one sample, not
a mean). Summaries keep seconds; only the table converts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coadapt.report.order import ordered_policies

Summary = dict[str, Any]

RHO = ("a job's slowdown JCT / T_iso; T_iso: its time alone on a fair share (slots / N) at "
       "its best static configuration")
LEGEND: dict[str, tuple[tuple[str, str], ...]] = {
    "done": (("done", "jobs completed / jobs in the workload"),),
    "jct": (("JCT", "submission to completion, completed jobs only (mean, median, 99th "
                    "percentile)"),),
    "makespan": (("makespan", "first submission to last completion"),),
    "vs": (("vs {b}", "mean JCT / {b}'s mean JCT (below 1: faster than {b})"),),
    "util": (("util", "share of the cluster's slots allocated, over the makespan"),),
    "max rho": (("rho", RHO), ("max rho", "the worst job's rho")),
    "p99 rho": (("rho", RHO), ("p99 rho", "99th percentile of the jobs' rho")),
    "rho>1.1": (("rho>1.1", "share of jobs slowed more than 10% past T_iso"),),
    "Jain": (("Jain", "Jain's index over rho, (sum rho)^2 / (n sum rho^2): 1 = all slowed "
                      "alike, 1/n = one job bears it all"),),
    "decide ms": (("decide ms", "median wall-clock milliseconds per scheduling decision"),),
    "wall s": (("wall s", "wall-clock seconds of the run"),),
}


def legend_of(keys: Sequence[str], baseline: str = "fixed") -> list[tuple[str, str]]:
    """The legend pairs of ``keys`` (LEGEND's), once each, the baseline named."""
    seen: dict[str, str] = {}
    for k in keys:
        for label, text in LEGEND[k]:
            seen.setdefault(label.format(b=baseline), text.format(b=baseline))
    return list(seen.items())


@dataclass(frozen=True)
class Column:
    """One column: its header, the summary key it shows, its format, whether
    it is a time (shown in the table's unit) and its legend key."""

    label: str
    key: str
    fmt: str = "{:.2f}"
    time: bool = False
    legend: str | None = None


COLUMNS = (
    Column("policy", "policy", "{}"),
    Column("done", "done", "{}", legend="done"),
    Column("mean JCT", "avg_jct", time=True, legend="jct"),
    Column("p50 JCT", "p50_jct", time=True),
    Column("p99 JCT", "p99_jct", time=True),
    Column("makespan", "makespan", time=True, legend="makespan"),
    Column("vs {b}", "vs", legend="vs"),
    Column("util", "utilization", legend="util"),
    Column("max rho", "max_rho", legend="max rho"),
    Column("rho>1.1", "unfair_frac", legend="rho>1.1"),
    Column("Jain", "jain_rho", "{:.3f}", legend="Jain"),
    Column("decide ms", "decision_ms_median", legend="decide ms"),
    Column("wall s", "wall_s", "{:.1f}", legend="wall s"),
)


@dataclass(frozen=True)
class Unit:
    """The one time unit of a table."""

    short: str
    word: str
    seconds: float


MINUTES, HOURS = Unit("min", "minutes", 60.0), Unit("h", "hours", 3600.0)


def time_unit(spans_s: Sequence[float | None]) -> Unit:
    """Hours when the longest span reaches 4 h (the Pollux study's day-long
    runs), minutes otherwise (CPU-sized runs)."""
    return HOURS if max((s or 0.0 for s in spans_s), default=0.0) >= 4 * 3600 else MINUTES


@dataclass
class RunTable:
    """The cells of the table and what to say around it."""

    header: list[str]
    rows: list[list[str]]
    unit: Unit
    legend: list[tuple[str, str]]
    notes: list[str] = field(default_factory=list)


def _finite(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and not math.isfinite(v))


def _cell(col: Column, row: Summary, unit: Unit) -> str:
    if col.key == "done":
        return f"{row.get('completed', 0)}/{row.get('jobs', '?')}"
    v = row.get(col.key)
    if not _finite(v):
        return "-"
    return col.fmt.format(v / unit.seconds if col.time else v)


def _with_ratio(rows: list[Summary], baseline: str) -> list[Summary]:
    base = next((r for r in rows if r.get("policy") == baseline), None)
    b = base.get("avg_jct") if base else None
    return [{**r, "vs": r["avg_jct"] / b if _finite(b) and b and _finite(r.get("avg_jct"))
             else None} for r in rows]


def run_table(summaries: Sequence[Summary], baseline: str = "fixed") -> RunTable:
    """The table of ``summaries`` (one per policy, as ``metrics.summarize``
    returns them): ordered with ``baseline`` first; the ratio column only when
    the baseline ran (a note says so otherwise)."""
    by = {str(s.get("policy")): s for s in summaries}
    rows = [by[p] for p in ordered_policies(by, baseline)]
    unit = time_unit([r.get("makespan") for r in rows])
    notes = []
    cols = list(COLUMNS)
    if baseline not in by:
        cols = [c for c in cols if c.key != "vs"]
        notes.append(f"no 'vs {baseline}' column: {baseline} did not run "
                     "(--baseline POLICY names another)")
    else:
        rows = _with_ratio(rows, baseline)
        if not _finite(by[baseline].get("avg_jct")):
            notes.append(f"{baseline} completed no job: no ratio to it")
    short = [r["policy"] for r in rows if (r.get("completed") or 0) < (r.get("jobs") or 0)]
    if short:
        notes.append(f"{', '.join(map(str, short))}: completed fewer jobs than the workload "
                     "holds; their JCTs cover the completed jobs only")
    for r in rows:
        if r.get("horizon_reached") or r.get("failed"):
            notes.append(f"{r['policy']}: {r.get('failed') or 0} jobs failed"
                         f"{' (the run passed its --horizon)' if r.get('horizon_reached') else ''}")
        if r.get("adjusted_requests"):
            notes.append(f"{r['policy']}: {r['adjusted_requests']} requests adjusted to what one "
                         "job can hold on this cluster (see the submit events)")
    header = [c.label.format(b=baseline) for c in cols]
    cells = [[_cell(c, r, unit) for c in cols] for r in rows]
    legend = legend_of([c.legend for c in cols if c.legend], baseline)
    return RunTable(header, cells, unit, legend, notes)


def units_line(table: RunTable) -> str:
    return f"JCT and makespan in {table.unit.word}"


def samples_line(seed: int | None, simulated: bool = True) -> str:
    """How many samples a single run's table rests on: one."""
    which = f"seed {seed}" if seed is not None else "one seed"
    if simulated:
        return (f"one sample ({which}); for means with 95% CIs run "
                "`coadapt experiment --seeds N`")
    return f"one sample ({which}): one live run; repeat it to see its spread"


def legend_lines(pairs: Sequence[tuple[str, str]], indent: str = "  ") -> list[str]:
    """'label  meaning' lines, labels padded to one width."""
    w = max((len(k) for k, _ in pairs), default=0)
    return [f"{indent}{k.ljust(w)}  {v}" for k, v in pairs]


def text_grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Fixed-width grid: first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                         for i, (v, w) in enumerate(zip(r, widths, strict=True)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def format_table(summaries: Sequence[Summary], title: str = "", *, baseline: str = "fixed",
                 calibration: str | None = None, seed: int | None = None,
                 legend: bool = True) -> str:
    """The terminal table: title (SIMULATED added when the runs were and the
    title does not say it), the calibration line, units and samples, the grid,
    then the legend and notes."""
    simulated = any(s.get("simulated") for s in summaries)
    if simulated and "SIMULATED" not in title:
        title = f"SIMULATED: {title}" if title else "SIMULATED"
    t = run_table(summaries, baseline)
    out = [title] if title else []
    if calibration:  # world.calibration.calibration_line says "calibration: ..." itself
        out.append(calibration if calibration.startswith("calibration") else
                   f"calibration: {calibration}")
    out.append(f"{units_line(t)}; {samples_line(seed, simulated)}")
    out.append(text_grid(t.header, t.rows))
    if legend:
        out += legend_lines(t.legend)
    out += [f"note: {n}" for n in t.notes]
    return "\n".join(out)


def markdown_grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table ('|' escaped); numbers right-aligned."""
    def esc(v: str) -> str:
        return v.replace("|", "\\|")

    lines = ["| " + " | ".join(map(esc, header)) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return "\n".join(lines)


def markdown_table(summaries: Sequence[Summary], baseline: str = "fixed") -> list[str]:
    """report.md's lines for the table: units, the grid, the legend as a list, notes."""
    t = run_table(summaries, baseline)
    return [f"{units_line(t)}.", "", markdown_grid(t.header, t.rows), "",
            *[f"- **{k}**: {v}" for k, v in t.legend],
            *([""] + [f"Note: {n}." for n in t.notes] if t.notes else [])]
